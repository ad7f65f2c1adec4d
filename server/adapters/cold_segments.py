"""The cold tier's vectors: each cold pocket's as compressed segments under `<data_dir>/cold/`.

A cold pocket is searched rarely and at a high price (`memory.lifecycle.cold`), so its vectors
are kept small rather than fast. It implements the same `VectorIndex` port as a warm pocket's
usearch index, so the indexer and the channels treat it as any other partition; the vector
index set (`server.adapters.usearch_index`) gives a pocket whose name says tier cold one of these.

- Rows are appended to an open tail in memory; a tail of `segment_rows` rows is sealed into a
  segment file: msgspec msgpack of its keys and f16 vectors, compressed by zstd at `zstd_level`
  with a checksum, written to a temporary file, fsynced and renamed.
- A search decompresses every segment and scans it exactly: that is what the price pays for.
  Only the keys stay in memory (which row holds a key, for removals and `get`), with the pocket's
  vector sum and cap, as a warm index keeps them.
- A removal marks its row dead (a tombstone) and reads its segment to take the vector out of the
  sum; a segment with more dead rows than live ones is dropped and its live rows go back to the
  tail, to be sealed again.

Persistence is part of the vector indexes' snapshot: `save(rev)` writes the tail and the
tombstones to new files and returns the partition's manifest entry (its segments, tail and
tombstone files, vector sum and cap) with the files it no longer needs, which the set deletes once
the manifest naming the new ones is in place. A segment sealed since the last snapshot is named
by no manifest; a start-up deletes every file here that the manifest does not name, so a crash
leaves the archive as of the snapshot's revision, from which the indexer replays the store. A
named file that is missing or cannot be read stops the start-up with its name
(`ColdArchiveError`): it is never silently dropped.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt
import zstandard

from server.adapters.durable import fsync_dir
from server.adapters.vector_cap import Cap
from server.core.memory.model import Tier, Vector
from server.core.memory.ports import KeyArray
from server.core.settings import ColdSettings

SEGMENT = ".seg"
TOMBSTONES = ".dead"
# Subtracted from a cap's floor: the floor is computed on the stored f16 vectors, and a search's
# similarities in float32 on the same ones.
CAP_SLACK = 1e-5
GROW = 1.5  # the tail's growth factor
F16 = npt.NDArray[np.float16]
F32 = npt.NDArray[np.float32]
BoolArray = npt.NDArray[np.bool_]


def is_cold(pocket: str) -> bool:
    """Whether a pocket's name (`PocketKey.name`: kind/tier/modality[/bucket]) says tier cold."""
    parts = pocket.split("/", 2)
    return len(parts) > 1 and parts[1] == Tier.COLD.name.lower()


class ColdArchiveError(ValueError):
    """A file of the cold archive is missing or cannot be read."""


class _Rows(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A segment file's content, before compression."""

    ndim: int
    keys: bytes  # little-endian int64, one per row
    vectors: bytes  # little-endian float16, row-major


class _Tombstones(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A tombstone file's content: each segment's dead rows, as packed bits."""

    rows: dict[str, bytes]


def _write(root: Path, name: str, data: bytes) -> None:
    """`data` into `root/name`, durably: a temporary file, fsynced, renamed."""
    tmp = root / f"{name}.tmp"
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, root / name)
    fsync_dir(root)


def _read(path: Path) -> bytes:
    """A file's decompressed bytes; a missing, truncated or corrupt one is a ColdArchiveError."""
    try:
        packed = path.read_bytes()
    except FileNotFoundError:
        raise ColdArchiveError(f"the cold archive's file {path} is missing") from None
    try:
        return zstandard.ZstdDecompressor().decompress(packed)
    except zstandard.ZstdError as exc:
        raise ColdArchiveError(f"the cold archive's file {path} is damaged ({exc})") from exc


def _decode(path: Path, raw: bytes, kind: type[msgspec.Struct]) -> Any:
    try:
        return msgspec.msgpack.decode(raw, type=kind)
    except msgspec.DecodeError as exc:
        raise ColdArchiveError(f"the cold archive's file {path} is damaged ({exc})") from exc


@dataclass
class _Sealed:
    """A sealed segment: its file, its keys in row order and its dead rows."""

    name: str
    keys: KeyArray
    dead: BoolArray
    live: int = field(init=False)
    # The keys sorted, and each one's row: a key's row by binary search.
    _sorted: KeyArray = field(init=False, repr=False)
    _rows: KeyArray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.live = len(self.keys) - int(self.dead.sum())
        self._rows = np.argsort(self.keys, kind="stable")
        self._sorted = self.keys[self._rows]

    def find(self, keys: KeyArray) -> tuple[BoolArray, KeyArray]:
        """Which of `keys` this segment holds alive, and their rows."""
        hit = np.zeros(len(keys), np.bool_)
        if self.live == 0 or len(keys) == 0:
            return hit, np.empty(0, np.int64)
        at = np.minimum(np.searchsorted(self._sorted, keys), len(self._sorted) - 1)
        rows = self._rows[at]
        hit = (self._sorted[at] == keys) & ~self.dead[rows]
        return hit, rows[hit]

    def kill(self, rows: KeyArray) -> None:
        self.dead[rows] = True
        self.live = len(self.keys) - int(self.dead.sum())


def _top(keys: KeyArray, sims: F32, count: int) -> tuple[KeyArray, F32]:
    """The `count` best of each row of (keys, sims), best first, padded with -1 and -inf."""
    m, n = sims.shape
    if n > count:
        part = np.argpartition(-sims, count - 1, axis=1)[:, :count]
        keys, sims = np.take_along_axis(keys, part, 1), np.take_along_axis(sims, part, 1)
    order = np.argsort(-sims, axis=1, kind="stable")
    keys, sims = np.take_along_axis(keys, order, 1), np.take_along_axis(sims, order, 1)
    if keys.shape[1] < count:
        pad = count - keys.shape[1]
        keys = np.concatenate([keys, np.full((m, pad), -1, np.int64)], axis=1)
        sims = np.concatenate([sims, np.full((m, pad), -np.inf, np.float32)], axis=1)
    keys[np.isneginf(sims)] = -1
    return keys, sims


class ColdVectorIndex:
    """One cold pocket's vectors: sealed segments on disk and the open tail in memory. A lock
    serialises mutation against search, so a search never reads a segment being dropped."""

    def __init__(self, root: Path, stem: str, ndim: int, settings: ColdSettings) -> None:
        self._root = root
        self._stem = stem
        self._ndim = ndim
        self._segment_rows = settings.segment_rows
        self._level = settings.zstd_level
        self._lock = threading.Lock()
        self._segments: list[_Sealed] = []
        # The tail: packed rows (a removed row takes the last one), each key's row.
        self._tail_keys = np.zeros(0, np.int64)
        self._tail_vecs: F16 = np.zeros((0, ndim), np.float16)
        self._tail_row: dict[int, int] = {}
        # The sum of the vectors added less those removed (as stored), as a warm index keeps it.
        self._sum = np.zeros(ndim, np.float64)
        self._cap = Cap(ndim, CAP_SLACK)
        self.changes = 0  # counts the changes to the indexed vectors (for the stats' cache)
        # The tail and tombstone files of the last snapshot, whether they changed since, and
        # the files that the next snapshot no longer names (deleted once its manifest is in).
        self._tail_file: str | None = None
        self._tombstone_file: str | None = None
        self._tail_dirty = False
        self._tombstones_dirty = False
        self._dropped: list[str] = []

    # --- persistence

    @classmethod
    def restore(
        cls, root: Path, stem: str, ndim: int, settings: ColdSettings, entry: Mapping[str, Any]
    ) -> ColdVectorIndex:
        """The partition a snapshot's manifest `entry` describes; every file it names is read
        and checked, and one that is missing or damaged raises ColdArchiveError."""
        index = cls(root, stem, ndim, settings)
        files = entry["cold"]
        for name in files["segments"]:
            keys, _ = index._load(name)
            index._segments.append(_Sealed(name, keys, np.zeros(len(keys), np.bool_)))
        if files["tombstones"]:
            index._restore_tombstones(files["tombstones"])
        if files["tail"]:
            keys, vecs = index._load(files["tail"])
            index._reserve(len(keys))
            index._tail_keys[: len(keys)] = keys
            index._tail_vecs[: len(keys)] = vecs
            index._tail_row = {k: i for i, k in enumerate(keys.tolist())}
            index._tail_file = files["tail"]
        index._sum = np.asarray(entry["sum"], np.float64)
        if "anchor" in entry:
            index._cap = Cap(ndim, CAP_SLACK, (np.asarray(entry["anchor"]), float(entry["floor"])))
        else:  # an entry without a cap: it is computed from the stored vectors
            for _, vecs, dead in index._blocks():
                index._cap.widen(vecs if dead is None else vecs[~dead])
        return index

    def _restore_tombstones(self, name: str) -> None:
        path = self._root / name
        stones: _Tombstones = _decode(path, _read(path), _Tombstones)
        by_name = {s.name: s for s in self._segments}
        for segment, bits in stones.rows.items():
            seg = by_name.get(segment)
            if seg is None or len(bits) != (len(seg.keys) + 7) // 8:
                raise ColdArchiveError(
                    f"the cold archive's file {path} does not match the segment {segment}"
                )
            dead = np.unpackbits(np.frombuffer(bits, np.uint8), count=len(seg.keys))
            seg.kill(np.nonzero(dead)[0])
        self._tombstone_file = name

    def files(self) -> list[str]:
        """The files the partition's last snapshot names, and those sealed since."""
        with self._lock:
            named = [s.name for s in self._segments]
            return named + [f for f in (self._tail_file, self._tombstone_file) if f]

    def save(self, rev: int) -> tuple[dict[str, object], list[Path]]:
        """Write the tail and the tombstones if they changed, to new files of revision `rev`
        (the segments are on disk since they were sealed); return the manifest entry and the
        files it no longer names, to delete once the manifest is replaced."""
        with self._lock:
            gone, self._dropped = self._dropped, []
            if self._tail_dirty:
                gone += [self._tail_file] if self._tail_file else []
                self._tail_file = None
                if n := len(self._tail_row):
                    self._tail_file = self._name(f"t{rev}", SEGMENT)
                    self._store(self._tail_file, self._tail_keys[:n], self._tail_vecs[:n])
                self._tail_dirty = False
            if self._tombstones_dirty:
                gone += [self._tombstone_file] if self._tombstone_file else []
                self._tombstone_file = None
                dead = {
                    s.name: np.packbits(s.dead).tobytes()
                    for s in self._segments
                    if s.live < len(s.keys)
                }
                if dead:
                    self._tombstone_file = self._name(f"d{rev}", TOMBSTONES)
                    raw = msgspec.msgpack.encode(_Tombstones(dead))
                    _write(self._root, self._tombstone_file, self._compress(raw))
                self._tombstones_dirty = False
            files = {
                "segments": [s.name for s in self._segments],
                "tail": self._tail_file,
                "tombstones": self._tombstone_file,
            }
            entry = {"cold": files, "sum": self._sum.tolist(), **self._cap.entry()}
            return entry, [self._root / name for name in gone]

    def _name(self, tag: str, suffix: str) -> str:
        return f"{self._stem}.{tag}-{secrets.token_hex(4)}{suffix}"

    def _compress(self, raw: bytes) -> bytes:
        return zstandard.ZstdCompressor(level=self._level, write_checksum=True).compress(raw)

    def _store(self, name: str, keys: KeyArray, vectors: F16) -> None:
        rows = _Rows(self._ndim, keys.astype("<i8").tobytes(), vectors.astype("<f2").tobytes())
        _write(self._root, name, self._compress(msgspec.msgpack.encode(rows)))

    def _load(self, name: str) -> tuple[KeyArray, F16]:
        """A segment file's keys and vectors, checked against its own sizes."""
        path = self._root / name
        rows: _Rows = _decode(path, _read(path), _Rows)
        n = len(rows.keys) // 8
        if rows.ndim != self._ndim or len(rows.keys) % 8 or len(rows.vectors) != 2 * n * rows.ndim:
            raise ColdArchiveError(
                f"the cold archive's file {path} is damaged ({n} keys, {len(rows.vectors)} bytes"
                f" of vectors of dimension {rows.ndim}; this server's is {self._ndim})"
            )
        keys = np.frombuffer(rows.keys, "<i8").astype(np.int64)
        vecs = np.frombuffer(rows.vectors, "<f2").astype(np.float16, copy=False)  # a read-only view
        vecs = vecs.reshape(n, self._ndim)
        return keys, vecs

    # --- mutation (the indexer's thread)

    def add(self, keys: KeyArray, vectors: Vector) -> None:
        """Upsert: a key it holds loses its old row; the new rows go to the tail, which is
        sealed into a segment each time it fills."""
        if len(keys) == 0:
            return
        vecs = np.asarray(vectors, np.float32).reshape(len(keys), self._ndim)
        # A key given twice: its last row, as two upserts in turn would leave it.
        _, last = np.unique(np.asarray(keys, np.int64)[::-1], return_index=True)
        pick = np.sort(len(keys) - 1 - last)
        keys, vecs = np.asarray(keys, np.int64)[pick], vecs[pick]
        v16 = vecs.astype(np.float16)
        with self._lock:
            self._drop_present(keys)
            self._append(keys, v16)
            self._sum += vecs.astype(np.float64).sum(axis=0)
            self._cap.widen(v16)  # the stored vectors: those a search scores
            self.changes += 1

    def remove(self, keys: KeyArray) -> None:
        with self._lock:
            if self._drop_present(np.asarray(keys, np.int64)):
                self.changes += 1

    def _drop_present(self, keys: KeyArray) -> int:
        """Take the keys it holds out (their vectors out of the sum); return how many. A
        segment left mostly dead is dropped and its live rows go back to the tail."""
        gone = 0
        for k in keys.tolist() if self._tail_row else ():
            row = self._tail_row.pop(k, None)
            if row is None:
                continue
            self._sum -= self._tail_vecs[row].astype(np.float64)
            last = len(self._tail_row)  # the last row, now one past the end
            if row != last:
                moved = int(self._tail_keys[last])
                self._tail_keys[row] = moved
                self._tail_vecs[row] = self._tail_vecs[last]
                self._tail_row[moved] = row
            self._tail_dirty = True
            gone += 1
        for seg in list(self._segments):
            _, rows = seg.find(keys)
            if len(rows) == 0:
                continue
            seg_keys, vecs = self._load(seg.name)
            self._sum -= vecs[rows].astype(np.float64).sum(axis=0)
            seg.kill(rows)
            self._tombstones_dirty = True
            gone += len(rows)
            if 2 * seg.live < len(seg.keys):  # mostly dead: its live rows are written anew
                self._segments.remove(seg)
                self._dropped.append(seg.name)
                self._append(seg_keys[~seg.dead], vecs[~seg.dead])
        return gone

    def _append(self, keys: KeyArray, vecs: F16) -> None:
        """Rows of keys it does not hold into the tail, sealing it whenever it fills."""
        done = 0
        while done < len(keys):
            n = len(self._tail_row)
            take = min(len(keys) - done, max(self._segment_rows - n, 0))
            self._reserve(n + take)
            self._tail_keys[n : n + take] = keys[done : done + take]
            self._tail_vecs[n : n + take] = vecs[done : done + take]
            for i, k in enumerate(keys[done : done + take].tolist()):
                self._tail_row[k] = n + i
            done += take
            self._tail_dirty = True
            if len(self._tail_row) >= self._segment_rows:
                self._seal()

    def _seal(self) -> None:
        """The tail into a segment file of its own (durable before it is listed)."""
        n = len(self._tail_row)
        name = self._name("s", SEGMENT)
        keys = self._tail_keys[:n].copy()
        self._store(name, keys, self._tail_vecs[:n])
        self._segments.append(_Sealed(name, keys, np.zeros(n, np.bool_)))
        self._tail_row = {}
        self._tail_dirty = True

    def _reserve(self, rows: int) -> None:
        if rows <= len(self._tail_keys):
            return
        cap = min(max(rows, int(len(self._tail_keys) * GROW) + 16), max(rows, self._segment_rows))
        keys = np.zeros(cap, np.int64)
        vecs = np.zeros((cap, self._ndim), np.float16)
        keys[: len(self._tail_keys)] = self._tail_keys
        vecs[: len(self._tail_vecs)] = self._tail_vecs
        self._tail_keys, self._tail_vecs = keys, vecs

    # --- reads

    def _blocks(self) -> Iterator[tuple[KeyArray, F16, BoolArray | None]]:
        """The tail's rows, then each segment's (decompressed in turn) with its dead rows."""
        if n := len(self._tail_row):
            yield self._tail_keys[:n], self._tail_vecs[:n], None
        for seg in self._segments:
            if seg.live:
                yield (*self._load(seg.name), seg.dead)

    def _scan(self, queries: F32, count: int) -> tuple[KeyArray, F32]:
        """Every live row scored against each query (decompressing every segment): the
        `count` best of each, padded with -1 and -inf. Called under the lock."""
        m = len(queries)
        best_keys = np.full((m, 0), -1, np.int64)
        best = np.full((m, 0), -np.inf, np.float32)
        for keys, vecs, dead in self._blocks():
            sims = (queries @ vecs.astype(np.float32).T).astype(np.float32)
            if dead is not None:
                sims[:, dead] = -np.inf
            both_keys = np.concatenate([best_keys, np.broadcast_to(keys, sims.shape)], axis=1)
            best_keys, best = _top(both_keys, np.concatenate([best, sims], axis=1), count)
        return _top(best_keys, best, count)

    def search(
        self, query: Vector, count: int, exact: bool = False, expansion: int = 0
    ) -> tuple[KeyArray, npt.NDArray[np.float32]]:
        """Every live vector scanned exactly (an archive has no graph: `exact` and `expansion`
        change nothing); (keys, cosine similarities), best first."""
        if count <= 0:
            return np.empty(0, np.int64), np.empty(0, np.float32)
        q = np.asarray(query, np.float32).reshape(1, self._ndim)
        with self._lock:
            keys, sims = self._scan(q, count)
        found = keys[0] >= 0
        return keys[0][found], sims[0][found]

    def coarse_search(
        self, query: Vector, count: int, rerank: int
    ) -> tuple[KeyArray, npt.NDArray[np.float32]]:
        """An exact scan: an archive keeps no codes."""
        return self.search(query, count)

    def search_batch(
        self, queries: Vector, count: int, expansion: int = 0
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """Each query's `count` best, from one pass over the segments; (keys, cosines), each
        (len(queries), count), missing slots -1 and -inf."""
        q = np.asarray(queries, np.float32).reshape(-1, self._ndim)
        if count <= 0:
            return np.full((len(q), 0), -1, np.int64), np.full((len(q), 0), -np.inf, np.float32)
        with self._lock:
            return self._scan(q, count)

    def get(self, keys: KeyArray) -> Vector:
        """The stored vectors of `keys` (zeros for keys it does not hold)."""
        keys = np.asarray(keys, np.int64)
        out = np.zeros((len(keys), self._ndim), np.float32)
        with self._lock:
            for i, k in enumerate(keys.tolist()):
                row = self._tail_row.get(k)
                if row is not None:
                    out[i] = self._tail_vecs[row]
            for seg in self._segments:
                hit, rows = seg.find(keys)
                if len(rows):
                    out[hit] = self._load(seg.name)[1][rows]
        return out

    def moments(self) -> tuple[npt.NDArray[np.float64], int]:
        """The sum of the stored vectors and their count."""
        with self._lock:
            return self._sum.copy(), self._live()

    def cap(self) -> tuple[npt.NDArray[np.float64], float] | None:
        with self._lock:
            return self._cap.get()

    def _live(self) -> int:
        return len(self._tail_row) + sum(s.live for s in self._segments)

    def __len__(self) -> int:
        with self._lock:
            return self._live()

    @property
    def segments(self) -> int:
        """Sealed segments (for tests and the operator's eye)."""
        with self._lock:
            return len(self._segments)


class ColdArchive:
    """The cold directory: creates and restores the cold pockets' partitions, and deletes the
    files that no snapshot names."""

    def __init__(self, root: Path, ndim: int, settings: ColdSettings) -> None:
        self.root = root
        self._ndim = ndim
        self._settings = settings
        root.mkdir(parents=True, exist_ok=True)

    def create(self, stem: str) -> ColdVectorIndex:
        """An empty partition whose files are named after `stem`."""
        return ColdVectorIndex(self.root, stem, self._ndim, self._settings)

    def restore(self, stem: str, entry: Mapping[str, Any]) -> ColdVectorIndex:
        return ColdVectorIndex.restore(self.root, stem, self._ndim, self._settings, entry)

    def sweep(self, parts: Iterable[ColdVectorIndex]) -> None:
        """Delete every file of the directory that none of `parts` names: what a save cut
        short, or segments sealed after the last snapshot, left behind."""
        named = {name for part in parts for name in part.files()}
        removed = False
        for path in self.root.iterdir():
            if path.is_file() and path.name not in named:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
                removed = True
        if removed:
            fsync_dir(self.root)
