"""The background indexer: follows the record store's revisions into the warm indexes.

Each step reads the rows changed since the last indexed revision, upserts live rows into their
pocket's HNSW index and into BM25, removes forgotten rows from both, commits BM25, then marks
the rows indexed in the hot tier (which may then evict them). Rows of tier hot are kept out of
the vector indexes: the hot tier holds and scans them exactly until they move to warm, so each
memory is put into an HNSW graph once. Every indexed key is removed from the namespace's other
pockets, so a record whose pocket changed (a tier move, a kind changed by an upsert) leaves no
ghost behind. BM25 commits every step. The vector
indexes are snapshotted by the amount of work a crash would redo as well as by time: once
`snapshot_rows` rows (or `snapshot_fraction` of the index, if more) were indexed since the last
snapshot, after `snapshot_seconds` with any, and on stop.

On start it resumes from the older of the two indexes' saved revisions, so after a crash the
indexes are caught up from the record store; replaying a row is harmless since every index
operation is an upsert or a removal.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from server.core.clock import Clock
from server.core.memory.model import Record, SpaceVector, Tier, Vector, units
from server.core.memory.pockets import PocketScheme
from server.core.memory.ports import (
    ChangedRow,
    HotTier,
    KeyArray,
    KeywordDoc,
    KeywordIndex,
    RecordStore,
    SpaceIndexSet,
    VectorIndexSet,
)
from server.core.priority import run_below_readers
from server.core.settings import ContextSettings, IndexSettings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Hood:
    """A step's records with their session neighbours (see `Indexer._neighbourhood`)."""

    docs: list[tuple[Record, str]]  # the step's live rows first, then the re-indexed turns
    new: int  # how many of `docs` are the step's own rows
    recs: dict[int, Record]
    around: dict[int, list[tuple[int, int]]]  # key → (signed distance, neighbour's key)


# (keys, n) → for each key in a session, up to n neighbouring turns before and after it.
Neighbours = Callable[[Sequence[int], int], dict[int, tuple[KeyArray, KeyArray]]]


class Indexer:
    """Runs `step()` in a daemon thread until `stop()`."""

    def __init__(
        self,
        settings: IndexSettings,
        context: ContextSettings,
        store: RecordStore,
        vectors: VectorIndexSet,
        keywords: KeywordIndex,
        hot: HotTier,
        scheme: PocketScheme,
        neighbours: Neighbours,
        clock: Clock,
        publish_lock: threading.Lock,
        nice: int = 0,
        spaces: SpaceIndexSet | None = None,
    ) -> None:
        self._s = settings
        self._ctx = context
        self._nice = nice
        self._scheme = scheme
        self._neighbours = neighbours
        self._store = store
        self._vectors = vectors
        self._keywords = keywords
        self._hot = hot
        self._clock = clock
        self._lock = publish_lock
        self._spaces = spaces
        saved = [vectors.saved_rev(), keywords.committed_rev()]
        if spaces is not None:
            saved.append(spaces.saved_rev())
        self.rev = min(saved)
        # Rows indexed since the vector snapshot (replayed rows included).
        self.unsnapshotted = 0
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._stepping = threading.Lock()
        self._thread: threading.Thread | None = None
        self._last_snapshot = time.monotonic()
        # Pockets' graphs are built in parallel, each by one thread (usearch's concurrent add
        # into one graph can orphan a node, unum-cloud/USearch #735).
        self._pool = ThreadPoolExecutor(
            settings.add_workers,
            thread_name_prefix="pocketd-add",
            initializer=run_below_readers,
            initargs=(nice,),
        )

    def step(self) -> int:
        """Index one batch of changes; return how many rows it handled. One step at a time:
        `catch_up` may run beside the indexer's thread."""
        with self._stepping:
            return self._step()

    def _step(self) -> int:
        rows = self._store.changes_since(self.rev, self._s.batch_size)
        if not rows:
            return 0
        removes: dict[str, list[int]] = defaultdict(list)
        live: list[tuple[Record, str]] = []
        raw: dict[int, Vector] = {}  # the stored (own) vectors of the step's rows
        for row in rows:
            rec = row.record
            if row.deleted:
                removes[rec.namespace].append(rec.key)
                continue
            live.append((rec, self._scheme.key_of(rec).name))
            if row.vector is None or rec.tier == Tier.HOT:
                removes[rec.namespace].append(rec.key)
            else:
                raw[rec.key] = row.vector
        hood = self._neighbourhood(live)
        for ns, gone_keys in removes.items():
            self._remove(ns, np.array(gone_keys, dtype=np.int64), keep=None)
        building: list[Future[None]] = []
        for (ns, pocket), pairs in self._vector_adds(hood, raw).items():
            added = np.array([k for k, _ in pairs], dtype=np.int64)
            self._remove(ns, added, keep=pocket)  # the record may have changed pockets
            index = self._vectors.partition(ns, pocket, True)
            assert index is not None
            # One task per pocket: a graph is only ever built by one thread.
            vectors = units(np.stack([v for _, v in pairs]))
            building.append(self._pool.submit(index.add, added, vectors))
        self._index_spaces(rows, live)
        rev = rows[-1].rev
        try:  # BM25 is built meanwhile (the graphs' inserts release the GIL)
            self._index_keywords(rows, hood, rev)
        finally:
            wait(building)
        for f in building:
            f.result()  # a failed insert fails the step, which is retried
        with self._lock:
            self._hot.mark_indexed((r.record.key, r.rev) for r in rows if not r.deleted)
            self._hot.evict()
        self.unsnapshotted += len(rows)
        if self._snapshot_due():
            self._snapshot(rev)
        self.rev = rev  # last: once a reader sees it, the snapshot counters are current
        return len(rows)

    def _neighbourhood(self, live: list[tuple[Record, str]]) -> _Hood:
        """The step's live rows, the indexed turns whose context they change (their session
        neighbours, re-indexed too), and every one's neighbours by signed distance."""
        n = self._ctx.turns
        recs = {r.key: r for r, _ in live}
        around: dict[int, list[tuple[int, int]]] = {}

        def place(keys: Sequence[int]) -> None:
            for key, (before, after) in self._neighbours(keys, n).items():
                b, a = before.tolist(), after.tolist()
                around[key] = [(i - len(b), k) for i, k in enumerate(b)] + [
                    (i + 1, k) for i, k in enumerate(a)
                ]

        place([r.key for r, _ in live if r.session_id and r.turn >= 0])
        extra = sorted({k for ks in around.values() for _, k in ks if k not in recs})
        recs.update(self._store.get(extra))
        place(extra)
        missing = {k for ks in around.values() for _, k in ks} - recs.keys()
        recs.update(self._store.get(sorted(missing)))
        docs = list(live) + [
            (r, self._scheme.key_of(r).name) for k in extra if (r := recs.get(k)) is not None
        ]
        return _Hood(docs, len(live), recs, around)

    def _vector_adds(
        self, hood: _Hood, raw: dict[int, Vector]
    ) -> dict[tuple[str, str], list[tuple[int, Vector]]]:
        """The vectors to put in each pocket's index: a turn's own vector mixed with its
        neighbours' (`ContextSettings.vector_weight`), for the step's rows and for the indexed
        neighbours whose mix a new turn changes."""
        reindexed = [
            r.key
            for r, _ in hood.docs[hood.new :]
            if r.tier != Tier.HOT and r.key not in raw and hood.around.get(r.key)
        ]
        w = self._ctx.vector_weight
        need = {k for key in (*raw, *reindexed) for _, k in hood.around.get(key, ())}
        need |= set(reindexed)
        need -= raw.keys()
        own = {**self._store.get_vectors(sorted(need)), **raw} if w > 0 else dict(raw)
        adds: dict[tuple[str, str], list[tuple[int, Vector]]] = defaultdict(list)
        pockets = {r.key: (r.namespace, p) for r, p in hood.docs}
        for key in (*raw, *(k for k in reindexed if k in own)):
            v = np.asarray(own[key], dtype=np.float32)
            if w > 0:
                for dist, k in hood.around.get(key, ()):
                    nv = own.get(k)
                    if nv is not None:
                        v = v + self._ctx.weight(dist, w) * np.asarray(nv, dtype=np.float32)
            adds[pockets[key]].append((key, v))
        return adds

    def _index_spaces(self, rows: Sequence[ChangedRow], live: list[tuple[Record, str]]) -> None:
        """The step's rows into the named spaces' indexes: every tier (the hot tier scans only
        the text space), each record in its pocket's index of each space it has a vector in."""
        if self._spaces is None:
            return
        gone: dict[str, list[int]] = defaultdict(list)
        puts: dict[str, list[tuple[int, str, tuple[SpaceVector, ...]]]] = defaultdict(list)
        for r in rows:
            if r.deleted:
                gone[r.record.namespace].append(r.record.key)
        for rec, pocket in live:
            puts[rec.namespace].append((rec.key, pocket, rec.indexed_spaces()))
        for ns in gone.keys() | puts.keys():
            self._spaces.apply(ns, gone.get(ns, []), puts.get(ns, []))

    def _index_keywords(self, rows: Sequence[ChangedRow], hood: _Hood, rev: int) -> None:
        gone: dict[str, list[int]] = defaultdict(list)
        for r in rows:
            if r.deleted:
                gone[r.record.namespace].append(r.record.key)
        for ns, keys in gone.items():
            self._keywords.remove(ns, keys)
        self._keywords.upsert(
            [
                KeywordDoc(
                    rec,
                    pocket,
                    tuple(
                        (dist, n.text)
                        for dist, k in hood.around.get(rec.key, ())
                        if (n := hood.recs.get(k)) is not None
                    ),
                )
                for rec, pocket in hood.docs
            ]
        )
        self._keywords.commit(rev)

    def _remove(self, namespace: str, keys: npt.NDArray[np.int64], keep: str | None) -> None:
        """Remove `keys` from every pocket index of the namespace but `keep`. A key lives in one
        pocket, but a record that moved (an upsert that changed the kind, a tier move) would
        otherwise leave a ghost in the old one, which outscores real hits and survives Forget."""
        for pocket, index in self._vectors.partitions(namespace).items():
            if pocket != keep:
                index.remove(keys)

    def _snapshot_due(self) -> bool:
        if not self.unsnapshotted:
            return False
        rows = max(self._s.snapshot_rows, self._s.snapshot_fraction * self._vectors.size())
        late = time.monotonic() - self._last_snapshot >= self._s.snapshot_seconds
        return self.unsnapshotted >= rows or late

    def snapshot(self) -> None:
        """Persist the vector indexes at the current revision."""
        with self._stepping:
            self._snapshot(self.rev)

    def _snapshot(self, rev: int) -> None:
        t0 = time.monotonic()
        self._vectors.save(rev)
        if self._spaces is not None:
            self._spaces.save(rev)
        log.debug(
            "vector snapshot at rev %d (%d rows since the last) in %.3fs",
            rev,
            self.unsnapshotted,
            time.monotonic() - t0,
        )
        self.unsnapshotted = 0
        self._last_snapshot = time.monotonic()

    def catch_up(self) -> None:
        """Index until nothing is left (used by tests and at shutdown)."""
        while self.step():
            pass

    def wake(self) -> None:
        self._wake.set()

    def _run(self) -> None:
        run_below_readers(self._nice)
        while not self._stop.is_set():
            try:
                done = self.step()
                if 0 < done < self._s.batch_size and self._s.refresh_ms:
                    self._stop.wait(self._s.refresh_ms / 1000)  # let the next writes gather
                elif done == 0:
                    if self._snapshot_due():  # the time rule, on a server gone idle
                        self.snapshot()
                    self._wake.wait(0.05)
                    self._wake.clear()
                    with self._lock:
                        self._hot.evict()
            except Exception:  # keep indexing alive; the store still has every record
                log.exception("indexer step failed; retrying in 1 s")
                self._stop.wait(1.0)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="pocketd-indexer", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread and snapshot what is indexed."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join()
        self._pool.shutdown()
        self.snapshot()
