"""`python -m bench coarse`: what the coarse stage of a coarse-to-fine scan costs and loses, by
pocket size, against the exact f16 scan and the HNSW graph (seed 003 §3.3).

For each pocket size, on the clustered data of `bench.data` (queries near a stored vector), one
partition of the real vector index adapter answers the same queries three ways, each for the
default depth (64):
- exact: usearch's exact scan of the stored f16 vectors (the reference: its top k is the truth);
- coarse: the int8 codes scanned by numba, then `coarse_rerank` × depth candidates reranked on the
  stored vectors (`UsearchVectorIndex.coarse_search`);
- hnsw: the graph, at the breadth the retriever gives one pocket of that size.
It reports recall@5 and recall@64 of coarse and hnsw against exact, and the median time of each.
`coarse_units` (the cost of one code against one exact dot product) is the coarse scan's time per
row over the exact scan's, at the largest size. `memory.pockets.coarse_min_rows` is the smallest
size from which coarse costs less than the exact scan (with no loss of recall).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from bench.costs import per_call
from bench.data import make
from bench.stats import environment
from server.adapters.usearch_index import UsearchIndexSet, UsearchVectorIndex
from server.core.settings import HybridSearchSettings, PocketSettings

DEPTH = 64


def log(msg: str) -> None:
    print(f"[coarse] {msg}", file=sys.stderr, flush=True)


def breadth(size: int, s: HybridSearchSettings) -> int:
    """The retriever's breadth for a plan's only HNSW pocket (`Retriever._breadth`)."""
    doublings = max(0.0, math.log2(size / s.expansion_base_rows))
    floor = s.min_expansion_search + s.expansion_per_doubling * doublings
    return max(math.ceil(floor), s.expansion_search)


def searcher(
    part: UsearchVectorIndex, qs: np.ndarray, how: str, width: int, rerank: int
) -> Callable[[int], object]:
    """The i-th query's search, one of three ways."""

    def call(i: int) -> object:
        q = qs[i % len(qs)]
        if how == "exact":
            return part.search(q, DEPTH, exact=True)
        if how == "coarse":
            return part.coarse_search(q, DEPTH, rerank * DEPTH)
        return part.search(q, DEPTH, expansion=width)

    return call


def run(sizes: list[int], queries: int, rerank: int) -> dict[str, object]:
    hs = HybridSearchSettings()
    data = make(max(sizes), queries=queries, seed=3)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for size in sizes:
            t0 = time.perf_counter()
            part = UsearchIndexSet(Path(tmp) / str(size), 384, "f16", 16, 64, 128).partition(
                "ns", "p", create=True
            )
            assert isinstance(part, UsearchVectorIndex)  # a warm pocket's
            part.add(np.arange(size, dtype=np.int64), data.vectors[:size])
            log(f"{size} vectors indexed in {time.perf_counter() - t0:.1f} s")
            qs = data.vectors[:size][np.arange(queries) * 7919 % size]  # near stored vectors
            noise = np.random.default_rng(size).normal(size=qs.shape).astype(np.float32)
            qs = qs + noise * (0.3 / np.sqrt(384))
            qs = (qs / np.linalg.norm(qs, axis=1, keepdims=True)).astype(np.float32)
            width = breadth(size, hs)
            part.coarse_search(qs[0], DEPTH, rerank * DEPTH)  # builds the codes
            r5: dict[str, list[float]] = {"coarse": [], "hnsw": []}
            r64: dict[str, list[float]] = {"coarse": [], "hnsw": []}
            for q in qs:
                truth, _ = part.search(q, DEPTH, exact=True)
                got = {
                    "coarse": part.coarse_search(q, DEPTH, rerank * DEPTH)[0],
                    "hnsw": part.search(q, DEPTH, expansion=width)[0],
                }
                for name, keys in got.items():
                    r5[name].append(len(set(keys[:5].tolist()) & set(truth[:5].tolist())) / 5)
                    r64[name].append(len(set(keys.tolist()) & set(truth.tolist())) / DEPTH)
            rows.append(
                {
                    "size": size,
                    **{
                        f"{how}_ms": 1e3 * per_call(searcher(part, qs, how, width, rerank), 50)
                        for how in ("exact", "coarse", "hnsw")
                    },
                    "hnsw_breadth": width,
                    "coarse_recall_at_5": float(np.mean(r5["coarse"])),
                    "coarse_recall_at_64": float(np.mean(r64["coarse"])),
                    "hnsw_recall_at_5": float(np.mean(r5["hnsw"])),
                    "hnsw_recall_at_64": float(np.mean(r64["hnsw"])),
                }
            )
    big = rows[-1]  # the rerank is counted in: an upper bound of the cost of one code
    units = big["coarse_ms"] / big["exact_ms"]  # type: ignore[operator]
    return {
        "environment": environment(),
        "rerank": rerank,
        "depth": DEPTH,
        "rows": rows,
        "measured_coarse_units_upper_bound": units,
        "configured": {
            "coarse_units": PocketSettings().coarse_units,
            "coarse_min_rows": PocketSettings().coarse_min_rows,
        },
    }


def report(r: dict[str, object]) -> str:
    out = [
        f"{'size':>7} {'exact ms':>9} {'coarse ms':>10} {'hnsw ms':>8} {'breadth':>8}"
        f" {'coarse R@5':>11} {'R@64':>6} {'hnsw R@5':>9} {'R@64':>6}"
    ]
    for x in r["rows"]:  # type: ignore[attr-defined]
        out.append(
            f"{x['size']:>7} {x['exact_ms']:>9.3f} {x['coarse_ms']:>10.3f} {x['hnsw_ms']:>8.3f}"
            f" {x['hnsw_breadth']:>8} {x['coarse_recall_at_5']:>11.3f}"
            f" {x['coarse_recall_at_64']:>6.3f} {x['hnsw_recall_at_5']:>9.3f}"
            f" {x['hnsw_recall_at_64']:>6.3f}"
        )
    out.append(
        f"coarse time over exact time at the largest size: "
        f"{r['measured_coarse_units_upper_bound']:.3f} (an upper bound of coarse_units);"
        f" configured {r['configured']}"  # type: ignore[index]
    )
    return "\n".join(out)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench coarse", description=__doc__)
    ap.add_argument(
        "--sizes", default="2048,4096,8192,16384,32768", help="pocket sizes, comma-separated"
    )
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--rerank", type=int, default=PocketSettings().coarse_rerank)
    ap.add_argument("--json", type=Path, help="also write the figures here")
    ns = ap.parse_args(argv)
    sizes = sorted(int(s) for s in ns.sizes.split(","))
    r = run(sizes, ns.queries, ns.rerank)
    print(report(r))
    if ns.json:
        ns.json.parent.mkdir(parents=True, exist_ok=True)
        ns.json.write_text(json.dumps(r, indent=2) + "\n")
    return 0
