"""The vector indexes: one usearch HNSW index per warm pocket (namespace, pocket name), and one
cold archive partition per cold pocket (`server.adapters.cold_segments`: compressed segments,
scanned exactly), both behind the `VectorIndex` port and in one snapshot.

usearch's Python API has no filter callback, so filtering is done by partitioning (two pockets
never share an index), then by over-fetch or, for selective filters and small pockets, an exact
scan of the matching rows (see `server.core.query.retriever`). Vectors are unit length and the
metric is inner product, so similarity = 1 − distance = cosine. Each index also keeps the sum of
its vectors (in float64), so a pocket's centroid and radius cost nothing to read. A pocket
searched coarse to fine also keeps int8 codes of its vectors in memory (`CoarseCodes`), kept in
step with it while its size is in the coarse range.

Persistence: `save(rev)` writes every dirty index to a new file of that revision, then
atomically replaces `manifest.json`, which records the revision the files contain and each
index's file, vector sum and cap, and only then deletes the files it replaced: a crash at any
point leaves a manifest whose files and sums agree (a file no manifest names is deleted at
start). On start the indexer replays the record store from that revision, so a crash
between snapshots only costs catch-up time, never data. A manifest of an older layout (one index
per namespace and kind) is deleted with its files: the indexes are rebuilt from the record store.
A cold partition's entry names its segment, tail and tombstone files (in the cold directory), and
the files of that directory that the manifest does not name are deleted at start in the same way.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import secrets
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from usearch.index import Index

from kernels.coarse import coarse_topk, quantize
from server.adapters.cold_segments import ColdArchive, ColdArchiveError, ColdVectorIndex, is_cold
from server.adapters.durable import fsync_dir
from server.adapters.vector_cap import Cap
from server.core.memory.model import Vector
from server.core.memory.ports import KeyArray

log = logging.getLogger(__name__)
LAYOUT = 2
# Keys added per lock hold: about 3 ms of HNSW insertion on these machines, so a Recall waits
# at most that long behind the indexer.
ADD_CHUNK = 16
# One thread: usearch's concurrent add can leave a node linked by no other (unum-cloud/USearch
# #735), unreachable by any search; on two cores several threads were no faster anyway (A/B in
# the 60k-record ingest: 2957 vs 3073 records/s, within noise).
ADD_THREADS = 1
# Subtracted from a cap's floor: a vector stored in f16 differs from its f32 original by about
# 1e-3 in cosine, and a search's similarities are those of the stored vectors.
CAP_SLACK = 4e-3
GROW = 1.5  # the codes' growth factor


def _writable(x: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """A C-contiguous, writable float32 array: the one layout the kernels are compiled for (a
    read-only one would compile another version on the request path)."""
    out: npt.NDArray[np.float32] = np.require(x, np.float32, ["C", "W"])
    return out


class CoarseCodes:
    """The int8 codes of one pocket's vectors, kept beside its index for the coarse stage of a
    coarse-to-fine scan (`kernels.coarse`). Rows are packed: a removed key's row takes the last
    row, so a scan reads `len` rows with no holes. Called under the owning index's lock."""

    def __init__(self, dim: int) -> None:
        self._codes = np.zeros((0, dim), np.int8)
        self._inv = np.zeros(0, np.float32)
        self._keys = np.zeros(0, np.int64)
        self._row: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self._row)

    def upsert(self, keys: KeyArray, vectors: npt.NDArray[np.float32]) -> None:
        codes, inv = quantize(_writable(vectors))
        for i, k in enumerate(keys.tolist()):
            row = self._row.get(k)
            if row is None:
                row = len(self._row)
                self._reserve(row + 1)
                self._row[k] = row
                self._keys[row] = k
            self._codes[row] = codes[i]
            self._inv[row] = inv[i]

    def remove(self, keys: KeyArray) -> None:
        for k in keys.tolist():
            row = self._row.pop(k, None)
            if row is None:
                continue
            last = len(self._row)  # the last row, now one past the end
            if row != last:
                moved = int(self._keys[last])
                self._codes[row] = self._codes[last]
                self._inv[row] = self._inv[last]
                self._keys[row] = moved
                self._row[moved] = row

    def candidates(self, query: npt.NDArray[np.float32], count: int) -> KeyArray:
        """The keys of the `count` rows whose codes score best against `query`'s code."""
        n = len(self._row)
        if n == 0 or count <= 0:
            return np.empty(0, np.int64)
        if count >= n:  # every row: no need to rank them
            every: KeyArray = self._keys[:n].copy()
            return every
        code, _ = quantize(_writable(query.reshape(1, -1)))
        idx = coarse_topk(self._codes, self._inv, n, code[0], count)
        out: KeyArray = self._keys[idx]
        return out

    def _reserve(self, rows: int) -> None:
        if rows <= len(self._keys):
            return
        cap = max(rows, int(len(self._keys) * GROW) + 16)
        for name in ("_codes", "_inv", "_keys"):
            old = getattr(self, name)
            new = np.zeros((cap, *old.shape[1:]), old.dtype)
            new[: len(old)] = old
            setattr(self, name, new)


class UsearchVectorIndex:
    """One partition's HNSW index. A lock serialises mutation against search: usearch may
    reallocate while growing."""

    def __init__(
        self,
        index: Index,
        path: Path,
        total: npt.NDArray[np.float64] | None,
        cap: tuple[npt.NDArray[np.float64], float] | None = None,
        coarse_rows: tuple[int, int] = (1, 0),
    ) -> None:
        self._index = index
        # The int8 codes of the coarse stage, kept in step with the index while its size is in
        # `coarse_rows` (the sizes scanned coarse to fine): built by the add that brings it
        # there, on the indexer's thread, or else by the first coarse search. Not saved.
        self._codes: CoarseCodes | None = None
        self._coarse_rows = coarse_rows
        self._path = path
        self._lock = threading.Lock()
        self._sum = np.zeros(index.ndim, np.float64) if total is None else total
        self.changes = 0  # counts the changes to the indexed vectors (for the stats' cache)
        # The cap holding every vector ever added, less the f16 rounding of the stored vectors,
        # which the search's similarities carry.
        self._cap = Cap(index.ndim, CAP_SLACK, cap)
        if cap is None and len(index):  # a manifest from before caps were kept
            keys = np.fromiter(index.keys, dtype=np.uint64, count=len(index))
            self._cap.widen(np.asarray(index.get(keys, dtype="f32"), np.float32))
        self.dirty = False

    def cap(self) -> tuple[npt.NDArray[np.float64], float] | None:
        """(anchor, floor): every vector of the index has a cosine of at least `floor` with the
        unit `anchor`; None while it is empty."""
        with self._lock:
            return self._cap.get()

    def moments(self) -> tuple[npt.NDArray[np.float64], int]:
        """The sum of the indexed vectors and their count."""
        with self._lock:
            return self._sum.copy(), len(self._index)

    def _drop_present(self, keys: KeyArray) -> None:
        """Remove the keys the index holds, taking their vectors out of the sum."""
        present = self._present(keys)
        if present.any():
            gone = keys[present].astype(np.uint64)
            old = self._index.get(gone, dtype="f32")
            self._sum -= np.asarray(old, dtype=np.float64).reshape(len(gone), -1).sum(axis=0)
            self._index.remove(gone)
            if self._codes is not None:
                self._codes.remove(keys[present])
            self.dirty = True
            self.changes += 1

    def add(self, keys: KeyArray, vectors: Vector) -> None:
        """Upsert, in small chunks so that searches waiting on the lock are not held long."""
        for start in range(0, len(keys), ADD_CHUNK):
            k = keys[start : start + ADD_CHUNK]
            v = vectors[start : start + ADD_CHUNK]
            with self._lock:
                self._drop_present(k)
                self._index.add(k.astype(np.uint64), v, threads=ADD_THREADS)
                if self._codes is not None:
                    self._codes.upsert(k, np.asarray(v, np.float32))
                self._keep_codes()
                self._sum += v.astype(np.float64).sum(axis=0)
                self._cap.widen(v)
                self.dirty = True
                self.changes += 1

    def _present(self, keys: KeyArray) -> npt.NDArray[np.bool_]:
        """Which keys the index holds, in one call (the indexer asks every kind's index of a
        namespace on each step, so this is on its hot path)."""
        if len(keys) == 0 or len(self._index) == 0:
            return np.zeros(len(keys), dtype=np.bool_)
        return np.asarray(self._index.contains(keys.astype(np.uint64)), dtype=np.bool_).reshape(-1)

    def remove(self, keys: KeyArray) -> None:
        with self._lock:
            self._drop_present(keys)

    @contextlib.contextmanager
    def _breadth(self, expansion: int) -> Iterator[None]:
        """Search at breadth `expansion` (0: the index's own). The breadth is an index-wide
        setting: call under the lock, which keeps every other search out while it is changed.
        (usearch declares a setter; its stubs hide it from mypy.)"""
        if not expansion:
            yield
            return
        default = self._index.expansion_search
        self._index.expansion_search = expansion  # type: ignore[misc]
        try:
            yield
        finally:
            self._index.expansion_search = default  # type: ignore[misc]

    def search(
        self, query: Vector, count: int, exact: bool = False, expansion: int = 0
    ) -> tuple[KeyArray, npt.NDArray[np.float32]]:
        with self._lock:
            if len(self._index) == 0 or count <= 0:
                return np.empty(0, np.int64), np.empty(0, np.float32)
            if exact:
                res = self._index.search(query, count, exact=True)
            else:
                with self._breadth(expansion):
                    res = self._index.search(query, count)
        keys = np.asarray(res.keys, dtype=np.int64)
        sims = (1.0 - np.asarray(res.distances, dtype=np.float32)).astype(np.float32)
        return keys, sims

    def _keep_codes(self) -> None:
        """Build the codes when the index enters `coarse_rows`; drop them when it leaves."""
        lo, hi = self._coarse_rows
        inside = lo <= len(self._index) <= hi
        if inside and self._codes is None:
            self._codes = self._build_codes()
        elif not inside and self._codes is not None:
            self._codes = None

    def _build_codes(self) -> CoarseCodes:
        codes = CoarseCodes(self._index.ndim)
        keys = np.fromiter(self._index.keys, dtype=np.int64, count=len(self._index))
        for start in range(0, len(keys), 4096):
            chunk = keys[start : start + 4096]
            codes.upsert(chunk, self._vectors(chunk))
        self._codes = codes
        return codes

    def coarse_search(
        self, query: Vector, count: int, rerank: int
    ) -> tuple[KeyArray, npt.NDArray[np.float32]]:
        """Coarse to fine: the `rerank` best rows by their int8 codes, then the `count` best
        of those by the index's own vectors (best first)."""
        with self._lock:
            if len(self._index) == 0 or count <= 0:
                return np.empty(0, np.int64), np.empty(0, np.float32)
            codes = self._codes or self._build_codes()  # outside `coarse_rows`: until a change
            cand = codes.candidates(np.asarray(query, np.float32), max(rerank, count))
            vecs = self._vectors(cand)
        sims = (vecs @ np.asarray(query, np.float32)).astype(np.float32)
        order = np.lexsort((cand, -sims))[:count]
        return cand[order], sims[order]

    def _vectors(self, keys: KeyArray) -> npt.NDArray[np.float32]:
        if len(keys) == 0:
            return np.zeros((0, self._index.ndim), np.float32)
        got = self._index.get(keys.astype(np.uint64))  # as stored (f16 is read 3x faster)
        return np.asarray(got).reshape(len(keys), -1).astype(np.float32)

    def search_batch(
        self, queries: Vector, count: int, expansion: int = 0
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """Search many queries at once (usearch spreads them over its threads), with search
        breadth `expansion` (0: the index's own).

        Returns (keys, similarities), each (len(queries), count); missing slots have key -1 and
        similarity -inf.
        """
        m = len(queries)
        keys = np.full((m, count), -1, dtype=np.int64)
        sims = np.full((m, count), -np.inf, dtype=np.float32)
        with self._lock:
            if len(self._index) == 0 or m == 0:
                return keys, sims
            with self._breadth(expansion):
                res = self._index.search(queries, count, threads=1)
        got = np.asarray(res.keys).reshape(m, -1)[:, :count]
        dist = np.asarray(res.distances, dtype=np.float32).reshape(m, -1)[:, :count]
        # One query gives a flat `Matches` (all found); several give `BatchMatches` with counts.
        counts = np.asarray(getattr(res, "counts", [got.shape[1]])).reshape(m, 1)
        found = np.arange(got.shape[1])[None, :] < counts
        keys[:, : got.shape[1]] = np.where(found, got.astype(np.int64), -1)
        # Slots past a query's count hold garbage (even NaN): mask them before the arithmetic.
        sims[:, : got.shape[1]] = np.where(found, 1.0 - np.where(found, dist, 1.0), -np.inf)
        return keys, sims

    def get(self, keys: KeyArray) -> Vector:
        out = np.zeros((len(keys), self._index.ndim), dtype=np.float32)
        if len(keys) == 0:
            return out
        with self._lock:
            got = self._index.get(keys.astype(np.uint64), dtype="f32")
        if isinstance(got, np.ndarray):
            return got.reshape(len(keys), -1).astype(np.float32)
        for i, v in enumerate(got or ()):
            if v is not None:
                out[i] = v
        return out

    def __len__(self) -> int:
        return len(self._index)

    def save(self, rev: int) -> tuple[dict[str, object], list[Path]]:
        """Write the index if it changed, to a new file of revision `rev` (the manifest still
        names the old one until it is replaced, so a crash in between leaves the old file with
        its own sum); return the file, the vector sum and the cap it matches, for the manifest,
        and the file it replaces, if any (to delete once the manifest is replaced)."""
        with self._lock:
            old = None
            if self.dirty:
                stem = self._path.name.split(".", 1)[0]
                new = self._path.with_name(f"{stem}.{rev}-{secrets.token_hex(3)}.usearch")
                tmp = new.with_suffix(".tmp")
                self._index.save(str(tmp))
                os.replace(tmp, new)
                if new != self._path:
                    old, self._path = self._path, new
                self.dirty = False
            out = {"file": self._path.name, "sum": self._sum.tolist(), **self._cap.entry()}
            return out, [] if old is None else [old]


# A pocket's vector index: warm pockets' in usearch, cold pockets' in the cold archive.
Partition = UsearchVectorIndex | ColdVectorIndex


class UsearchIndexSet:
    """Every partition's index under one directory, with a manifest of the saved revision."""

    def __init__(
        self,
        root: Path,
        ndim: int,
        dtype: str,
        connectivity: int,
        expansion_add: int,
        expansion_search: int,
        coarse_rows: tuple[int, int] = (1, 0),
        cold: ColdArchive | None = None,
    ) -> None:
        """`coarse_rows`: the index sizes scanned coarse to fine, whose codes each index keeps
        (`memory.pockets.coarse_min_rows` to `exact_max_rows`; empty by default); `cold`: where
        the cold pockets' segments are kept (None: a cold pocket gets a usearch index too)."""
        self._root = root
        self._cold = cold
        self._coarse_rows = coarse_rows
        self._root.mkdir(parents=True, exist_ok=True)
        self._ndim = ndim
        self._opts = {
            "metric": "ip",
            "dtype": dtype,
            "connectivity": connectivity,
            "expansion_add": expansion_add,
            "expansion_search": expansion_search,
        }
        self._lock = threading.Lock()
        self._parts: dict[tuple[str, str], Partition] = {}
        self._saved_rev = 0
        self._load()
        if self._cold is not None:
            self._cold.sweep(p for p in self._parts.values() if isinstance(p, ColdVectorIndex))

    def _stem(self, namespace: str, pocket: str) -> str:
        return hashlib.sha1(f"{namespace}\0{pocket}".encode()).hexdigest()[:24]

    def _file(self, namespace: str, pocket: str) -> Path:
        return self._root / f"{self._stem(namespace, pocket)}.usearch"

    def _new(self, namespace: str, pocket: str) -> Partition:
        """An empty partition: a cold pocket's in the cold archive, any other's in usearch."""
        if self._cold is not None and is_cold(pocket):
            return self._cold.create(self._stem(namespace, pocket))
        index = Index(ndim=self._ndim, **self._opts)  # type: ignore[arg-type]
        return UsearchVectorIndex(
            index, self._file(namespace, pocket), None, None, self._coarse_rows
        )

    def _manifest(self) -> Path:
        return self._root / "manifest.json"

    def _load(self) -> None:
        if not self._manifest().exists():
            return
        meta = json.loads(self._manifest().read_text())
        if meta.get("layout") != LAYOUT:
            log.warning(
                "the vector indexes in %s have an older layout; rebuilding them from the record"
                " store",
                self._root,
            )
            for path in self._root.glob("*.usearch"):
                path.unlink()
            self._manifest().unlink()
            return
        if meta.get("ndim") != self._ndim:
            raise ValueError(
                f"vector indexes in {self._root} have dimension {meta.get('ndim')}, "
                f"but memory.embedding_dim is {self._ndim}"
            )
        named = {part["file"] for part in meta["partitions"] if "file" in part}
        for path in self._root.glob("*.usearch"):  # written by a save the crash cut short
            if path.name not in named:
                path.unlink()
        for part in meta["partitions"]:
            if "cold" in part:
                self._parts[(part["namespace"], part["pocket"])] = self._restore_cold(part)
                continue
            path = self._root / part["file"]
            index = Index(ndim=self._ndim, **self._opts)  # type: ignore[arg-type]
            if path.exists():
                index.load(str(path))
            total = np.asarray(part["sum"], dtype=np.float64) if path.exists() else None
            cap = None
            if path.exists() and "anchor" in part:
                cap = (np.asarray(part["anchor"], dtype=np.float64), float(part["floor"]))
            self._parts[(part["namespace"], part["pocket"])] = UsearchVectorIndex(
                index, path, total, cap
            )
        self._saved_rev = int(meta["rev"])

    def _restore_cold(self, entry: dict[str, Any]) -> ColdVectorIndex:
        """A cold partition of the manifest; a file of it that cannot be read stops the
        start-up, saying how to rebuild (the record store holds every cold record)."""
        if self._cold is None:
            raise ValueError(
                f"the vector indexes in {self._root} hold cold pockets, but no cold archive"
            )
        try:
            return self._cold.restore(self._stem(entry["namespace"], entry["pocket"]), entry)
        except ColdArchiveError as exc:
            raise ColdArchiveError(
                f"{exc}. The record store still holds every cold memory: remove"
                f" {self._manifest()} to rebuild the vector indexes from it"
            ) from exc

    def partition(self, namespace: str, pocket: str, create: bool) -> Partition | None:
        key = (namespace, pocket)
        part = self._parts.get(key)
        if part is None and create:
            with self._lock:
                part = self._parts.get(key)
                if part is None:
                    part = self._parts[key] = self._new(namespace, pocket)
        return part

    def partitions(self, namespace: str) -> dict[str, Partition]:
        """The namespace's indexes by pocket name."""
        with self._lock:
            return {p: idx for (ns, p), idx in self._parts.items() if ns == namespace}

    def save(self, rev: int) -> None:
        with self._lock:
            parts = dict(self._parts)
        entries, replaced = [], []
        for (ns, pocket), part in sorted(parts.items()):
            entry, old = part.save(rev)
            entries.append({"namespace": ns, "pocket": pocket, **entry})
            replaced += old
        meta = {"layout": LAYOUT, "rev": rev, "ndim": self._ndim, "partitions": entries}
        tmp = self._manifest().with_suffix(".tmp")
        with open(tmp, "w") as fh:
            json.dump(meta, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self._manifest())
        fsync_dir(self._root)
        for path in replaced:  # named by no manifest now
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        self._saved_rev = rev

    def saved_rev(self) -> int:
        return self._saved_rev

    def size(self) -> int:
        with self._lock:
            parts = list(self._parts.values())
        return sum(len(p) for p in parts)
