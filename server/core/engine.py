"""The memory engine: the one object the API calls. Transport-free and thread-safe.

It is given its parts (the metadata columns, the hot tier, the encoding, the writer, the
retriever, the background indexer and the maintenance thread), built by the composition root
(`server.app.assemble_engine`) over the same ports (record store, vector indexes, keyword index,
clock). Every method blocks, so the API runs them in a bounded executor, off the event loop.
"""

from __future__ import annotations

import hashlib
import logging
import math
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass

import msgspec
import numpy as np

from server.core.clock import Clock
from server.core.deadline import Deadline, no_deadline
from server.core.errors import (
    FailedPreconditionError,
    InvalidFieldError,
    InvalidMediaError,
    Location,
    NotFoundError,
)
from server.core.media.intake import MediaIntake, TableWrite, not_read_yet
from server.core.media.items import sibling_id
from server.core.media.passages import passages_of
from server.core.media.ports import MediaRejected, Sniffed
from server.core.memory.acknowledged import Acknowledged, Pending
from server.core.memory.changes import Applied
from server.core.memory.costs import CostModel
from server.core.memory.lifecycle.parts import Lifecycle
from server.core.memory.lifecycle.reconcile import ReconcileResult
from server.core.memory.lifecycle.session_end import SessionEndResult
from server.core.memory.model import (
    GateDecision,
    IndexState,
    Kind,
    MaintainReport,
    MediaCounts,
    MemoryFilter,
    NamespaceStats,
    NewMemory,
    Page,
    PocketStats,
    ProcessingState,
    RecallQuery,
    RecallResult,
    Record,
    Stats,
    Tier,
    TierCount,
    Vector,
    WriteResult,
    embedded_text,
    unit,
)
from server.core.memory.ports import (
    AcknowledgedStore,
    HotTier,
    KeywordIndex,
    MetadataColumns,
    RecordStore,
    VectorIndexSet,
)
from server.core.memory.state.access import AccessRecorder
from server.core.memory.state.checkpoint import Checkpoint
from server.core.memory.state.indexer import Indexer
from server.core.memory.state.maintenance import Maintenance
from server.core.memory.write.writer import Writer
from server.core.query.encoding import Encoding
from server.core.query.ports import Planner, RoutedPlan
from server.core.query.retriever import Retriever
from server.core.settings import MemorySettings

log = logging.getLogger(__name__)
# The current memories a reconciled fact is weighed against (a Recall of it).
RECONCILE_CANDIDATES = 20


@dataclass(frozen=True)
class EngineParts:
    """What the engine is made of (built by the composition root over the same stores)."""

    columns: MetadataColumns
    hot: HotTier
    encoding: Encoding
    writer: Writer
    retriever: Retriever
    indexer: Indexer
    access: AccessRecorder
    maintenance: Maintenance
    checkpoint: Checkpoint
    lifecycle: Lifecycle
    # The media pipeline (blobs, OCR, transcripts, the image space); None: no media are read.
    media: MediaIntake | None = None


class MemoryEngine:
    """Remember, Recall, Get, Forget and Stats over one data directory's stores."""

    def __init__(
        self,
        settings: MemorySettings,
        parts: EngineParts,
        store: RecordStore,
        vectors: VectorIndexSet,
        keywords: KeywordIndex,
        clock: Clock,
    ) -> None:
        """`parts`: the columns, hot tier, encoding, writer, retriever, indexer and the
        maintenance thread, built over the same stores by the composition root
        (`server.app.assemble_engine`)."""
        self._s = settings
        # Chooses the plan of a Recall that names none (set by the composition root).
        self.planner: Planner | None = None
        # A warm pocket's statistics, by pocket id, with what they were computed from: a router
        # asks for them on every Recall, and they change only when the pocket does.
        self._stats_cache: dict[
            int, tuple[tuple[int, tuple[float, float], int, int], PocketStats]
        ] = {}
        self._store = store
        self._vectors = vectors
        self._keywords = keywords
        self._clock = clock
        self.columns = parts.columns
        self.hot = parts.hot
        self._encoding = parts.encoding
        self._costs = CostModel.from_settings(settings)
        self._writer = parts.writer
        self.retriever = parts.retriever
        self.indexer = parts.indexer
        self.access = parts.access
        self.maintenance = parts.maintenance
        self._checkpoint = parts.checkpoint
        self.lifecycle = parts.lifecycle
        self.media = parts.media
        # Memories acknowledged before they are written (the agent loop's): made on first use,
        # or over a durable store by the composition root (`keep_acknowledged`).
        self._acknowledged: Acknowledged | None = None
        self._acknowledged_lock = threading.Lock()
        # Each named space's dimension, fixed by its model or its first vector.
        self._dims: dict[str, int] = {}
        self._dims_lock = threading.Lock()
        if self.media is not None:
            self.media.attach(self._write_media, self._similarity)
            space = self.media.reader.space
            if space is not None:
                self._dims[space.name] = space.dim

    def load(self) -> dict[str, float]:
        """Load the metadata columns (their checkpoint and the changes since, else a scan of
        the store), the hot memories and the unindexed tail into the hot tier; start the
        indexer. Returns timings for the start-up log.
        """
        t0 = time.perf_counter()
        got = self._checkpoint.load()
        n = got["records"]
        t1 = time.perf_counter()
        c = self.columns
        hot_keys = np.nonzero((c.ns >= 0) & (c.tier == int(Tier.HOT)))[0].tolist()
        hot_records: list[Record] = []
        for start in range(0, len(hot_keys), 4096):  # hot memories live in the hot tier only
            part = hot_keys[start : start + 4096]
            records = self._store.get(part)
            chunk = [records[k] for k in part if k in records]  # in key order, as written
            hot_records.extend(chunk)
            vecs = self._store.get_vectors([r.key for r in chunk])
            # Rebuilt like a follower, at revision 0: indexed already (nothing to wait for).
            self.hot.follow([Applied(0, r.key, r.namespace, r, vecs.get(r.key)) for r in chunk])
            self.hot.mark_indexed((r.key, 0) for r in chunk)
        tail = 0
        rev = self.indexer.rev
        while rows := self._store.changes_since(rev, 4096):
            live = [r for r in rows if not r.deleted and r.vector is not None]
            self.hot.follow(
                [Applied(r.rev, r.record.key, r.record.namespace, r.record, r.vector) for r in live]
            )
            tail += len(live)
            rev = rows[-1].rev
        self.indexer.start()
        if self.media is not None:
            # The pending jobs hold their blobs first: catching up with the store may drop a
            # record's last reference to a blob a job still needs. Then the workers start.
            self.media.resume()
            keeper = self.media.keeper
            while rows := self._store.changes_since(keeper.rev, 4096):
                keeper.catch_up(rows)
                if keeper.rev < rows[-1].rev:  # nothing of blobs in these: skip past them
                    keeper.rev = rows[-1].rev
            self.media.start()
        self.lifecycle.start(hot_records)  # before the tick that ends idle sessions reads it
        self.maintenance.start()
        log.info(
            "loaded %d records (%s), %d awaiting the indexer",
            n,
            f"a snapshot and {got['replayed']} changes since" if got["restored"] else "a scan",
            tail,
        )
        return {
            "columns_s": t1 - t0,
            "tail_s": time.perf_counter() - t1,
            "records": n,
            "tail": tail,
            "replayed": got["replayed"],
        }

    def close(self) -> None:
        """Flush the access counts, snapshot the columns, stop indexing, snapshot the indexes
        and close the stores."""
        if self._acknowledged is not None:  # its queued writes, while the stores are open
            self._acknowledged.close()
        # The maintenance first: its last tick ends idle sessions, reading the session memory
        # that stopping the lifecycle closes (a Redis client would reconnect, and leak).
        self.maintenance.stop()
        self.lifecycle.stop()
        if self.media is not None:
            self.media.stop()
        try:
            self._checkpoint.save()
        except Exception:  # the next start-up scans the store instead
            log.exception("saving the columns snapshot failed")
        if self.planner is not None:  # first: its shadow runs still use the engine
            self.planner.close()
        self._encoding.close()
        self.indexer.stop()
        self._keywords.close()
        self._store.close()

    def keep_acknowledged(self, store: AcknowledgedStore, nice: int = 0) -> Acknowledged:
        """Keep acknowledged memories durable in `store` (before any is acknowledged), written
        by a thread of niceness `nice`; the intake, to replay what a crash left there."""
        with self._acknowledged_lock:
            assert self._acknowledged is None, "the intake is made once"
            self._acknowledged = self._intake(store, nice)
            return self._acknowledged

    def _intake(self, store: AcknowledgedStore | None, nice: int = 0) -> Acknowledged:
        return Acknowledged(
            store, self.encode, lambda items: self._remember(items, no_deadline()), self.known, nice
        )

    def acknowledge(self, batch: Sequence[Pending]) -> None:
        """Memories acknowledged to a caller under ids it chose (the agent loop's Step), before
        they are written: kept durable at once (`keep_acknowledged`; without it, not kept) and
        written off the call. Read-your-writes: every call that reads or changes their
        namespace writes them first (`memory.acknowledged`)."""
        with self._acknowledged_lock:
            if self._acknowledged is None:
                self._acknowledged = self._intake(None)
            intake = self._acknowledged
        intake.accept(batch)

    def _settle(self, namespace: str, deadline: Deadline | None) -> None:
        """Read-your-writes: what was acknowledged in `namespace` is written first."""
        intake = self._acknowledged
        if intake is not None and namespace:
            intake.settle(namespace, deadline or no_deadline())

    def encode(self, texts: list[str], deadline: Deadline | None = None) -> Vector:
        """The built-in encoder's unit vectors of `texts`, as memories are encoded
        (FAILED_PRECONDITION without one)."""
        return self._encoding.encode(texts, "the text", deadline or no_deadline(), write=True)

    def remember(
        self, items: list[NewMemory], deadline: Deadline | None = None
    ) -> list[WriteResult]:
        """Encode what has no vector (in chunks, checking the deadline between them; a text whose
        query vector is cached is not encoded again), then write through the gate. A write that
        carries a medium goes through the media pipeline: the whole request is checked first,
        then what has nothing left to read is written, then the media are queued."""
        deadline = deadline or no_deadline()
        for ns in dict.fromkeys(it.record.namespace for it in items):
            self._settle(ns, deadline)
        if any(it.media is not None for it in items):
            return self._remember_media(items, deadline)
        return self._remember(items, deadline)

    def _remember_media(self, items: list[NewMemory], deadline: Deadline) -> list[WriteResult]:
        """A batch with media, checked whole before any of it is stored: tables and plain
        records are written at once (a table's bytes stored with them), images and recordings
        queued for reading."""
        media = self.media
        queued: dict[int, Sniffed] = {}
        tables: list[TableWrite] = []
        for i, it in enumerate(items):
            if it.media is None:
                continue
            if media is None:
                raise FailedPreconditionError(
                    "this server reads no media (no blob store): send the caption, OCR text or"
                    " transcript as text",
                    reason="NO_MEDIA_READER",
                    where=Location("blob.data", i),
                )
            got = media.prepare(it, i)
            if isinstance(got, TableWrite):
                items[i] = got.new
                tables.append(got)
            else:
                queued[i] = got
        self._check_spaces(items)
        if queued:
            assert media is not None
            media.admit(len(queued))
        now = [i for i in range(len(items)) if i not in queued]
        out: dict[int, WriteResult] = {}
        if now:
            assert media is not None
            with media.tables_held(tables):
                written = self._remember([items[i] for i in now], deadline)
            out.update(zip(now, written, strict=True))
        assert media is not None or not queued
        for i, sn in queued.items():
            same = self._same_medium(items[i])
            out[i] = same or media.enqueue(items[i], sn, deadline)  # type: ignore[union-attr]
        return [out[i] for i in range(len(items))]

    def _same_medium(self, new: NewMemory) -> WriteResult | None:
        """An image or recording sent again, without a memory_id of the client's, to a
        namespace that holds it (the same bytes, for the same kind and speaker): merged into
        the memory that holds it, or into the one still being read, and not read again. A
        client's memory_id is an upsert of that id, as for text."""
        rec, media = new.record, self.media
        if rec.memory_id or new.media is None or media is None:
            return None
        sha = hashlib.sha256(new.media.data).hexdigest()
        queued = media.queued_with(rec.namespace, rec.kind, rec.speaker, sha)
        if queued is not None:
            return not_read_yet(
                queued,
                GateDecision.MERGED,
                "the same medium (sha256) as a memory still being read",
                ProcessingState.PROCESSING,
                rec.tier,
            )
        keys = np.asarray(media.keeper.holders(sha), np.int64)
        if not len(keys):
            return None
        live = keys[self.columns.current(keys, int(rec.kind))].tolist()
        for old in self._store.get(live).values():
            if old.namespace == rec.namespace and old.speaker == rec.speaker:
                return WriteResult(
                    memory_id=old.memory_id,
                    decision=GateDecision.MERGED,
                    reason="the same medium (sha256)",
                    importance=old.importance,
                    expires_at=old.expires_at,
                    tier=old.tier,
                )
        return None

    def _write_media(self, items: list[NewMemory], deadline: Deadline) -> list[WriteResult]:
        """The media queue's write of an item's memories; an item written again under its id
        without a sibling (no caption now, or nothing read) drops the sibling its earlier
        version had, which held the earlier medium's text."""
        results = self._remember(items, deadline)
        ids = {(it.record.namespace, it.record.memory_id) for it in items}
        for it in items:
            rec = it.record
            if rec.blob is None or not rec.blob.held:
                continue
            old = (rec.namespace, sibling_id(rec.memory_id, rec.modality))
            if old not in ids and self._store.key_of(*old) is not None:
                self._forget(*old, None, deadline)
        return results

    def _similarity(self, a: str, b: str) -> float | None:
        """The text encoder's cosine of two texts (the alignment check); None without one."""
        if not self._encoding.available():
            return None
        v = self._encoding.encode([a, b], "the caption", no_deadline(), write=True)
        return float(np.dot(v[0], v[1]))

    def _check_spaces(self, items: list[NewMemory]) -> None:
        """Every vector of a named space has that space's dimension (its model's, or its first
        vector's, which fixes it)."""
        with self._dims_lock:
            for i, it in enumerate(items):
                for j, sv in enumerate(it.record.space_vectors):
                    n = len(sv.vector)
                    want = self._dims.get(sv.space) or self.retriever.space_dim(sv.space) or n
                    if n != want:
                        raise InvalidFieldError(
                            f"has {n} values; space {sv.space!r} has dimension {want}",
                            Location("space_vectors", i, j),
                        )
                    self._dims[sv.space] = want

    def _remember(self, items: list[NewMemory], deadline: Deadline) -> list[WriteResult]:
        self._check_spaces(items)
        said = [embedded_text(it.record, self._s.embed_speaker) for it in items]
        for it, text in zip(items, said, strict=True):
            # a text just asked as a query (an agent's stated preference) is not encoded again
            if it.vector is None and text:
                it.vector = self._encoding.cached(it.record.namespace, text)
        need = [i for i, it in enumerate(items) if it.vector is None]
        for i in need:
            rec = items[i].record
            if rec.blob is not None and not rec.text.strip():  # nothing the encoder can read
                raise FailedPreconditionError(
                    "a record with only a blob cannot be encoded: pocketd has no encoder for the"
                    " medium itself yet; send its caption or OCR text as text, or a vector",
                    reason="BLOB_NEEDS_TEXT",
                    where=Location("blob", i),
                )
        if need:
            vecs = self._encoding.encode(
                [said[i] for i in need],
                "a memory",
                deadline,
                Location("record", need[0]),
                write=True,
            )
            for row, i in enumerate(need):
                items[i].vector = vecs[row]
        self._add_passages(items, deadline)
        results = self._writer.write(items, deadline)
        self.indexer.wake()
        return results

    def _add_passages(self, items: list[NewMemory], deadline: Deadline) -> None:
        """Media memories' passages (`server.core.media.passages`), encoded with the text
        encoder; none without it."""
        if not self._encoding.available():
            return
        cut = [(i, w) for i, it in enumerate(items) for w in passages_of(it.record)]
        if not cut:
            return
        vecs = self._encoding.encode(
            [w for _, w in cut], "a passage", deadline, Location("record", cut[0][0]), write=True
        )
        rows: dict[int, list[bytes]] = {}
        for (i, _), v in zip(cut, vecs, strict=True):
            rows.setdefault(i, []).append(np.ascontiguousarray(unit(v), np.float32).tobytes())
        for i, got in rows.items():
            items[i].record = msgspec.structs.replace(items[i].record, passages=tuple(got))

    def now(self) -> float:
        return self._clock.now()

    def routing_vector(self, q: RecallQuery, deadline: Deadline | None = None) -> Vector | None:
        """The vector a router reads for `q`: its own (unit), else its text's, encoded now (or
        cached); None for a query with no text, or with the built-in encoder disabled."""
        if q.vector is not None:
            return unit(q.vector)
        if not q.text or not self._encoding.available():
            return None
        return self._encoding.query(q.namespace, q.text, deadline or no_deadline())

    def cached_vector(self, namespace: str, text: str) -> Vector | None:
        """The vector a Recall just encoded for `text` in `namespace`, if it is still cached."""
        return self._encoding.cached(namespace, text)

    def query_vectors(
        self, namespace: str, texts: list[str], deadline: Deadline | None = None
    ) -> list[Vector]:
        """The texts' vectors as a Recall would encode them: cached, or encoded in one batch on
        the queries' session and cached (a memory written from one of them is not encoded
        again, unless `memory.embed_speaker` puts its speaker in the text encoded).
        FAILED_PRECONDITION without an encoder."""
        return self._encoding.queries(namespace, texts, deadline or no_deadline())

    def recall(
        self,
        q: RecallQuery,
        deadline: Deadline | None = None,
        shadow: bool = False,
        *,
        settle: bool = True,
    ) -> RecallResult:
        """A routed query is encoded first: the router reads its vector. Otherwise a text-only
        query is encoded on the encoding thread while the keyword channel runs (the encoder
        releases the GIL), unless its vector is cached. `shadow`: a router's comparison run of
        the default plan, neither routed nor counted as an access. `settle` False: the memories
        acknowledged in the namespace are not waited for (a Step's own Recall)."""
        deadline = deadline or no_deadline()
        if settle:
            self._settle(q.namespace, deadline)
        later: Callable[[], Vector] | None = None
        routed: RoutedPlan | None = None
        if not shadow:
            self._media_query(q, deadline)
        if q.vector is not None:
            q.vector = unit(q.vector)
        planner = self.planner
        if q.plan is None and planner is not None and not shadow and planner.routes(q):
            if q.vector is None and self.columns.ns_id(q.namespace) >= 0:
                q.vector = self.routing_vector(q, deadline)  # deadline errors are the Recall's
            try:
                routed = planner.plan(q, q.vector, self._clock.now())
            except Exception:  # routing must never fail a Recall: run the default plan
                log.exception("routing failed; this Recall runs the default plan")
            if routed is not None:
                q.plan, q.early_stop = routed.steps, True
        job: Future[Vector] | None = None
        if q.vector is None and q.text:
            self._encoding.ready("the query")  # the same error whether or not it is cached
            cached = self._encoding.cached(q.namespace, q.text)
            if cached is not None:
                q.vector = cached
            elif self.columns.ns_id(q.namespace) >= 0:  # nothing to search: no need to encode
                job, later = self._encoding.soon(q.namespace, q.text, deadline)
        try:
            res = self.retriever.recall(q, deadline, later)
        finally:
            if job is not None:
                job.cancel()  # the Recall failed before it asked for the vector: if queued
        if routed is not None:
            try:
                routed.done(res)
            except Exception:
                log.exception("logging a routing decision failed")
        if not shadow:
            self.access.hit((h.record.key for h in res.hits), self._clock.now())
        return res

    def _media_query(self, q: RecallQuery, deadline: Deadline) -> None:
        """Before a Recall: wait for the session's media still being read (the namespace's when
        the filter names no session), and put the query into the image space: a query image
        through the image tower, the text through the text tower (when the namespace has
        memories in that space)."""
        media = self.media
        if media is None:
            if q.image or q.image_sha256:
                raise FailedPreconditionError(
                    "query by image needs the media pipeline and an image space (media.clip)",
                    reason="NO_IMAGE_SPACE",
                    where=Location("query_blob"),
                )
            return
        media.wait(q.namespace, q.filter.session_id, deadline)
        if q.image or q.image_sha256:
            data = q.image or self.blob(q.image_sha256, q.namespace)
            if data is None:
                raise NotFoundError("blob", q.image_sha256, where=Location("query_blob.sha256"))
            try:
                name, vec = media.reader.image_query(data)
            except LookupError as e:
                raise FailedPreconditionError(
                    "query by image needs an image space: set media.clip.model_dir (see"
                    " `pocketd models export-clip`)",
                    reason="NO_IMAGE_SPACE",
                    where=Location("query_blob"),
                ) from e
            except MediaRejected as e:
                raise InvalidMediaError(e.reason, e.detected, Location("query_blob.data")) from e
            q.space_vectors.setdefault(name, vec)
            q.image_query = True
        space = media.reader.space
        fresh = q.text and space is not None and space.name not in q.space_vectors
        if fresh and space is not None and self.retriever.space_size(q.namespace, space.name):
            got = media.reader.text_query(q.text)
            if got is not None:
                q.space_vectors[got[0]] = got[1]

    def reconcile(
        self, namespace: str, facts: list[NewMemory], dry_run: bool, deadline: Deadline
    ) -> ReconcileResult:
        """Weigh each authoritative fact against the current facts and preferences a Recall of
        it finds (`server.core.memory.lifecycle.reconcile`); store the facts and mark what
        they contradict unless `dry_run`."""
        self._settle(namespace, deadline)
        texts = [f.record.text for f in facts]
        need = [i for i, f in enumerate(facts) if f.vector is None]
        if need:
            vecs = self._encoding.encode(
                [texts[i] for i in need], "a fact", deadline, Location("facts", index=need[0]), True
            )
            for row, i in enumerate(need):
                facts[i].vector = vecs[row]
        candidates = []
        for fact in facts:
            assert fact.vector is not None
            q = RecallQuery(
                namespace=namespace,
                text=fact.record.text,
                vector=unit(fact.vector),
                top_k=RECONCILE_CANDIDATES,
                min_score=0.0,
                filter=MemoryFilter(kinds=(Kind.FACT, Kind.PREFERENCE)),
            )
            hits = self.retriever.recall(q, deadline).hits
            candidates.append([(h.record, h.score.vector) for h in hits])
        rec = self.lifecycle.reconciler
        decisions = rec.decide(facts, candidates)
        if dry_run:
            return ReconcileResult([], decisions, False)
        ids = rec.apply(facts, decisions, deadline)
        self.indexer.wake()
        return ReconcileResult(ids, decisions, True)

    def unsupersede(self, namespace: str, memory_ids: list[str], deadline: Deadline) -> list[str]:
        self._settle(namespace, deadline)
        out = self.lifecycle.reconciler.unsupersede(namespace, memory_ids, deadline)
        self.indexer.wake()
        return out

    def end_session(self, namespace: str, session_id: str, deadline: Deadline) -> SessionEndResult:
        self._settle(namespace, deadline)
        out = self.lifecycle.ender.end(namespace, session_id, deadline)
        self.indexer.wake()
        return out

    def maintain(self, namespace: str, deadline: Deadline) -> MaintainReport:
        self._settle(namespace, deadline)
        out = self.lifecycle.maintainer.run(namespace, deadline)
        self.indexer.wake()
        return out

    def can_encode(self) -> bool:
        """Whether a text with no vector can be stored (the built-in encoder is on)."""
        return self._encoding.available()

    def known(self, namespace: str, memory_id: str) -> bool:
        """Whether the store has ever held `memory_id` (a forgotten one too)."""
        return self._store.key_of(namespace, memory_id, include_deleted=True) is not None

    def get(
        self,
        namespace: str,
        memory_id: str,
        include_vector: bool,
        deadline: Deadline | None = None,
    ) -> tuple[Record, Vector | None]:
        self._settle(namespace, deadline)
        key = self._store.key_of(namespace, memory_id)
        rec = None if key is None else self._store.get([key]).get(key)
        if key is None or rec is None:
            pending = self.media.pending(namespace, memory_id) if self.media else None
            if pending is not None:  # still being read, or its reading failed
                return pending, None
            raise NotFoundError("memory", memory_id, where=Location("memory_id"))
        vec = self._store.get_vectors([key]).get(key) if include_vector else None
        self.access.hit((key,), self._clock.now())
        return rec, vec

    def forget(
        self,
        namespace: str,
        memory_id: str | None,
        flt: MemoryFilter | None,
        deadline: Deadline | None = None,
    ) -> int:
        self._settle(namespace, deadline)
        return self._forget(namespace, memory_id, flt, deadline)

    def _forget(
        self,
        namespace: str,
        memory_id: str | None,
        flt: MemoryFilter | None,
        deadline: Deadline | None = None,
    ) -> int:
        if memory_id is not None:
            cancelled = self.media is not None and self.media.cancel(namespace, memory_id)
            key = self._store.key_of(namespace, memory_id)
            if key is None:
                if cancelled:  # it was still being read: nothing of it was stored
                    return 1
                raise NotFoundError("memory", memory_id, where=Location("memory_id"))
            keys = [key, *self._derived_keys(namespace, memory_id, key)]
        else:
            # Media still being read that the filter would match never arrive.
            media = self.media
            dropped = media.cancel_matching(namespace, flt or MemoryFilter()) if media else 0
            ns_id = self.columns.ns_id(namespace)
            if ns_id < 0:
                return dropped
            keys = self.columns.matching_keys(
                ns_id, None, flt or MemoryFilter(), self._clock.now(), True, True
            ).tolist()
            n = self._writer.forget(keys, deadline or no_deadline())
            self.indexer.wake()
            return n + dropped
        n = self._writer.forget(keys, deadline or no_deadline())
        self.indexer.wake()
        return n

    def _derived_keys(self, namespace: str, memory_id: str, key: int) -> list[int]:
        """The memory of what a medium says (its OCR text, its transcript), which goes with the
        item's memory when that is forgotten."""
        rec = self._store.get([key]).get(key)
        if rec is None or rec.blob is None or not rec.blob.held:
            return []
        other = self._store.key_of(namespace, sibling_id(memory_id, rec.modality))
        if other is None:
            return []
        sib = self._store.get([other]).get(other)
        return [other] if sib is not None and sib.derived_from == (memory_id,) else []

    def blob(self, sha256: str, namespace: str | None = None) -> bytes | None:
        """The bytes of a blob pocketd holds (Get's include_blob_data, a query by a held
        image), None when there is none; with `namespace`, only one a memory of that namespace
        holds, stored or still being read (another tenant's blob is as absent as none)."""
        media = self.media
        if media is None or not media.keeper.holds(sha256):
            return None
        if namespace is not None and not self._holds_in(namespace, sha256):
            return None
        return media.blobs.get(sha256)

    def _holds_in(self, namespace: str, sha256: str) -> bool:
        media = self.media
        assert media is not None
        if media.queued_in(namespace, sha256):
            return True
        keys = media.keeper.holders(sha256)
        return any(r.namespace == namespace for r in self._store.get(keys).values())

    def list(
        self,
        namespace: str,
        flt: MemoryFilter,
        limit: int,
        after: tuple[float, int, int] | None,
        deadline: Deadline | None = None,
    ) -> Page:
        """A page of the namespace's memories that pass `flt` (obsolete and expired ones too),
        in (event time, turn, key) order, starting after the position `after`."""
        self._settle(namespace, deadline)
        c = self.columns
        ns_id = c.ns_id(namespace)
        if ns_id < 0:
            return Page([], None)
        keys = c.matching_keys(ns_id, None, flt, self._clock.now(), True, True)
        created, turn = c.created[keys], c.turn[keys]
        if after is not None:
            t, n, k = after
            later = (created > t) | ((created == t) & ((turn > n) | ((turn == n) & (keys > k))))
            keys, created, turn = keys[later], created[later], turn[later]
        order = np.lexsort((keys, turn, created))[: limit + 1]
        page = keys[order[:limit]].tolist()
        records = self._store.get(page)
        out = [records[k] for k in page if k in records]
        nxt = None
        if len(order) > limit and page:
            last = order[limit - 1]
            nxt = (float(created[last]), int(turn[last]), int(keys[last]))
        return Page(out, nxt)

    def stats(
        self,
        namespace: str,
        include: Callable[[str], bool] | None = None,
        deadline: Deadline | None = None,
    ) -> Stats:
        """One namespace's figures, or (`namespace` "") those of every namespace `include`
        allows (None: all): the others are never counted, so the call's work is the caller's
        own namespaces'."""
        self._settle(namespace, deadline)
        c = self.columns
        out: list[NamespaceStats] = []
        for ns, ns_id in sorted(c.namespaces().items()):
            if (namespace and ns != namespace) or (include is not None and not include(ns)):
                continue
            live = c.ns == ns_id  # `ns` first: the other arrays are at least as long
            n = len(live)
            total = int(np.count_nonzero(live))
            obsolete = int(np.count_nonzero(live & c.obsolete[:n]))
            tier_of = c.tier[:n][live]
            tiers = tuple(
                TierCount(t, int(np.count_nonzero(tier_of == int(t))))
                for t in (Tier.HOT, Tier.WARM, Tier.COLD)
            )
            pockets = self.pockets(ns, ns_id) if namespace else ()
            out.append(NamespaceStats(ns, total, obsolete, tiers, pockets))
        media = self.media.counts() if self.media is not None else MediaCounts()
        return Stats(tuple(out), self.hot.pending(), self.index_state(), media)

    def routable(self, namespace: str, flt: MemoryFilter) -> tuple[PocketStats, ...]:
        """The pockets a Recall with filter `flt` could search (what a router chooses from)."""
        ns_id = self.columns.ns_id(namespace)
        return () if ns_id < 0 else self.pockets(namespace, ns_id, flt)

    def pockets(
        self, namespace: str, ns_id: int, flt: MemoryFilter | None = None
    ) -> tuple[PocketStats, ...]:
        """The namespace's non-empty pockets (those `flt` allows, if given), with their size,
        cost, times and vector moments."""
        c = self.columns
        cat = c.catalog
        depth = self._s.hybrid_search.candidates_per_channel
        out = []
        ids = cat.of_namespace(ns_id) if flt is None else cat.allowed(ns_id, flt)
        for pid in ids:  # a pocket may be created meanwhile: each is read on its own
            size = c.pocket_size(pid)
            span = c.pocket_span(pid)
            if size == 0 or span is None:
                continue
            key = cat.key(pid)
            part = None
            if key.tier == Tier.HOT:
                total, n = self.hot.moments(namespace, c.pocket, pid)
            elif (part := self._vectors.partition(namespace, key.name, False)) is not None:
                mark = (size, span, id(part), part.changes)
                cached = self._stats_cache.get(pid)
                if cached is not None and cached[0] == mark:  # unchanged since: as it was
                    out.append(cached[1])
                    continue
                total, n = part.moments()
            else:
                total, n = np.zeros(self._s.embedding_dim), 0
            norm = math.sqrt(float(np.dot(total, total)))
            stats = PocketStats(
                name=key.name,
                kind=key.kind,
                tier=key.tier,
                modality=key.modality,
                bucket=key.bucket,
                size=size,
                method=self._costs.method(key.tier, size),
                cost_per_vector=self._costs.per_vector(key.tier, size),
                search_cost=self._costs.search(key.tier, size, depth),
                oldest=span[0],
                newest=span[1],
                radius=1.0 - norm / n if n else 0.0,
                centroid=(total / norm).astype(np.float32) if norm > 0 else None,
            )
            if part is not None:  # under the mark read before the moments: never newer than them
                self._stats_cache[pid] = (mark, stats)
            out.append(stats)
        return tuple(out)

    def index_state(self) -> IndexState:
        """How far the warm indexes are behind the record store (for Stats and start-up)."""
        return IndexState(
            head_rev=self._store.head_rev(),
            indexed_rev=self.indexer.rev,
            snapshot_rev=self._vectors.saved_rev(),
            pending=self.hot.pending(),
            unsnapshotted=self.indexer.unsnapshotted,
        )
