"""Small helpers for reporting: percentiles, RSS, versions."""

from __future__ import annotations

import platform
from importlib import metadata

import numpy as np
import psutil

PACKAGES = (
    "grpcio",
    "protobuf",
    "numpy",
    "numba",
    "usearch",
    "tantivy",
    "onnxruntime",
    "tokenizers",
    "msgspec",
    "bm25s",
)


def pct(samples: list[float], q: float) -> float:
    return float(np.percentile(np.array(samples), q)) if samples else float("nan")


def summary_ms(samples_s: list[float]) -> dict[str, float]:
    ms = [s * 1000 for s in samples_s]
    return {"p50_ms": pct(ms, 50), "p99_ms": pct(ms, 99), "min_ms": min(ms), "n": len(ms)}


def rss_mb(pid: int) -> dict[str, float]:
    """Current and peak resident set size of a process, in MiB, and the current one split into
    anonymous memory (the heap: what a leak grows) and mapped files (libraries, models and
    mmap'd index files: page cache the kernel may drop)."""
    p = psutil.Process(pid)
    fields = {"VmHWM:": "peak_rss_mb", "RssAnon:": "anon_mb", "RssFile:": "file_mb"}
    out = {"rss_mb": p.memory_info().rss / 2**20, "peak_rss_mb": 0.0}
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                name = line.split(maxsplit=1)[0] if line.strip() else ""
                if name in fields:
                    out[fields[name]] = int(line.split()[1]) / 1024
    except OSError:
        pass
    return out


def environment() -> dict[str, object]:
    versions: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": psutil.cpu_count(),
        "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
        "versions": versions,
    }
