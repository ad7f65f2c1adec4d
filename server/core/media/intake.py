"""The media pipeline: a write that carries an image or a recording is acknowledged once its
blob and its job are durable, and read on a bounded background queue (seed 001 §5.2).

On the request path (`prepare`, then `enqueue`): the bytes are sniffed, checked against the limits
and decoded once (a corrupt file is refused, naming `record.blob.data`, and nothing is stored); a
table is linearised there and written at once. An image or a recording is put in the blob store
(fsynced), its job into the media ledger (committed), and the reply says PROCESSING under the
memory_id it will be stored as. With `wait_processed` the call waits, within its deadline, for the
outcome.

On a worker (`media.queue.workers`, niced like the other background writers): the medium is
read (OCR and the image vector, or a transcript), the caption checked against the OCR text
(`media.alignment`), and its memories (`items.compose`) written through the engine's one write
path; then the job is finished. A job that fails is kept as failed, so that Get says why.

After a kill -9 the ledger's pending jobs are queued again at start-up; a job whose write was
already stored upserts the same ids. A Recall waits (`wait`) for its session's pending media,
within its deadline and `media.queue.recall_wait_seconds`, so that "what was in the screenshot
I just sent" finds it. Beyond `media.queue.max_pending` jobs, a write is refused
RESOURCE_EXHAUSTED (backpressure).
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import math
import queue
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import msgspec

from server.core.clock import Clock
from server.core.deadline import Deadline, no_deadline
from server.core.errors import (
    FailedPreconditionError,
    InvalidMediaError,
    Location,
    ResourceExhaustedError,
)
from server.core.media.align import check as check_alignment
from server.core.media.blobs import BlobKeeper
from server.core.media.items import Spec, compose, spec_of
from server.core.media.ports import BlobStore, Job, MediaLedger, MediaRejected, Sniffed
from server.core.media.reading import MediaReader, Reading
from server.core.memory.model import (
    BLOB_URI,
    Blob,
    GateDecision,
    Kind,
    MediaCounts,
    MemoryFilter,
    Modality,
    NewMemory,
    ProcessingState,
    Record,
    Tier,
    WriteResult,
)
from server.core.priority import run_below_readers
from server.core.settings import MediaSettings

log = logging.getLogger(__name__)

# The engine's write path for memories with nothing left to read.
Write = Callable[[list[NewMemory], Deadline], list[WriteResult]]
# The text encoder's cosine of two texts (the alignment check), or None without an encoder.
Similarity = Callable[[str, str], float | None]
_ENC = msgspec.msgpack.Encoder()
_DEC = msgspec.msgpack.Decoder(Spec)


def not_read_yet(
    memory_id: str,
    decision: GateDecision,
    reason: str,
    processing: ProcessingState,
    tier: Tier = Tier.UNSPECIFIED,
    importance: int = 0,
) -> WriteResult:
    """The reply to a write of a medium whose memory is not (or never) stored as read: queued,
    merged into one still queued, failed or cancelled."""
    return WriteResult(
        memory_id=memory_id,
        decision=decision,
        reason=reason,
        importance=importance,
        expires_at=None,
        tier=tier,
        processing=processing,
    )


@dataclass(frozen=True)
class TableWrite:
    """A table checked on the request path: the memory to write now (its rows as the text, its
    blob named), and the bytes, stored only when the whole batch has been checked."""

    new: NewMemory
    data: bytes


@dataclass
class _Work:
    """A job while it is in the process: its spec, its outcome once known, and whether a
    Forget cancelled it before its write."""

    job: Job
    spec: Spec
    done: threading.Event = field(default_factory=threading.Event)
    result: WriteResult | None = None
    writing: bool = False
    cancelled: bool = False


class MediaIntake:
    """Admits writes that carry a medium, reads them in the background, and answers what is
    pending (Get, Recall's wait, Forget, Stats)."""

    def __init__(
        self,
        settings: MediaSettings,
        reader: MediaReader,
        blobs: BlobStore,
        keeper: BlobKeeper,
        ledger: MediaLedger,
        clock: Clock,
        new_id: Callable[[float], str],
        nice: int = 0,
    ) -> None:
        self._s = settings
        self.reader = reader
        self.blobs = blobs
        self.keeper = keeper
        self._ledger = ledger
        self._clock = clock
        self._new_id = new_id
        self._nice = nice
        self._write: Write | None = None
        self._similarity: Similarity | None = None
        self._lock = threading.Condition()
        self._work: dict[tuple[str, str], _Work] = {}  # (namespace, memory_id) → pending
        self._failed: dict[tuple[str, str], Job] = {}
        self._queue: queue.Queue[_Work | None] = queue.Queue()
        self._threads: list[threading.Thread] = []
        self._warmer: threading.Thread | None = None
        self._stopping = threading.Event()
        self._resumed: int | None = None  # jobs `resume` queued, once it ran
        self.processed = 0
        self.failed = 0

    def attach(self, write: Write, similarity: Similarity | None) -> None:
        """The engine's write path, and the text encoder's similarity for the alignment check."""
        self._write = write
        self._similarity = similarity

    # -- start and stop ---------------------------------------------------------------------

    def resume(self) -> int:
        """Hold the blobs of the jobs a crash left pending and queue them (before the blob
        keeper catches up with the store, which may free a blob only a job still needs).
        Returns how many jobs resumed."""
        resumed = 0
        for job in self._ledger.jobs():
            if job.failed:
                self._failed[(job.namespace, job.memory_id)] = job
                continue
            work = _Work(job, _DEC.decode(job.spec))
            self.keeper.hold(job.sha256)
            with self._lock:
                self._work[(job.namespace, job.memory_id)] = work
            self._queue.put(work)
            resumed += 1
        self._resumed = resumed
        return resumed

    def start(self) -> int:
        """Resume the pending jobs (unless `resume` ran), remove blobs no one holds, start the
        workers. Returns how many jobs resumed."""
        resumed = self.resume() if self._resumed is None else self._resumed
        swept = self.keeper.sweep()
        if resumed or swept:
            log.info("media: %d jobs resumed, %d stray blobs removed", resumed, swept)
        if self._s.queue.warm_up:
            self._warmer = threading.Thread(
                target=self._warm, name="pocketd-media-warm", daemon=True
            )
            self._warmer.start()
        for i in range(self._s.queue.workers):
            t = threading.Thread(target=self._run, name=f"pocketd-media-{i}", daemon=True)
            t.start()
            self._threads.append(t)
        return resumed

    def _warm(self) -> None:
        run_below_readers(self._nice)
        t0 = time.monotonic()
        try:
            self.reader.warm()
        except Exception:  # the first medium then loads them, and says what fails
            log.warning("loading the media readers failed", exc_info=True)
        else:
            log.info("media: readers warm in %.1f s", time.monotonic() - t0)

    def stop(self) -> None:
        """Stop the workers after the job each is on; pending jobs stay in the ledger (the next
        start resumes them)."""
        self._stopping.set()
        # A process that exits while the warm-up is creating the readers' native thread pools
        # aborts ("terminate called without an active exception"): let it finish first.
        if self._warmer is not None:
            self._warmer.join(timeout=120.0)
            if self._warmer.is_alive():
                log.error("the media readers' warm-up did not end in 120 s")
        for _ in self._threads:
            self._queue.put(None)
        for t in self._threads:
            t.join(timeout=60.0)
        alive = [t.name for t in self._threads if t.is_alive()]
        self._threads.clear()
        if alive:  # a read that will not end: the ledger stays open under it
            log.error("media workers still reading after 60 s: %s", ", ".join(alive))
            return
        self._ledger.close()

    # -- the request path --------------------------------------------------------------------

    def prepare(self, new: NewMemory, item: int) -> TableWrite | Sniffed:
        """Check a write's medium on the request path: a table to write now (linearised, for
        `tables_held`), or what the bytes are (an image or a recording, for `enqueue`). Raises
        `InvalidMediaError` for bytes that are not a medium within the limits, and
        FAILED_PRECONDITION when nothing here can read it. Nothing is stored yet, so a batch is
        checked whole before any of it is."""
        media = new.media
        assert media is not None
        where = Location("blob.data", item)
        try:
            sn = self.reader.check(media.data)
            why = self.reader.can_read(sn, bool(new.record.text.strip()))
            if why is not None:
                if sn.modality == Modality.TEXT:
                    raise MediaRejected(why, sn.mime)
                raise FailedPreconditionError(why, "NO_MEDIA_READER", where)
            if sn.modality == Modality.TABLE:
                return self._table(new, sn, media.data)
        except MediaRejected as e:
            raise InvalidMediaError(e.reason, e.detected, where) from e
        return sn

    def admit(self, n: int) -> None:
        """Room in the queue for `n` more jobs (a batch's, all or none), else
        `ResourceExhaustedError` naming `media.queue.max_pending`."""
        with self._lock:
            pending = len(self._work)
        cap = self._s.queue.max_pending
        if pending + n > cap:
            raise ResourceExhaustedError(
                f"the media queue holds {pending} of {cap} items, and this write adds {n};"
                " retry later",
                "media.queue.max_pending",
            )

    def enqueue(self, new: NewMemory, sn: Sniffed, deadline: Deadline) -> WriteResult:
        """Store the medium's blob and its job durably and queue it: the result says
        PROCESSING, under the memory_id it will be stored as (with `wait`, the outcome, if it
        comes within the deadline)."""
        media = new.media
        assert media is not None
        deadline.check("before storing the medium")
        rec = new.record
        memory_id = rec.memory_id or self._new_id(self._clock.now())
        sha = hashlib.sha256(media.data).hexdigest()
        self.keeper.hold(sha)  # before the put: a release meanwhile cannot remove the file
        try:
            self.blobs.put(media.data)
        except BaseException:
            self.keeper.release(sha)
            raise
        spec = spec_of(new, memory_id)
        job = Job(
            0, rec.namespace, memory_id, rec.session_id, sha, _ENC.encode(spec), self._clock.now()
        )
        try:
            job_id = self._ledger.add(job)
        except BaseException:
            self.keeper.release(sha)
            raise
        work = _Work(dataclasses.replace(job, job_id=job_id), spec)
        with self._lock:
            old = self._work.get((rec.namespace, memory_id))
            self._work[(rec.namespace, memory_id)] = work
            failed = self._failed.pop((rec.namespace, memory_id), None)
            # The same id sent again while the first waits: the last one wins (one already
            # writing finishes, and this one's write then upserts over it).
            drop = old is not None and not old.writing
            if old is not None and drop:
                old.cancelled = True
        if failed is not None:  # a failure of the same id is replaced by this job
            self._ledger.finish(failed.job_id)
        if old is not None and drop:
            self._ledger.finish(old.job.job_id)
            self.keeper.release(old.job.sha256)
            old.result = not_read_yet(
                memory_id,
                GateDecision.STORED,
                "replaced by a later write of the same memory_id, still being read",
                ProcessingState.PROCESSING,
                rec.tier,
            )
            old.done.set()  # a Remember waiting for the first answers now
        self._queue.put(work)
        left = deadline.remaining()
        if media.wait and work.done.wait(None if math.isinf(left) else max(left, 0.0)):
            assert work.result is not None
            return work.result
        return not_read_yet(
            memory_id,
            GateDecision.STORED,
            f"queued for reading ({sn.mime})",
            ProcessingState.PROCESSING,
            rec.tier,
            new.explicit_importance or 0,
        )

    def _table(self, new: NewMemory, sn: Sniffed, data: bytes) -> TableWrite:
        """A table: its linearised rows as the text (after the caption), its columns as tags,
        the bytes kept as its blob (named here, stored by `tables_held`)."""
        table = self.reader.table(data, sn)
        rec = new.record
        sha = hashlib.sha256(data).hexdigest()
        text = "\n".join(t for t in (rec.text.strip(), table.text) if t)
        tags = tuple(dict.fromkeys(rec.tags + tuple(c.lower() for c in table.columns)))[:32]
        out = msgspec.structs.replace(
            rec,
            modality=Modality.TABLE,
            text=text,
            tags=tags,
            blob=Blob(f"{BLOB_URI}{sha}", sn.mime, len(data), sha),
        )
        return TableWrite(msgspec.structs.replace(new, record=out, media=None), data)

    @contextmanager
    def tables_held(self, tables: Sequence[TableWrite]) -> Iterator[None]:
        """The tables' bytes stored and held while their records are written: a record that
        commits holds its blob from then on; one refused leaves nothing behind. A crash in
        between leaves a stray blob, which the next start-up's sweep removes."""
        shas = [t.new.record.blob.sha256 for t in tables if t.new.record.blob is not None]
        for sha in shas:
            self.keeper.hold(sha)  # before the put: a release meanwhile cannot remove the file
        try:
            for t in tables:
                self.blobs.put(t.data)
            yield
        finally:
            for sha in shas:
                self.keeper.release(sha)

    # -- what is pending ---------------------------------------------------------------------

    def pending(self, namespace: str, memory_id: str) -> Record | None:
        """The record of a memory still in the queue (PROCESSING) or whose reading failed
        (FAILED, with why), for Get; None when the queue knows nothing of it."""
        with self._lock:
            work = self._work.get((namespace, memory_id))
            failed = self._failed.get((namespace, memory_id))
        if work is not None:
            rec = work.spec.record
            blob = Blob(f"{BLOB_URI}{work.job.sha256}", "", 0, work.job.sha256)
            return msgspec.structs.replace(rec, blob=blob, processing=ProcessingState.PROCESSING)
        if failed is not None:
            return Record(
                memory_id=memory_id,
                namespace=namespace,
                kind=Kind.UNSPECIFIED,
                session_id=failed.session_id,
                processing=ProcessingState.FAILED,
                processing_note=failed.failed,
                created_at=failed.created,
            )
        return None

    def queued_with(self, namespace: str, kind: Kind, speaker: str, sha256: str) -> str | None:
        """The memory_id of a job still in the queue for the same medium in the namespace (of
        the same kind and speaker), else None."""
        with self._lock:
            for (ns, memory_id), work in self._work.items():
                rec = work.spec.record
                if (
                    ns == namespace
                    and work.job.sha256 == sha256
                    and rec.kind == kind
                    and rec.speaker == speaker
                    and not work.cancelled
                ):
                    return memory_id
        return None

    def cancel_matching(self, namespace: str, flt: MemoryFilter) -> int:
        """A Forget by filter: cancel the namespace's jobs still in the queue (and forget its
        failures) that the filter would match once read; how many. What is known before the
        reading decides (session, kind, the client's tags, the time of the write, an explicit
        importance); a modality filter matches a pending medium when it names images or
        recordings; an importance the gate has yet to give matches."""
        with self._lock:
            ids = [
                mid
                for (ns, mid), w in self._work.items()
                if ns == namespace and _could_match(w.spec, w.job, flt)
            ]
            ids += [
                mid
                for (ns, mid), job in self._failed.items()
                if ns == namespace and (not flt.session_id or job.session_id == flt.session_id)
            ]
        return sum(self.cancel(namespace, mid) for mid in ids)

    def queued_in(self, namespace: str, sha256: str) -> bool:
        """Whether a job of the namespace still in the queue holds the medium."""
        with self._lock:
            return any(
                ns == namespace and w.job.sha256 == sha256 and not w.cancelled
                for (ns, _), w in self._work.items()
            )

    def wait(self, namespace: str, session_id: str, deadline: Deadline) -> bool:
        """Wait until no medium of the namespace's session (any session when "") is pending,
        within `media.queue.recall_wait_seconds` and half the deadline's time left (the Recall
        itself needs the rest: it then answers from what is searchable); True when none is."""
        limit = min(self._s.queue.recall_wait_seconds, max(deadline.remaining() / 2, 0.0))
        end = time.monotonic() + limit

        def mine() -> bool:
            return any(
                ns == namespace and (not session_id or w.job.session_id == session_id)
                for (ns, _), w in self._work.items()
            )

        with self._lock:
            while mine():
                left = end - time.monotonic()
                if left <= 0:
                    return False
                self._lock.wait(min(left, 0.25))
        return True

    def cancel(self, namespace: str, memory_id: str) -> bool:
        """Forget a memory still in the queue, or one whose reading failed: True when it was
        cancelled before its write, or was a failure (then nothing of it is stored, and the
        ledger forgets it too); False when the queue does not hold it or its write has begun
        (the store then holds it, and Forget erases it there)."""
        with self._lock:
            work = self._work.get((namespace, memory_id))
            failed = self._failed.pop((namespace, memory_id), None)
        if failed is not None:
            self._ledger.finish(failed.job_id)
        with self._lock:
            if work is None:
                return failed is not None
            while work.writing and not work.done.is_set():
                self._lock.wait(0.25)
            if work.done.is_set():
                return False
            work.cancelled = True
            del self._work[(namespace, memory_id)]
            self._lock.notify_all()
        self._ledger.finish(work.job.job_id)
        self.keeper.release(work.job.sha256)
        work.result = not_read_yet(
            memory_id, GateDecision.REJECTED, "forgotten before it was read", ProcessingState.FAILED
        )
        work.done.set()  # a Remember waiting for it answers now
        return True

    def counts(self) -> MediaCounts:
        with self._lock:
            pending = len(self._work)
        return MediaCounts(pending, self.processed, self.failed, self.keeper.count())

    # -- the workers -------------------------------------------------------------------------

    def _run(self) -> None:
        run_below_readers(self._nice)
        while not self._stopping.is_set() and (work := self._queue.get()) is not None:
            if work.cancelled:
                continue
            try:
                self._process(work)
            except Exception as e:  # a reader's bug must not stop the queue
                log.exception("media job %d failed", work.job.job_id)
                self._fail(work, f"reading the medium failed: {type(e).__name__}")

    def _process(self, work: _Work) -> None:
        job, spec = work.job, work.spec
        data = self.blobs.get(job.sha256)
        if data is None:
            self._fail(work, "the medium's blob is missing")
            return
        try:
            sn = self.reader.check(data)
            reading = self.reader.read(data, sn, spec.language)
        except MediaRejected as e:
            self._fail(work, f"{e.reason} (detected type: {e.detected})")
            return
        note = ""
        if sn.modality == Modality.IMAGE:
            note, refuse = self._aligned(spec.record.text, reading)
            if refuse:
                self._fail(work, note, rejected=True)
                return
        items = compose(spec, sn, job.sha256, len(data), reading, note)
        assert self._write is not None
        with self._lock:
            if work.cancelled:
                return
            work.writing = True
        try:
            results = self._write(items, no_deadline())
        except BaseException:
            with self._lock:
                work.writing = False
            if self._stopping.is_set():  # the stores are closing: the next start resumes it
                log.warning("media job %d left pending at shutdown", job.job_id)
                return
            raise
        # `writing` stays set until `_finish`: a Forget meanwhile finds the write done, and
        # erases it in the store (never releasing the blob a second time).
        first = results[0]
        warnings = (note,) if note else ()
        work.result = msgspec.structs.replace(first, warnings=warnings)
        self._ledger.finish(job.job_id)
        self.keeper.release(job.sha256)  # the record holds it now (or it merged: then it goes)
        self.processed += 1
        self._finish(work)

    def _aligned(self, caption: str, reading: Reading) -> tuple[str, bool]:
        """The alignment check of a caption against the OCR text: (a warning or "", whether to
        refuse the write)."""
        mode = self._s.alignment.mode
        caption, said = caption.strip(), reading.text.strip()
        if mode == "off" or not caption or not said:
            return "", False
        cosine = self._similarity(caption, said) if self._similarity is not None else None
        verdict = check_alignment(caption, said, cosine, self._s.alignment.min_score)
        if verdict.ok:
            return "", False
        return f"caption and image disagree: {verdict.why}", mode == "reject"

    def _fail(self, work: _Work, why: str, rejected: bool = False) -> None:
        if work.cancelled:  # its canceller let go of its job and blob
            return
        job = work.job
        self._ledger.fail(job.job_id, why)
        self.keeper.release(job.sha256)
        self.failed += 1
        # Its id: Get names it FAILED, with why, and Forget removes it.
        work.result = not_read_yet(
            job.memory_id, GateDecision.REJECTED, why, ProcessingState.FAILED
        )
        with self._lock:
            self._failed[(job.namespace, job.memory_id)] = dataclasses.replace(
                job, failed=why, spec=b""
            )
        log.info("media job %d failed: %s%s", job.job_id, why, " (rejected)" if rejected else "")
        self._finish(work)

    def _finish(self, work: _Work) -> None:
        with self._lock:
            key = (work.job.namespace, work.job.memory_id)
            if self._work.get(key) is work:
                del self._work[key]
            self._lock.notify_all()
        work.done.set()


def _could_match(spec: Spec, job: Job, flt: MemoryFilter) -> bool:
    """Whether a pending medium's memory would match a Forget's filter once read."""
    rec = spec.record
    if flt.session_id and job.session_id != flt.session_id:
        return False
    if flt.kinds and rec.kind not in flt.kinds:
        return False
    if flt.modalities and not {Modality.IMAGE, Modality.AUDIO, rec.modality} & set(flt.modalities):
        return False
    if flt.tags and not set(rec.tags) & set(flt.tags):
        return False
    created = spec.created_at if spec.created_at is not None else job.created
    if flt.created_after is not None and created < flt.created_after:
        return False
    if flt.created_before is not None and created >= flt.created_before:
        return False
    importance = spec.explicit_importance
    return not (flt.min_importance and importance is not None and importance < flt.min_importance)
