"""The hot tier: the memories of stored tier hot, and every memory until the indexer has it.

A memory enters the moment its write is durable, so it can be recalled at once, before the
background indexer has put it into the warm HNSW and BM25 indexes. A memory of tier hot (a
session's recent raw turns) stays here, scanned exactly, until the writer moves it to warm; any
other memory leaves as soon as it is indexed. Unindexed memories never leave: they are only
findable here.

Each namespace keeps one contiguous float32 matrix of unit vectors, scanned with the compiled
exact-scan kernel. Memories not yet in the BM25 index are also matched by keyword here, by the
idf-weighted share of query terms they contain (in [0, 1], on the keyword channel's scale).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence

import numpy as np
import numpy.typing as npt

from kernels.scan import exact_topk
from server.core.clock import Clock
from server.core.memory.changes import Applied
from server.core.memory.model import Record, Tier, Vector, units
from server.core.memory.ports import F32, KeyArray, MaskFn


def hot_terms(analyze: Callable[[str], list[str]], rec: Record) -> list[str]:
    """The terms an unindexed row is matched by: its text's and its speaker's."""
    return analyze(rec.text) + analyze(rec.speaker) if rec.speaker else analyze(rec.text)


class _HotSet:
    """One namespace's rows. Removal swaps the last row into the hole, keeping rows contiguous."""

    def __init__(self, dim: int) -> None:
        self.n = 0
        self.mat = np.zeros((64, dim), dtype=np.float32)
        self.keys = np.zeros(64, dtype=np.int64)
        self.kinds = np.zeros(64, dtype=np.int8)
        self.born = np.zeros(64, dtype=np.float64)
        self.indexed = np.zeros(64, dtype=np.bool_)
        self.hot = np.zeros(64, dtype=np.bool_)
        self.revs = np.zeros(64, dtype=np.int64)
        self.terms: list[frozenset[str]] = []
        self.row: dict[int, int] = {}

    def _grow(self) -> None:
        cap = len(self.keys) * 2
        self.mat = np.concatenate([self.mat, np.zeros_like(self.mat)])[:cap]
        for name in ("keys", "kinds", "born", "indexed", "hot", "revs"):
            old = getattr(self, name)
            setattr(self, name, np.concatenate([old, np.zeros_like(old)]))

    def put(
        self,
        key: int,
        kind: int,
        vec: Vector,
        terms: frozenset[str],
        now: float,
        hot: bool,
        rev: int,
    ) -> None:
        i = self.row.get(key)
        if i is None:
            if self.n == len(self.keys):
                self._grow()
            i = self.n
            self.n += 1
            self.terms.append(terms)
            self.row[key] = i
        else:
            self.terms[i] = terms
        self.mat[i] = vec
        self.keys[i] = key
        self.kinds[i] = kind
        self.born[i] = now
        self.indexed[i] = False
        self.hot[i] = hot
        self.revs[i] = rev

    def drop(self, key: int) -> None:
        i = self.row.pop(key, None)
        if i is None:
            return
        last = self.n - 1
        if i != last:
            self.mat[i] = self.mat[last]
            self.keys[i] = self.keys[last]
            self.kinds[i] = self.kinds[last]
            self.born[i] = self.born[last]
            self.indexed[i] = self.indexed[last]
            self.hot[i] = self.hot[last]
            self.revs[i] = self.revs[last]
            self.terms[i] = self.terms[last]
            self.row[int(self.keys[i])] = i
        self.terms.pop()
        self.n = last


class MemoryHotTier:
    """Every namespace's hot set, behind one lock (scans are sub-millisecond)."""

    def __init__(self, dim: int, terms: Callable[[str], list[str]], clock: Clock) -> None:
        self._dim = dim
        self._terms = terms
        self._clock = clock
        self._sets: dict[str, _HotSet] = {}
        self._ns_of: dict[int, str] = {}
        self._pending = 0
        self._lock = threading.Lock()

    def put(
        self,
        namespace: str,
        key: int,
        kind: int,
        vec: Vector,
        terms: Iterable[str],
        now: float,
        hot: bool,
        rev: int = 0,
    ) -> None:
        """Add or replace a memory (`hot`: of stored tier hot) at revision `rev`; it counts as
        unindexed until `mark_indexed` reaches that revision."""
        with self._lock:
            hs = self._sets.get(namespace)
            if hs is None:
                hs = self._sets[namespace] = _HotSet(self._dim)
            i = hs.row.get(key)
            if i is None or hs.indexed[i]:
                self._pending += 1
            hs.put(key, kind, vec, frozenset(terms), now, hot, rev)
            self._ns_of[key] = namespace

    def follow(self, applied: Sequence[Applied]) -> None:
        """Follow committed revisions: a written record with a vector enters (unindexed, so
        readable at once), an erased one leaves."""
        now = self._clock.now()
        self.remove(a.key for a in applied if a.record is None)
        put = [a for a in applied if a.record is not None and a.vector is not None]
        if not put:
            return
        vecs = units(np.stack([a.vector for a in put if a.vector is not None]))
        for a, v in zip(put, vecs, strict=True):
            rec = a.record
            assert rec is not None
            hot = rec.tier == Tier.HOT
            terms = hot_terms(self._terms, rec)
            self.put(rec.namespace, a.key, int(rec.kind), v, terms, now, hot, a.rev)

    def remove(self, keys: Iterable[int]) -> None:
        with self._lock:
            for key in keys:
                ns = self._ns_of.pop(key, None)
                if ns is None:
                    continue
                hs = self._sets[ns]
                i = hs.row.get(key)
                if i is not None and not hs.indexed[i]:
                    self._pending -= 1
                hs.drop(key)

    def mark_indexed(self, rows: Iterable[tuple[int, int]]) -> None:
        """Mark (key, revision) pairs indexed. A row written again since that revision (an
        upsert, a merge, a tier move that the indexer has not read yet) stays unindexed."""
        with self._lock:
            for key, rev in rows:
                ns = self._ns_of.get(key)
                if ns is None:
                    continue
                hs = self._sets[ns]
                i = hs.row[key]
                if not hs.indexed[i] and hs.revs[i] <= rev:
                    hs.indexed[i] = True
                    self._pending -= 1

    def evict(self) -> int:
        """Drop the indexed rows that are not of tier hot; return how many."""
        dropped = 0
        with self._lock:
            for hs in self._sets.values():
                n = hs.n
                victims = hs.keys[:n][hs.indexed[:n] & ~hs.hot[:n]].tolist()
                for key in victims:
                    hs.drop(int(key))
                    self._ns_of.pop(int(key), None)
                dropped += len(victims)
        return dropped

    def pending(self) -> int:
        """Memories acknowledged but not yet indexed."""
        return self._pending

    def contains(self, key: int) -> bool:
        return key in self._ns_of

    def size(self) -> int:
        """Memories in the hot tier, every namespace's."""
        return len(self._ns_of)

    def count(self, namespace: str) -> int:
        hs = self._sets.get(namespace)
        return 0 if hs is None else hs.n

    def scan(self, namespace: str, query: Vector, k: int, mask_fn: MaskFn) -> tuple[KeyArray, F32]:
        """Exact top-k of the namespace's hot rows that pass `mask_fn`, by cosine."""
        with self._lock:
            hs = self._sets.get(namespace)
            if hs is None or hs.n == 0:
                return np.empty(0, np.int64), np.empty(0, np.float32)
            keys = hs.keys[: hs.n].copy()
            mask = mask_fn(keys)
            idx, sims = exact_topk(hs.mat[: hs.n], query, mask, k)
        return keys[idx], sims

    def vectors(self, namespace: str, keys: Sequence[int]) -> dict[int, Vector]:
        """The rows of `keys` that the namespace's hot set holds (their own vectors)."""
        with self._lock:
            hs = self._sets.get(namespace)
            if hs is None:
                return {}
            rows = [(k, i) for k in keys if (i := hs.row.get(k)) is not None]
            return {k: hs.mat[i].copy() for k, i in rows}

    def keyword(
        self, namespace: str, weights: dict[str, float], mask_fn: MaskFn
    ) -> tuple[KeyArray, F32]:
        """Unindexed rows that contain query terms, scored by the weighted share of the terms
        they contain (`weights`: term → idf)."""
        wanted = frozenset(weights)
        total = sum(weights.values())
        if not wanted or total <= 0:
            return np.empty(0, np.int64), np.empty(0, np.float32)
        with self._lock:
            hs = self._sets.get(namespace)
            if hs is None:
                return np.empty(0, np.int64), np.empty(0, np.float32)
            rows = [i for i in np.nonzero(~hs.indexed[: hs.n])[0] if hs.terms[i] & wanted]
            keys = hs.keys[rows].astype(np.int64)
            scores = np.array(
                [sum(weights[t] for t in hs.terms[i] & wanted) / total for i in rows],
                dtype=np.float32,
            )
        keep = mask_fn(keys)
        return keys[keep], scores[keep]

    def moments(
        self, namespace: str, pocket_of: npt.NDArray[np.int32], pocket: int
    ) -> tuple[npt.NDArray[np.float64], int]:
        """The sum and count of the vectors of the namespace's rows in `pocket` (`pocket_of`:
        the pocket of each key)."""
        with self._lock:
            hs = self._sets.get(namespace)
            if hs is None or hs.n == 0:
                return np.zeros(self._dim, np.float64), 0
            keys = hs.keys[: hs.n]
            inside = keys < len(pocket_of)
            sel = np.zeros(hs.n, dtype=np.bool_)
            sel[inside] = pocket_of[keys[inside]] == pocket
            return hs.mat[: hs.n][sel].astype(np.float64).sum(axis=0), int(sel.sum())

    def rows(self, namespace: str, kind: int) -> tuple[KeyArray, F32]:
        """Keys and unit vectors (copies) of the namespace's rows of one kind: the unindexed
        ones and those of tier hot, which no warm index holds (a near-duplicate probe needs an
        exact look at them)."""
        with self._lock:
            hs = self._sets.get(namespace)
            if hs is None:
                return np.empty(0, np.int64), np.empty((0, self._dim), np.float32)
            rows = np.nonzero(hs.kinds[: hs.n] == kind)[0]
            return hs.keys[rows].copy(), hs.mat[rows].copy()
