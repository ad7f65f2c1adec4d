"""The cost model of a search, in cost units: one unit is one exact 384-d f16 dot product.

An exact scan costs one unit per vector. A coarse-to-fine scan costs `coarse_units` per int8 code
and one unit per reranked vector. An HNSW search visits about log2(n) layers' worth of
neighbours at its breadth, `hnsw_units` units per (log2 n × breadth); a BM25 search costs
`bm25_units` per posting it reads. The two factors are measured against an exact scan on the
same machine by `python -m bench costs` and set in `memory.pockets`. A cold pocket (the archive's
compressed segments, decompressed and scanned whole) costs `memory.lifecycle.cold.units_per_vector`
per vector: a price set high on purpose, which the router weighs before it plans one.
"""

from __future__ import annotations

import math

from server.core.memory.model import Tier
from server.core.settings import ColdSettings, MemorySettings, PocketSettings


class CostModel:
    """Prices and picks the search method of a pocket."""

    def __init__(
        self, settings: PocketSettings, breadth: int, cold: ColdSettings | None = None
    ) -> None:
        """`cold`: the cold tier's price (None: its defaults)."""
        self._s = settings
        self._breadth = breadth
        self._cold_units = (cold or ColdSettings()).units_per_vector

    @classmethod
    def from_settings(cls, memory: MemorySettings) -> CostModel:
        """The cost model of a server's memory settings."""
        return cls(memory.pockets, memory.hybrid_search.expansion_search, memory.lifecycle.cold)

    def method(self, tier: Tier, size: int) -> str:
        """`hot` (the hot tier's exact scan), `cold` (the archive's segments, scanned whole),
        `exact` or `coarse` (a warm pocket of at most `exact_max_rows`, scanned whole: see
        `scan`) or `hnsw`."""
        if tier == Tier.HOT:
            return "hot"
        if tier == Tier.COLD:
            return "cold"
        return self.scan(size) if size <= self._s.exact_max_rows else "hnsw"

    def scan(self, size: int, depth: int = 0) -> str:
        """How a warm pocket is scanned whole for `depth` results (0: not known yet):
        `coarse` from `coarse_min_rows` while its rerank still leaves it cheaper than the
        exact scan, else `exact`."""
        if size < self._s.coarse_min_rows:
            return "exact"
        return "coarse" if depth <= 0 or self.coarse(size, depth) < self.exact(size) else "exact"

    def exact(self, rows: int) -> float:
        return float(rows)

    def rerank(self, depth: int) -> int:
        """How many candidates a coarse scan reranks for `depth` results."""
        return self._s.coarse_rerank * depth

    def coarse(self, size: int, depth: int) -> float:
        return self._s.coarse_units * size + min(self.rerank(depth), size)

    def hnsw(self, size: int, depth: int, breadth: int = 0) -> float:
        """An HNSW search of `depth` candidates at `breadth` (0: the configured one)."""
        if size <= 0:
            return 0.0
        width = max(depth, breadth or self._breadth)
        return self._s.hnsw_units * math.log2(max(size, 2)) * width

    def of(self, method: str, size: int, depth: int) -> float:
        """The cost of searching a pocket of `size` vectors by `method` for `depth`."""
        if method == "hnsw":
            return self.hnsw(size, depth)
        if method == "cold":
            return self.cold(size)
        return self.coarse(size, depth) if method == "coarse" else self.exact(size)

    def cold(self, rows: int) -> float:
        """A scan of `rows` archived vectors (at any depth: every one is decompressed)."""
        return self._cold_units * rows

    def search(self, tier: Tier, size: int, depth: int) -> float:
        """The cost of searching a pocket of `size` vectors for `depth` candidates."""
        return self.of(self.method(tier, size), size, depth)

    def per_vector(self, tier: Tier, size: int) -> float:
        """The cost of one scanned vector: 1 for an exact scan, `coarse_units` for a coarse
        one, the cold price for an archived one; an HNSW distance costs the same dot product,
        plus the graph's overhead."""
        method = self.method(tier, size)
        if method == "hnsw":
            return self._s.hnsw_units
        if method == "cold":
            return self._cold_units
        return self._s.coarse_units if method == "coarse" else 1.0

    def bm25(self, postings: int) -> float:
        return self._s.bm25_units * postings
