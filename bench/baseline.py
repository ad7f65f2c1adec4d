"""The named baseline: a numpy brute-force scan plus BM25 from `bm25s`, fused the same way.

What a team without pocketd would write first. It runs in-process (no RPC), on the same data
and queries, in the same run as the server measurements.
"""

from __future__ import annotations

import time

import bm25s
import numpy as np
import numpy.typing as npt

from bench.data import Dataset
from bench.exact_scan import exact_topk


class BruteForceHybrid:
    """Exact cosine over every vector + bm25s over every text; 0.5/0.5 max-normalised fusion."""

    def __init__(self, data: Dataset) -> None:
        t0 = time.perf_counter()
        self.matrix = data.vectors
        self.bm25 = bm25s.BM25()
        self.bm25.index(
            bm25s.tokenize(data.texts, stopwords="en", show_progress=False), show_progress=False
        )
        self.build_seconds = time.perf_counter() - t0

    def vector_topk(
        self, q: npt.NDArray[np.float32], k: int, allowed: npt.NDArray[np.bool_] | None = None
    ) -> npt.NDArray[np.int64]:
        """The exact cosine top k, among the `allowed` rows if given."""
        return exact_topk(self.matrix, q, k, allowed)

    def search(self, q: npt.NDArray[np.float32], text: str, k: int, depth: int = 64) -> list[int]:
        sims = self.matrix @ q
        vidx = np.argpartition(-sims, depth)[:depth]
        docs, scores = self.bm25.retrieve(
            bm25s.tokenize([text], stopwords="en", show_progress=False),
            k=depth,
            show_progress=False,
        )
        fused: dict[int, float] = {}
        for i in vidx.tolist():
            fused[i] = 0.5 * max(float(sims[i]), 0.0)
        top = float(scores[0].max()) if scores.size and scores[0].max() > 0 else 1.0
        for i, s in zip(docs[0].tolist(), scores[0].tolist(), strict=True):
            fused[i] = fused.get(i, 0.0) + 0.5 * s / top
        return sorted(fused, key=lambda i: -fused[i])[:k]
