"""`python -m bench costs`: calibrate the cost units of `memory.pockets` on this machine.

One cost unit is one exact 384-d f16 dot product. The bench times, on the same clustered data:
- an exact scan of a pocket in usearch's exact mode (f16, as pockets are stored): the time of
  one unit;
- HNSW searches of pockets of 16k and 64k vectors at breadths 64 and 128, giving `hnsw_units`,
  the units per (log2 size × breadth);
- BM25 searches through the keyword index adapter over 20k documents, giving `bm25_units`, the
  units per posting read.

It prints the measured factors next to the configured ones; set them in `memory.pockets`.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from usearch.index import Index

from bench.data import make
from server.adapters.tantivy_index import TantivyKeywordIndex
from server.core.memory.model import Kind, MemoryFilter, Record
from server.core.memory.ports import KeywordDoc, KeywordQuery
from server.core.settings import PocketSettings


def per_call(fn: Callable[[int], object], calls: int) -> float:
    """Median seconds per call over five rounds."""
    rounds = []
    for _ in range(5):
        t0 = time.perf_counter()
        for i in range(calls):
            fn(i)
        rounds.append((time.perf_counter() - t0) / calls)
    return statistics.median(rounds)


def index_of(vectors: np.ndarray) -> Index:
    ix = Index(ndim=vectors.shape[1], metric="ip", dtype="f16", connectivity=16, expansion_add=64)
    ix.add(np.arange(len(vectors), dtype=np.uint64), vectors, threads=1)
    return ix


def run() -> dict[str, object]:
    data = make(64_000, queries=200)
    q = data.queries
    exact_ix = index_of(data.vectors[:8192])
    unit = per_call(lambda i: exact_ix.search(q[i % len(q)], 10, exact=True), 200) / 8192
    hnsw: list[float] = []
    for size in (16_000, 64_000):
        ix = index_of(data.vectors[:size])
        for breadth in (64, 128):
            ix.expansion_search = breadth  # type: ignore[misc]
            t = per_call(lambda i, ix=ix: ix.search(q[i % len(q)], 10), 200)  # type: ignore[misc]
            hnsw.append(t / unit / (math.log2(size) * breadth))
    with tempfile.TemporaryDirectory() as d:
        kw = TantivyKeywordIndex(Path(d), 50_000_000)
        kw.upsert(
            [
                KeywordDoc(
                    Record(memory_id=str(i), namespace="c", kind=Kind.FACT, text=t, key=i + 1), "p"
                )
                for i, t in enumerate(data.texts[:20_000])
            ]
        )
        kw.commit(1)
        queries = [
            KeywordQuery("c", data.query_texts[i], 128, MemoryFilter(), 0.0) for i in range(len(q))
        ]
        postings = statistics.mean(kw.search(x).postings for x in queries)
        t = per_call(lambda i: kw.search(queries[i % len(queries)]), 200)
        kw.close()
    configured = PocketSettings()
    return {
        "unit_ns": unit * 1e9,
        "hnsw_units": statistics.mean(hnsw),
        "bm25_units": t / unit / max(postings, 1.0),
        "configured": {"hnsw_units": configured.hnsw_units, "bm25_units": configured.bm25_units},
    }


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m bench costs", description=__doc__)
    p.add_argument("--json", type=Path, help="also write the figures here")
    ns = p.parse_args(argv)
    r = run()
    print(
        f"one cost unit (an exact 384-d f16 dot product): {r['unit_ns']:.1f} ns\n"
        f"hnsw_units: {r['hnsw_units']:.2f} per (log2 size x breadth)\n"
        f"bm25_units: {r['bm25_units']:.2f} per posting\n"
        f"configured: {r['configured']}"
    )
    if ns.json:
        ns.json.write_text(json.dumps(r, indent=2) + "\n")
    return 0
