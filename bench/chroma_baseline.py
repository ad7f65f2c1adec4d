"""In-process chromadb on the same vectors, for `bench memory` (run in `.venv-bench`).

chromadb is a baseline, not a dependency: `make bench-env` installs it into its own virtual
environment, and `bench.memory` runs this file there as a subprocess, handing it the vectors and
kinds as .npy files and reading the figures back as JSON. Only numpy and chromadb are imported.

Usage: python bench/chroma_baseline.py DIR K  (DIR holds vectors.npy, kinds.npy, queries.npy,
query_kinds.npy; the figures go to DIR/chroma.json)
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import chromadb
import numpy as np

BATCH = 4096


def percentiles(seconds: list[float]) -> dict[str, float]:
    ms = np.array(seconds) * 1000.0
    return {
        "p50_ms": float(np.percentile(ms, 50)),
        "p99_ms": float(np.percentile(ms, 99)),
        "mean_ms": float(ms.mean()),
    }


def main(argv: list[str]) -> int:
    root, k = Path(argv[1]), int(argv[2])
    vectors = np.load(root / "vectors.npy")
    kinds = np.load(root / "kinds.npy", allow_pickle=False)
    queries = np.load(root / "queries.npy")
    query_kinds = np.load(root / "query_kinds.npy", allow_pickle=False)
    client = chromadb.EphemeralClient()
    col = client.create_collection("bench", metadata={"hnsw:space": "cosine"})
    t0 = time.perf_counter()
    for start in range(0, len(vectors), BATCH):
        end = min(start + BATCH, len(vectors))
        col.add(
            ids=[str(i) for i in range(start, end)],
            embeddings=vectors[start:end],
            metadatas=[{"kind": str(kinds[i])} for i in range(start, end)],
        )
    build = time.perf_counter() - t0
    for q in queries[:20]:
        col.query(query_embeddings=[q], n_results=k)
    plain: list[float] = []
    filtered: list[float] = []
    for q, kind in zip(queries, query_kinds, strict=True):
        t0 = time.perf_counter()
        col.query(query_embeddings=[q], n_results=k)
        plain.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        col.query(query_embeddings=[q], n_results=k, where={"kind": str(kind)})
        filtered.append(time.perf_counter() - t0)
    out = {
        "version": chromadb.__version__,
        "build_seconds": build,
        "plain": percentiles(plain),
        "kind_filtered": percentiles(filtered),
    }
    (root / "chroma.json").write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
