"""Multimodal memory as a state machine, against a plain-Python model of what the engine holds
(issue 30): the records an image becomes, the media queue's jobs, the failures Get reports, and
the blob files on disk.

Hypothesis drives random sequences over a small pool (four solid-colour images, three
namespaces, two client ids) so that the same image meets itself often:
- remember an image, with or without a caption, waiting for its reading or not, with or without
  a client memory_id (an upsert of that id: a pending job of the same id is replaced);
- remember an image again in the namespace of a memory that holds it (no memory_id: merged into
  the memory that holds it, or into the job still reading it, and not read again);
- forget a memory (a pending one is cancelled; an item takes the memory of its OCR text along),
  or the memory of an item's OCR text alone;
- let the queue read what is pending;
- restart: a clean close, or a kill -9 while the worker reads a job (before or after that job's
  write), or right after a blob was put and before its job was (a stray blob); pending jobs
  resume from the media ledger.
After every step it checks:
- the store holds exactly the model's records, per namespace, field by field (the text: caption,
  else the OCR text, else a label; the blob; the group; what the OCR-text memory derives from),
  each READY; Stats counts them per namespace;
- Get says what the model says of every id it has seen: the stored record, else PROCESSING with
  its blob while its job waits, else FAILED with why; NOT_FOUND for a forgotten one;
- the blob files on disk are exactly the sha256s of the live records' blobs and of the pending
  jobs' (reference counting is synchronous: a Forget, an upsert to another image, a failed or
  cancelled job removes a blob when its last holder goes; a start-up sweeps strays), and
  `engine.blob` serves exactly those;
- Stats.media: the pending jobs, the jobs read and failed since start-up, the blobs held.

The model is exact where the engine's contract is, and lenient in one place:
- a clean close: the worker stops after the job in its hands and the rest resume at the next
  start, but whether it takes one more job before it sees the stop is a race with the gate this
  machine opens for the close, so the model accepts any split of the FIFO queue into a prefix
  read before the stop and a suffix resumed after it (tests/unit/media/test_intake.py checks
  the stop exactly).

Two exact tests below keep what were bugs fixed: a forgotten failure stays forgotten across a
restart, and an item re-sent under its id without an OCR-text memory drops its old one.

The reading is deterministic: a fake OCR maps each colour to its text (one colour raises, as a
reader's bug does: the job FAILS) and holds every read behind a gate that only a step opens, so
a job stays pending, or in the worker's hands, until a step says otherwise; after each write the
machine waits for the worker to reach the gate, so which job it holds is known.

`POCKETD_STATE_EXAMPLES` sets the number of sequences of 20 steps (25 by default, well under a
minute on a loaded two-core machine; the `slow` variant runs 200).
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import msgspec
import numpy as np
import pytest
from hypothesis import event
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, invariant, multiple, rule

from server.adapters.onnx_encoder import OnnxTextEncoder
from server.core.deadline import Deadline
from server.core.engine import MemoryEngine
from server.core.errors import NotFoundError
from server.core.media.intake import MediaIntake
from server.core.media.ports import OcrText, Pixels
from server.core.memory.model import (
    GateDecision,
    Kind,
    MediaInput,
    Modality,
    NewMemory,
    ProcessingState,
    Record,
    WriteResult,
)
from server.core.settings import Settings
from tests.conftest import DIM, FakeClock, make_settings, run_state_machine, wait_for
from tests.media_fixtures import blob_files, media_settings, open_media_engine, solid_png

NAMESPACES = ("a", "b", "c")
CLIENT_IDS = ("c1", "c2")
CAPTIONS = ("", "the screenshot the customer sent", "退款页面的截图")
SIDE = 8
LABEL = f"image {SIDE}×{SIDE}"  # the description of an image that says nothing readable
# The images: a colour each, and what the fake OCR reads in it ("" nothing; None: it raises).
COLOURS: dict[str, tuple[int, int, int]] = {
    "error": (200, 30, 30),
    "refund": (30, 200, 30),
    "blank": (30, 30, 200),
    "poison": (10, 10, 10),
}
SAYS: dict[str, str | None] = {
    "error": "Error E1234: the payment gateway declined the card",
    "refund": "订单 ORD-5521 退款被拒",
    "blank": "",
    "poison": None,
}
IMAGES = list(COLOURS)
PNG = {name: solid_png(rgb, SIDE) for name, rgb in COLOURS.items()}
SHA = {name: hashlib.sha256(data).hexdigest() for name, data in PNG.items()}
BY_COLOUR = {rgb: name for name, rgb in COLOURS.items()}
FAILED_NOTE = "reading the medium failed: PoisonError"
CALL_S = 60.0  # a waited write's deadline: generous on a loaded machine, never reached
GATE_S = 120.0

Key = tuple[str, str]  # (namespace, memory_id)


def words_id(memory_id: str) -> str:
    """The id of the memory of what an item's image says (`items.sibling_id`, short ids)."""
    return memory_id + ".ocr"


# -- the engine's parts the machine drives ------------------------------------------------------


class PoisonError(RuntimeError):
    """The fake reader's bug: the media queue fails the job and goes on."""


class HeldOcr:
    """A fake `Ocr`: the text of a solid-colour image (`SAYS`), read only while `open` is set,
    so that a job waits in the worker's hands until a step lets it through; `at_gate` counts the
    reads waiting there."""

    def __init__(self) -> None:
        self.open = threading.Event()
        self.at_gate = 0
        self._lock = threading.Lock()

    def read(self, image: Pixels) -> OcrText:
        with self._lock:
            self.at_gate += 1
        try:
            if not self.open.wait(timeout=GATE_S):
                raise TimeoutError("no step opened the OCR gate")
        finally:
            with self._lock:
                self.at_gate -= 1
        r, g, b = (int(c) for c in image[0, 0])
        said = SAYS[BY_COLOUR[(r, g, b)]]
        if said is None:
            raise PoisonError("the reader failed on this image")
        return OcrText(said)


class HashEncoder:
    """The text encoder port: one fixed unit vector per text (any two texts ~orthogonal), so a
    write is encoded in microseconds and no text is a near-duplicate of another."""

    dim = DIM

    def encode(self, texts: list[str]) -> np.ndarray:
        rows = []
        for t in texts:
            seed = int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], "little")
            v = np.random.default_rng(seed).normal(size=DIM).astype(np.float32)
            rows.append(v / np.linalg.norm(v))
        return np.stack(rows)


def rig_settings(data: Path) -> Settings:
    """The tests' settings for an engine of short sequences: no background tick between steps
    (accesses flushed hourly, no scheduled maintenance), the smallest keyword heap tantivy takes
    (each sequence opens several engines), one media worker, no warm-up read (it would wait at
    the gate), and a Recall that never waits for pending media."""
    base = make_settings(data)
    mem = base.memory
    life = mem.lifecycle
    mem = msgspec.structs.replace(
        mem,
        access_flush_seconds=3600.0,
        index=msgspec.structs.replace(mem.index, keyword_heap_bytes=15_000_000),
        lifecycle=msgspec.structs.replace(
            life, maintenance=msgspec.structs.replace(life.maintenance, enabled=False)
        ),
    )
    base = msgspec.structs.replace(base, memory=mem)
    return media_settings(
        data, base, queue={"workers": 1, "warm_up": False, "recall_wait_seconds": 0.0}
    )


class Rig:
    """An engine with the media pipeline over a data directory, its reader behind `HeldOcr`'s
    gate, restarted cleanly or killed."""

    def __init__(self) -> None:
        self.data = Path(tempfile.mkdtemp(prefix="pocketd-media-sm-"))
        self.clock = FakeClock()
        self.ocr = HeldOcr()
        self.settings = rig_settings(self.data)
        self.engine = self._open()

    def _open(self) -> MemoryEngine:
        self.ocr.open.clear()
        encoder = cast(OnnxTextEncoder, HashEncoder())  # handed on as the TextEncoder it is
        return open_media_engine(
            self.data, encoder, self.clock, self.settings, ocr=self.ocr, speech=None, space=None
        )

    @property
    def media(self) -> MediaIntake:
        media = self.engine.media
        assert media is not None
        return media

    def remember(
        self, ns: str, image: str, caption: str, wait: bool, memory_id: str = ""
    ) -> WriteResult:
        new = NewMemory(
            record=Record(memory_id=memory_id, namespace=ns, kind=Kind.OBSERVATION, text=caption),
            vector=None,
            explicit_importance=3,
            client_memory_id=bool(memory_id),
            media=MediaInput(PNG[image], "", wait),
        )
        return self.engine.remember([new], Deadline(CALL_S))[0]

    def remember_waited(
        self, ns: str, image: str, caption: str, memory_id: str = ""
    ) -> WriteResult:
        """A write that waits for its reading: the gate opens once its job is queued (behind
        the pending ones, which the worker reads first), not before, so that what the write
        replaces or joins is what was pending when it came."""
        queue, before = self.media._queue, (self.media._queue.qsize(), self.ocr.at_gate)
        done = threading.Event()

        def open_once_queued() -> None:
            while not done.is_set():
                if queue.qsize() > before[0] or self.ocr.at_gate > before[1]:
                    self.ocr.open.set()
                    return
                done.wait(0.005)

        opener = threading.Thread(target=open_once_queued, daemon=True)
        opener.start()
        try:
            return self.remember(ns, image, caption, True, memory_id)
        finally:
            done.set()
            opener.join(timeout=GATE_S)
            self.ocr.open.clear()

    @contextmanager
    def reading(self) -> Iterator[None]:
        """The gate open for the block: the worker reads what is queued."""
        self.ocr.open.set()
        try:
            yield
        finally:
            self.ocr.open.clear()

    def drain(self) -> None:
        """Let the worker read every pending job, and leave the gate (a job cancelled while in
        its hands is let go there too)."""
        with self.reading():
            wait_for(lambda: self.media.counts().pending == 0 and self.ocr.at_gate == 0)

    def at_gate(self) -> None:
        """Wait until the worker holds a job at the gate."""
        wait_for(lambda: self.ocr.at_gate == 1)

    def restart(self) -> None:
        """A clean close (the gate open, so the workers can stop) and a start on the same data."""
        with self.reading():
            self.engine.close()
        self._close_ledger()
        self.engine = self._open()

    def crash(self, before_write: bool) -> None:
        """kill -9 while the worker holds a job (if it holds one): it dies before that job's
        write (the job stays in the ledger) or just after it; the queued jobs stay in the
        ledger, and nothing the engine saves at a clean close is saved."""
        eng, media = self.engine, self.media
        held = self.ocr.at_gate == 1
        if held:
            # The worker stops after the job in its hands: a sentinel ahead of the queue.
            q = media._queue
            with q.mutex:
                q.queue.appendleft(None)
            if before_write:
                for work in media._work.values():  # the job in its hands dies unwritten
                    work.cancelled = True
        with self.reading():
            media.stop()
        eng.maintenance._stop.set()
        if eng.maintenance._thread is not None:
            eng.maintenance._thread.join()
        eng.indexer._stop.set()
        eng.indexer._wake.set()
        if eng.indexer._thread is not None:
            eng.indexer._thread.join()
        eng._encoding.close()
        eng._keywords.close()
        eng._store.close()
        self._close_ledger()
        self.engine = self._open()

    def _close_ledger(self) -> None:
        # A simulated kill -9 skips MemoryEngine.close, which closes it, and a sequence opens
        # several engines: close it as the process's end would (a second close is harmless).
        media = self.engine.media
        if media is not None:
            media._ledger.close()  # type: ignore[attr-defined]

    def live(self) -> dict[Key, Record]:
        return {(r.namespace, r.memory_id): r for r in self.engine._store.scan_live()}

    def get(self, key: Key) -> Record | None:
        try:
            rec, _ = self.engine.get(key[0], key[1], False)
        except NotFoundError:
            return None
        return rec

    def close(self) -> None:
        with self.reading():
            self.engine.close()
        self._close_ledger()
        shutil.rmtree(self.data, ignore_errors=True)


# -- the model ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Job:
    """A write queued for reading; `seq` tells two identical writes apart."""

    seq: int
    ns: str
    memory_id: str
    image: str
    caption: str

    @property
    def key(self) -> Key:
        return (self.ns, self.memory_id)


@dataclass(frozen=True)
class Rec:
    """A live record as the engine should store it: an item (`image` set: it holds the blob)
    or the memory of its OCR text."""

    text: str
    image: str | None = None
    group: str = ""
    derived_from: tuple[str, ...] = ()

    def agrees(self, key: Key, rec: Record) -> None:
        """The stored record says what the model holds, and is READY."""
        sha = SHA[self.image] if self.image is not None else None
        got = (
            rec.text,
            rec.blob.sha256 if rec.blob is not None else None,
            rec.blob is not None and rec.blob.held,
            rec.group_id,
            rec.derived_from,
            rec.modality,
            rec.kind,
            rec.processing,
        )
        want = (
            self.text,
            sha,
            sha is not None,
            self.group,
            self.derived_from,
            Modality.IMAGE,
            Kind.OBSERVATION,
            ProcessingState.READY,
        )
        assert got == want, (key, got, want)


@dataclass
class Model:
    records: dict[Key, Rec] = field(default_factory=dict)
    jobs: list[Job] = field(default_factory=list)  # pending, in the queue's (FIFO) order
    failed: dict[Key, Job] = field(default_factory=dict)
    gone: set[Key] = field(default_factory=set)  # forgotten, never made again
    # The job in the worker's hands at the gate, and whether it is still pending.
    taken: Job | None = None
    read: int = 0  # jobs read and written since start-up
    failures: int = 0  # jobs failed since start-up
    seq: int = 0

    def pending(self, key: Key) -> Job | None:
        return next((j for j in self.jobs if j.key == key), None)

    def holders(self, ns: str, image: str) -> tuple[list[str], list[str]]:
        """The ids a re-sent image may merge into: the jobs still reading it in the namespace,
        and the live items that hold it there."""
        queued = [j.memory_id for j in self.jobs if j.ns == ns and j.image == image]
        held = [k[1] for k, r in self.records.items() if k[0] == ns and r.image == image]
        return queued, held

    def enqueue(self, ns: str, memory_id: str, image: str, caption: str) -> Job:
        """A job queued (replacing a pending job of the same id: the last one wins)."""
        self.seq += 1
        job = Job(self.seq, ns, memory_id, image, caption)
        self.jobs = [j for j in self.jobs if j.key != job.key] + [job]
        self._clear_failure(job.key)
        self.gone.discard(job.key)
        if self.taken is None:
            self.taken = job  # an idle worker takes it to the gate
        return job

    def _clear_failure(self, key: Key) -> bool:
        """A Forget or a re-send of the id clears its failure (the ledger's too)."""
        if self.failed.pop(key, None) is None:
            return False
        event("a failure cleared")
        return True

    def process(self, job: Job) -> None:
        """The job read: its memories written (upserts of its ids), or FAILED."""
        self.jobs.remove(job)
        said = SAYS[job.image]
        if said is None:
            self.failed[job.key] = job
            self.failures += 1
            return
        self.read += 1
        ns, mid = job.key
        caption = job.caption.strip()
        split = bool(caption and said)
        group = mid if split else ""
        self.records[job.key] = Rec(caption or said or LABEL, job.image, group)
        words = (ns, words_id(mid))
        if split:
            self.records[words] = Rec(said, None, group, (mid,))
            self.gone.discard(words)
        elif words in self.records:  # the earlier medium's text goes
            del self.records[words]
            self.gone.add(words)
            event("an item re-sent without an OCR-text memory")

    def process_all(self) -> None:
        for job in list(self.jobs):
            self.process(job)
        self.taken = None

    def forget(self, key: Key) -> int | None:
        """What Forget returns (None: NOT_FOUND), and its effect: a pending job cancelled, the
        record erased with the memory of its OCR text."""
        job = self.pending(key)
        if job is not None:
            self.jobs.remove(job)
            event("a pending job cancelled by Forget")
        was_failed = self._clear_failure(key)
        rec = self.records.pop(key, None)
        if rec is None:
            if job is None and not was_failed:
                return None
            self.gone.add(key)
            return 1
        n = 1
        words = (key[0], words_id(key[1]))
        other = self.records.get(words)
        if rec.image is not None and other is not None and other.derived_from == (key[1],):
            del self.records[words]
            self.gone.add(words)
            n += 1
        self.gone.add(key)
        return n

    def restarted(self, resumed: int) -> None:
        """A start-up: the queue's first jobs were read before the stop, the last `resumed`
        resume (the worker takes the first to the gate); the counts start again."""
        for job in self.jobs[: len(self.jobs) - resumed]:
            self.process(job)
        self.taken = self.jobs[0] if self.jobs else None
        self.read = self.failures = 0

    def held_shas(self) -> set[str]:
        held = {SHA[r.image] for r in self.records.values() if r.image is not None}
        return held | {SHA[j.image] for j in self.jobs}

    def known(self) -> set[Key]:
        return set(self.records) | {j.key for j in self.jobs} | set(self.failed)


# -- the machine -------------------------------------------------------------------------------


class MediaMachine(RuleBasedStateMachine):
    ids = Bundle("ids")

    def __init__(self) -> None:
        super().__init__()
        self.rig = Rig()
        self.model = Model()

    def teardown(self) -> None:
        self.rig.close()

    # -- writes -----------------------------------------------------------------------------

    def _send(self, ns: str, image: str, caption: str, wait: bool, memory_id: str = "") -> Key:
        model = self.model
        queued, held = model.holders(ns, image)
        if not memory_id and (queued or held):
            return self._merged(ns, image, caption, wait, queued, held)
        if wait:  # the worker reads the whole queue, then this job
            got = self.rig.remember_waited(ns, image, caption, memory_id)
            mid = memory_id or got.memory_id  # a failed read's reply names it too
            job = model.enqueue(ns, mid, image, caption)
            model.process_all()
            if SAYS[image] is None:
                assert (got.decision, got.processing) == (
                    GateDecision.REJECTED,
                    ProcessingState.FAILED,
                ), got
                assert got.memory_id == mid and got.reason == FAILED_NOTE, got
                event("a waited read failed")
            else:
                assert (got.decision, got.processing) == (
                    GateDecision.STORED,
                    ProcessingState.READY,
                ), got
                assert got.memory_id == mid != "", got
            return job.key
        idle = model.taken is None
        got = self.rig.remember(ns, image, caption, False, memory_id)
        assert (got.decision, got.processing) == (
            GateDecision.STORED,
            ProcessingState.PROCESSING,
        ), got
        assert got.memory_id != "" and (not memory_id or got.memory_id == memory_id), got
        job = model.enqueue(ns, got.memory_id, image, caption)
        if idle:
            self.rig.at_gate()  # the worker now holds it
        return job.key

    def _merged(
        self, ns: str, image: str, caption: str, wait: bool, queued: list[str], held: list[str]
    ) -> Key:
        """The same image, no memory_id, in a namespace that holds it: merged into the job
        still reading it (its reply says PROCESSING, even for a waited write) or into the item
        that holds it; nothing is queued or written."""
        got = self.rig.remember(ns, image, caption, wait)
        assert got.decision == GateDecision.MERGED, got
        if queued:
            assert got.memory_id in queued and got.processing == ProcessingState.PROCESSING, got
            event("merged into a job still reading the image")
        else:
            assert got.memory_id in held and got.processing == ProcessingState.READY, got
            event("merged into the memory that holds the image")
        return (ns, got.memory_id)

    @rule(
        target=ids,
        ns=st.sampled_from(NAMESPACES),
        image=st.sampled_from(IMAGES),
        caption=st.sampled_from(CAPTIONS),
        wait=st.booleans(),
    )
    def remember(self, ns: str, image: str, caption: str, wait: bool) -> Key:
        return self._send(ns, image, caption, wait)

    @rule(
        target=ids,
        ns=st.sampled_from(NAMESPACES),
        image=st.sampled_from(IMAGES),
        caption=st.sampled_from(CAPTIONS),
        wait=st.booleans(),
        mid=st.sampled_from(CLIENT_IDS),
    )
    def remember_as(self, ns: str, image: str, caption: str, wait: bool, mid: str) -> Key:
        """An upsert of a client's id: its pending job, if any, is replaced."""
        if self.model.pending((ns, mid)) is not None:
            event("a pending job replaced")
        return self._send(ns, image, caption, wait, mid)

    @rule(target=ids, key=ids, caption=st.sampled_from(CAPTIONS), wait=st.booleans())
    def remember_again(self, key: Key, caption: str, wait: bool) -> object:
        """The image of a memory (or of a job) sent again to its namespace, with no id."""
        rec, job = self.model.records.get(key), self.model.pending(key)
        image = rec.image if rec is not None else job.image if job is not None else None
        if image is None:
            return multiple()
        return self._send(key[0], image, caption, wait)

    # -- deletes ----------------------------------------------------------------------------

    def _forget(self, key: Key) -> None:
        want = self.model.forget(key)
        if want is None:
            with pytest.raises(NotFoundError):
                self.rig.engine.forget(key[0], key[1], None)
            return
        assert self.rig.engine.forget(key[0], key[1], None) == want, (key, want)
        if want == 2:
            event("an item forgotten with its OCR text")

    @rule(key=ids)
    def forget(self, key: Key) -> None:
        self._forget(key)

    @rule(key=ids)
    def forget_words(self, key: Key) -> None:
        """The memory of an item's OCR text forgotten alone (the item stays)."""
        self._forget((key[0], words_id(key[1])))

    # -- the queue and restarts -------------------------------------------------------------

    @rule()
    def read_pending(self) -> None:
        """The worker reads every pending job; each becomes READY or FAILED."""
        self.rig.drain()
        self.model.process_all()

    @rule()
    def restart(self) -> None:
        """A clean close with the queue as it is, and a start-up."""
        self.rig.restart()
        resumed = self.rig.media.counts().pending
        assert 0 <= resumed <= len(self.model.jobs), (resumed, self.model.jobs)
        if resumed:
            event("a clean close left jobs to resume")
        self.model.restarted(resumed)
        self._to_gate()

    @rule(before_write=st.booleans())
    def crash(self, before_write: bool) -> None:
        """kill -9 while the worker holds a job (before or after its write)."""
        model = self.model
        taken = model.taken
        if taken is not None and taken in model.jobs:
            event(f"killed {'before' if before_write else 'after'} the write of a job in hand")
            if not before_write:
                model.process(taken)  # written before the kill
        if taken is not None and model.jobs:
            event("killed with jobs pending")
        self.rig.crash(before_write)
        model.restarted(len(model.jobs))
        self._to_gate()

    @rule(image=st.sampled_from(IMAGES))
    def crash_after_a_blob_put(self, image: str) -> None:
        """kill -9 between a write's blob put and its job's: the blob is stray (held by no
        record and no job) until the start-up's sweep removes it."""
        self.rig.media.blobs.put(PNG[image])
        self.rig.crash(before_write=True)
        self.model.restarted(len(self.model.jobs))
        self._to_gate()

    def _to_gate(self) -> None:
        if self.model.taken is not None:
            self.rig.at_gate()

    # -- invariants -------------------------------------------------------------------------

    @invariant()
    def the_engine_holds_the_model(self) -> None:
        self._store_holds_the_model()
        self._get_says_what_the_model_says()
        self._the_blobs_on_disk_are_the_held_ones()
        self._stats_count_the_model()

    def _store_holds_the_model(self) -> None:
        live = self.rig.live()
        model = self.model
        assert set(live) == set(model.records), (
            sorted(set(live) - set(model.records)),
            sorted(set(model.records) - set(live)),
        )
        for key, rec in model.records.items():
            rec.agrees(key, live[key])

    def _get_says_what_the_model_says(self) -> None:
        model = self.model
        for key in sorted(model.known() | model.gone):
            got = self.rig.get(key)
            if key in model.records:
                assert got is not None, key
                model.records[key].agrees(key, got)
            elif (job := model.pending(key)) is not None:
                assert got is not None and got.processing == ProcessingState.PROCESSING, got
                assert got.memory_id == key[1] and got.text == job.caption, (got, job)
                assert got.blob is not None and got.blob.sha256 == SHA[job.image], (got, job)
            elif key in model.failed:
                assert got is not None and got.processing == ProcessingState.FAILED, (key, got)
                assert got.processing_note == FAILED_NOTE, got
            else:
                assert got is None, (key, got)

    def _the_blobs_on_disk_are_the_held_ones(self) -> None:
        held = self.model.held_shas()
        assert blob_files(self.rig.data) == held, (blob_files(self.rig.data), held)
        for name, sha in SHA.items():
            data = self.rig.engine.blob(sha)
            assert data == (PNG[name] if sha in held else None), name

    def _stats_count_the_model(self) -> None:
        stats = self.rig.engine.stats("")
        model = self.model
        want = msgspec.structs.asdict(stats.media)
        assert want == {
            "pending": len(model.jobs),
            "processed": model.read,
            "failed": model.failures,
            "blobs": len(model.held_shas()),
        }, (want, model.jobs)
        counts = {n.namespace: n.record_count for n in stats.namespaces if n.record_count}
        per_ns: dict[str, int] = {}
        for ns, _ in model.records:
            per_ns[ns] = per_ns.get(ns, 0) + 1
        assert counts == per_ns, (counts, per_ns)


def test_media_memory_agrees_with_its_model() -> None:
    run_state_machine(MediaMachine, 25, 20)


@pytest.mark.slow
def test_media_memory_agrees_with_its_model_long() -> None:
    run_state_machine(MediaMachine, 200, 20)


# -- what the model is lenient about, checked exactly ---------------------------------------------


@pytest.fixture
def rig() -> Iterator[Rig]:
    r = Rig()
    yield r
    r.close()


def test_a_forgotten_failure_stays_forgotten_across_a_restart(rig: Rig) -> None:
    got = rig.remember("f", "poison", "", False)
    rig.drain()
    key = ("f", got.memory_id)
    before = rig.get(key)
    assert before is not None and before.processing == ProcessingState.FAILED, before
    assert rig.engine.forget(key[0], key[1], None) == 1  # Get showed it: Forget finds it
    assert rig.get(key) is None
    rig.restart()
    assert rig.get(key) is None


def test_an_item_resent_under_its_id_keeps_no_words_of_the_old_image(rig: Rig) -> None:
    with rig.reading():
        first = rig.remember("u", "error", CAPTIONS[1], True, "c1")
    assert first.processing == ProcessingState.READY, first
    assert set(rig.live()) == {("u", "c1"), ("u", words_id("c1"))}
    with rig.reading():
        again = rig.remember("u", "blank", "", True, "c1")
    assert again.processing == ProcessingState.READY, again
    old_words = SAYS["error"]
    assert old_words
    left = {k: r.text for k, r in rig.live().items() if old_words in r.text}
    assert left == {}, left
