"""The media queue (server/core/media/intake.py `MediaIntake`) over the real media ledger and blob
store (SQLite, files), with fake readers: an acknowledged medium is durable and PROCESSING until
it is read and written once; backpressure refuses past `media.queue.max_pending`; a Forget
cancels a pending job and lets go of its blob; a new intake over the same ledger resumes what a
crash left pending; a reader that fails leaves the record FAILED with why, across a restart;
`wait` returns when a session's media are done, or False at its limit.

The engine's write path is `Store`, a miniature that upserts by memory_id and tells the blob
keeper which blobs its records hold (as the writer's follower does). Readers that must stay busy
wait at a gate (`GatedOcr`) the test opens: nothing here sleeps for a fixed time.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import msgspec
import pytest

from server.adapters.blob_files import FileBlobStore
from server.adapters.media_decode import PilDecoder
from server.adapters.media_ledger import SqliteMediaLedger
from server.core.deadline import Deadline, no_deadline
from server.core.errors import ResourceExhaustedError
from server.core.media.blobs import BlobKeeper
from server.core.media.intake import MediaIntake
from server.core.media.ports import MediaRejected, Ocr, OcrText, Pixels, Sniffed
from server.core.media.reading import MediaReader
from server.core.memory.changes import Applied
from server.core.memory.model import (
    BLOB_URI,
    GateDecision,
    Kind,
    MediaInput,
    Modality,
    NewMemory,
    ProcessingState,
    Record,
    Tier,
    WriteResult,
)
from server.core.settings import MediaSettings
from tests.conftest import FakeClock, wait_for
from tests.media_fixtures import ColourOcr, GatedOcr, blob_files, media_settings, open_media_engine
from tests.media_fixtures import solid_png as png_of

NS = "desk"
LONG = 60.0  # a deadline no step of these tests comes near, even on a loaded machine
RED, GREEN, BLUE, GREY = (200, 10, 10), (10, 200, 10), (10, 10, 200), (90, 90, 90)
SAYS = {RED: "Error E4012 payment refused", GREEN: "Invoice 7781 paid", BLUE: "Build 55 green"}


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Store:
    """The engine's write path in miniature: each memory upserted by its memory_id (one key per
    id, a new revision per write), the blobs its records hold told to the keeper as the
    writer's follower does. Shared by the intakes of one data directory, as the record store
    outlives a restart."""

    def __init__(self) -> None:
        self.keeper: BlobKeeper | None = None
        self.records: dict[str, Record] = {}
        self.writes: list[str] = []
        self._keys: dict[str, int] = {}
        self._rev = 0

    def write(self, items: list[NewMemory], deadline: Deadline) -> list[WriteResult]:
        assert self.keeper is not None
        applied: list[Applied] = []
        out: list[WriteResult] = []
        for it in items:
            rec = it.record
            key = self._keys.setdefault(rec.memory_id, len(self._keys) + 1)
            self._rev += 1
            stored = msgspec.structs.replace(rec, key=key)
            self.records[rec.memory_id] = stored
            self.writes.append(rec.memory_id)
            applied.append(Applied(self._rev, key, rec.namespace, stored, None))
            out.append(WriteResult(rec.memory_id, GateDecision.STORED, "stored", 3, None, Tier.HOT))
        self.keeper.follow(applied)
        return out


class FailingOcr:
    """An OCR that raises `error` on every read."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    def read(self, image: Pixels) -> OcrText:
        raise self.error


@dataclass
class Kit:
    """One intake over a data directory's media ledger and blob store (one process's life)."""

    data: Path
    intake: MediaIntake
    ledger: SqliteMediaLedger
    blobs: FileBlobStore
    keeper: BlobKeeper
    store: Store
    ocr: Ocr
    resumed: int = 0
    gates: list[GatedOcr] = field(default_factory=list)

    def pending_jobs(self) -> list[str]:
        """The memory_ids of the jobs the ledger holds pending (not failed), oldest first, read
        from the file (the intake closes its ledger when it stops)."""
        ledger = SqliteMediaLedger(self.data / "media.sqlite")
        try:
            return [j.memory_id for j in ledger.jobs() if not j.failed]
        finally:
            ledger.close()

    def close(self) -> None:
        for g in self.gates:
            g.gate.set()
        self.intake.stop()
        self.ledger.close()


def settings(**queue: object) -> MediaSettings:
    """Media settings with one worker, no warm-up, and the queue keys given."""
    base = MediaSettings()
    q = msgspec.structs.replace(base.queue, **{"workers": 1, "warm_up": False, **queue})
    return msgspec.structs.replace(base, queue=q)


@pytest.fixture
def kits() -> Iterator[list[Kit]]:
    """Every kit a test opens, closed at its end (gates opened first)."""
    opened: list[Kit] = []
    yield opened
    for k in opened:
        k.close()


def open_kit(
    kits: list[Kit],
    data: Path,
    ocr: Ocr,
    store: Store | None = None,
    start: bool = True,
    **queue: object,
) -> Kit:
    """An intake over `data` (its ledger and blobs, made anew as a restarted process makes
    them) reading images with `ocr`; `start`: resume the ledger's jobs and start the worker."""
    s = settings(**queue)
    ledger = SqliteMediaLedger(data / "media.sqlite")
    blobs = FileBlobStore(data / "blobs")
    keeper = BlobKeeper(blobs, ledger)
    store = store or Store()
    store.keeper = keeper
    reader = MediaReader(s, PilDecoder(s), ocr, None, None)
    intake = MediaIntake(
        s, reader, blobs, keeper, ledger, FakeClock(), lambda _now: uuid.uuid4().hex
    )
    intake.attach(store.write, None)
    gates = [ocr] if isinstance(ocr, GatedOcr) else []
    kit = Kit(data, intake, ledger, blobs, keeper, store, ocr, gates=gates)
    kits.append(kit)
    if start:
        kit.resumed = intake.start()
    return kit


def image(png: bytes, memory_id: str = "", session: str = "", wait: bool = False) -> NewMemory:
    """A write of an image alone (no caption), as the API makes it."""
    rec = Record(memory_id=memory_id, namespace=NS, kind=Kind.OBSERVATION, session_id=session)
    return NewMemory(record=rec, vector=None, media=MediaInput(png, wait=wait))


def send(kit: Kit, new: NewMemory) -> WriteResult:
    """What the engine does with one write that carries an image: check it, admit it to the
    queue, then queue it."""
    sn = kit.intake.prepare(new, 0)
    assert isinstance(sn, Sniffed) and sn.modality == Modality.IMAGE
    kit.intake.admit(1)
    return kit.intake.enqueue(new, sn, Deadline(LONG))


def drained(kit: Kit) -> None:
    assert kit.intake.wait(NS, "", Deadline(LONG)), "the queue never drained"


def colours() -> ColourOcr:
    return ColourOcr(SAYS)


# -- acknowledged, then read ----------------------------------------------------------------------


def test_an_image_is_durable_and_processing_when_acknowledged_and_written_once_read(
    tmp_path: Path, kits: list[Kit]
) -> None:
    """The acknowledgement comes before the read: the blob is on disk, the job in the ledger,
    Get's view PROCESSING; once read, the memory is written once under the acknowledged id with
    the OCR text, the job is gone and the blob stays (its record holds it)."""
    gated = GatedOcr(colours())
    kit = open_kit(kits, tmp_path, gated)
    png = png_of(RED)
    got = send(kit, image(png, session="s1"))
    assert got.processing == ProcessingState.PROCESSING and got.memory_id
    assert got.decision == GateDecision.STORED and "image/png" in got.reason
    assert blob_files(tmp_path) == {sha(png)}
    assert kit.pending_jobs() == [got.memory_id]
    seen = kit.intake.pending(NS, got.memory_id)
    assert seen is not None and seen.processing == ProcessingState.PROCESSING
    assert seen.blob is not None and seen.blob.uri == f"{BLOB_URI}{sha(png)}"
    assert kit.intake.counts().pending == 1 and kit.store.writes == []

    gated.gate.set()
    drained(kit)
    assert kit.store.writes == [got.memory_id]
    rec = kit.store.records[got.memory_id]
    assert rec.text == SAYS[RED] and rec.modality == Modality.IMAGE
    assert (
        rec.blob is not None and rec.blob.sha256 == sha(png) and rec.blob.mime_type == "image/png"
    )
    assert kit.intake.pending(NS, got.memory_id) is None and kit.pending_jobs() == []
    assert blob_files(tmp_path) == {sha(png)} and kit.keeper.holds(sha(png))
    counts = kit.intake.counts()
    assert (counts.pending, counts.processed, counts.failed, counts.blobs) == (0, 1, 0, 1)


def test_a_write_that_waits_gets_the_outcome_of_its_read(tmp_path: Path, kits: list[Kit]) -> None:
    """With `wait`, enqueue answers with what the write did (READY), not PROCESSING."""
    kit = open_kit(kits, tmp_path, colours())
    got = send(kit, image(png_of(GREEN), memory_id="inv-1", wait=True))
    assert got.processing == ProcessingState.READY and got.memory_id == "inv-1"
    assert kit.store.records["inv-1"].text == SAYS[GREEN]


def test_a_write_that_waits_without_a_deadline_gets_its_outcome(
    tmp_path: Path, kits: list[Kit]
) -> None:
    """An in-process write (no deadline, as `MemoryEngine.remember` makes by default) that waits
    gets the outcome of its read like one with a deadline."""
    kit = open_kit(kits, tmp_path, colours())
    new = image(png_of(BLUE), memory_id="build", wait=True)
    sn = kit.intake.prepare(new, 0)
    assert isinstance(sn, Sniffed)
    got = kit.intake.enqueue(new, sn, no_deadline())
    assert got.processing == ProcessingState.READY and got.memory_id == "build"


def test_wait_returns_when_its_sessions_media_are_done_and_false_at_its_deadline(
    tmp_path: Path, kits: list[Kit]
) -> None:
    """`wait` is per namespace and session: another session's or namespace's wait returns True
    at once; the session's own (and "", any session's) returns False at its deadline while its
    medium waits, and True once the medium is written."""
    gated = GatedOcr(colours())
    kit = open_kit(kits, tmp_path, gated)
    got = send(kit, image(png_of(RED), session="s1"))
    assert gated.entered.wait(LONG)
    assert kit.intake.wait(NS, "s2", Deadline(LONG))
    assert kit.intake.wait("elsewhere", "", Deadline(LONG))
    assert not kit.intake.wait(NS, "s1", Deadline(0.2))
    assert not kit.intake.wait(NS, "", Deadline(0.2))
    assert kit.store.writes == []

    outcome: list[bool] = []
    waiter = threading.Thread(
        target=lambda: outcome.append(kit.intake.wait(NS, "s1", Deadline(LONG))), daemon=True
    )
    waiter.start()
    gated.gate.set()
    waiter.join(LONG)
    assert outcome == [True] and kit.store.writes == [got.memory_id]


def test_wait_is_capped_by_recall_wait_seconds(tmp_path: Path, kits: list[Kit]) -> None:
    """A wait with a long deadline still ends at `media.queue.recall_wait_seconds`, False."""
    gated = GatedOcr(colours())
    kit = open_kit(kits, tmp_path, gated, recall_wait_seconds=0.2)
    send(kit, image(png_of(RED), session="s1"))
    assert not kit.intake.wait(NS, "s1", Deadline(LONG))
    assert kit.intake.counts().pending == 1


# -- backpressure ---------------------------------------------------------------------------------


def test_a_full_queue_refuses_with_resource_exhausted_and_stores_nothing(
    tmp_path: Path, kits: list[Kit]
) -> None:
    """With `max_pending` items waiting, `admit` raises ResourceExhaustedError naming the
    setting (the API's RESOURCE_EXHAUSTED with a QuotaFailure); nothing of the refused medium is
    stored; once the queue has room, the same medium is admitted."""
    gated = GatedOcr(colours())
    kit = open_kit(kits, tmp_path, gated, max_pending=2)
    first = send(kit, image(png_of(RED)))
    second = send(kit, image(png_of(GREEN)))
    refused = image(png_of(BLUE))
    assert isinstance(kit.intake.prepare(refused, 0), Sniffed)  # a medium it could read
    with pytest.raises(ResourceExhaustedError) as err:
        kit.intake.admit(1)
    assert err.value.limit == "media.queue.max_pending"
    assert "2" in str(err.value)
    assert blob_files(tmp_path) == {sha(png_of(RED)), sha(png_of(GREEN))}
    assert kit.pending_jobs() == [first.memory_id, second.memory_id]
    assert kit.intake.counts().pending == 2

    gated.gate.set()
    drained(kit)
    again = send(kit, refused)
    assert again.processing == ProcessingState.PROCESSING
    drained(kit)
    assert set(kit.store.writes) == {first.memory_id, second.memory_id, again.memory_id}


def test_a_batch_of_media_is_held_to_max_pending(tmp_path: Path) -> None:
    """Through the engine: a batch of three images into a queue bounded at two is refused
    (RESOURCE_EXHAUSTED, nothing stored), as three single writes would be at the third."""
    data = tmp_path / "data"
    data.mkdir()
    gated = GatedOcr(colours())
    s = media_settings(data, queue={"max_pending": 2, "warm_up": False, "workers": 1})
    engine = open_media_engine(data, None, FakeClock(), s, ocr=gated, speech=None, space=None)
    try:
        batch = [image(png_of(c)) for c in (RED, GREEN, BLUE)]
        with pytest.raises(ResourceExhaustedError):
            engine.remember(batch)
        assert blob_files(data) == set()
    finally:
        gated.gate.set()
        engine.close()


# -- a Forget while pending -----------------------------------------------------------------------


def test_cancelling_a_queued_job_removes_its_job_and_blob_and_it_is_never_read(
    tmp_path: Path, kits: list[Kit]
) -> None:
    """A job waiting behind another is cancelled: `cancel` says True, its job leaves the ledger,
    its blob the disk, Get's view forgets it; the worker skips it (one read, one write); a second
    cancel, or one of an id the queue never held, says False."""
    gated = GatedOcr(colours())
    kit = open_kit(kits, tmp_path, gated)
    ahead = send(kit, image(png_of(RED)))
    assert gated.entered.wait(LONG)  # the worker holds the first at the gate
    behind = send(kit, image(png_of(GREEN)))
    assert kit.intake.cancel(NS, behind.memory_id)
    assert kit.pending_jobs() == [ahead.memory_id]
    assert blob_files(tmp_path) == {sha(png_of(RED))}
    assert kit.intake.pending(NS, behind.memory_id) is None
    assert not kit.intake.cancel(NS, behind.memory_id)
    assert not kit.intake.cancel(NS, "never-sent")
    assert kit.intake.counts().pending == 1

    reads = kit.ocr
    assert isinstance(reads, GatedOcr) and isinstance(reads.inner, ColourOcr)
    gated.gate.set()
    drained(kit)
    assert kit.store.writes == [ahead.memory_id] and reads.inner.reads == 1
    assert not kit.intake.cancel(NS, ahead.memory_id)  # written: Forget erases it in the store
    assert blob_files(tmp_path) == {sha(png_of(RED))} and kit.pending_jobs() == []


def test_a_write_waiting_for_its_reading_is_answered_when_a_forget_cancels_it(
    tmp_path: Path, kits: list[Kit]
) -> None:
    """A Remember with `wait` whose job a Forget cancels answers at once (FAILED, forgotten),
    not at its deadline."""
    gated = GatedOcr(colours())
    kit = open_kit(kits, tmp_path, gated)
    send(kit, image(png_of(RED)))
    assert gated.entered.wait(LONG)  # the worker holds the first at the gate
    new = image(png_of(GREEN), memory_id="waits", wait=True)
    sn = kit.intake.prepare(new, 0)
    assert isinstance(sn, Sniffed)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        answer = pool.submit(kit.intake.enqueue, new, sn, Deadline(LONG))
        wait_for(lambda: kit.intake.pending(NS, "waits") is not None)
        assert kit.intake.cancel(NS, "waits")
        got = answer.result(timeout=LONG / 2)  # well before its own deadline
    assert got.processing == ProcessingState.FAILED and "forgotten" in got.reason
    gated.gate.set()


def test_a_write_waiting_for_its_reading_is_answered_when_its_id_is_sent_again(
    tmp_path: Path, kits: list[Kit]
) -> None:
    """A Remember with `wait` whose queued job a later write of the same id replaces answers at
    once (PROCESSING: the later one is being read), not at its deadline."""
    gated = GatedOcr(colours())
    kit = open_kit(kits, tmp_path, gated)
    send(kit, image(png_of(RED)))
    assert gated.entered.wait(LONG)  # the worker holds the first at the gate
    first = image(png_of(GREEN), memory_id="twice", wait=True)
    sn = kit.intake.prepare(first, 0)
    assert isinstance(sn, Sniffed)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        answer = pool.submit(kit.intake.enqueue, first, sn, Deadline(LONG))
        wait_for(lambda: kit.intake.pending(NS, "twice") is not None)
        again = send(kit, image(png_of(BLUE), memory_id="twice"))
        got = answer.result(timeout=LONG / 2)  # well before its own deadline
    assert got.processing == ProcessingState.PROCESSING and "replaced" in got.reason
    assert again.memory_id == got.memory_id == "twice"
    gated.gate.set()
    drained(kit)
    assert blob_files(tmp_path) == {sha(png_of(RED)), sha(png_of(BLUE))}


def test_cancelling_a_job_while_it_is_read_keeps_its_write_from_happening(
    tmp_path: Path, kits: list[Kit]
) -> None:
    """The job the worker is reading is cancelled: its blob goes at once, and when the read ends
    nothing is written and nothing counted as failed."""
    gated = GatedOcr(colours())
    kit = open_kit(kits, tmp_path, gated)
    got = send(kit, image(png_of(BLUE)))
    assert gated.entered.wait(LONG)
    assert kit.intake.cancel(NS, got.memory_id)
    assert blob_files(tmp_path) == set() and kit.ledger.jobs() == []
    gated.gate.set()
    later = send(kit, image(png_of(RED)))  # behind it on the one worker: the read has ended
    drained(kit)
    assert kit.store.writes == [later.memory_id]
    assert kit.intake.counts().failed == 0
    assert blob_files(tmp_path) == {sha(png_of(RED))}


def test_the_same_id_sent_again_while_it_waits_is_read_once_as_the_last_one(
    tmp_path: Path, kits: list[Kit]
) -> None:
    """A memory_id sent twice while the first waits: the last one wins; the first's job and blob
    go without a read."""
    gated = GatedOcr(colours())
    kit = open_kit(kits, tmp_path, gated)
    ahead = send(kit, image(png_of(GREY)))
    assert gated.entered.wait(LONG)
    send(kit, image(png_of(RED), memory_id="shot"))
    send(kit, image(png_of(BLUE), memory_id="shot"))
    assert kit.pending_jobs() == [ahead.memory_id, "shot"]
    assert sha(png_of(RED)) not in blob_files(tmp_path)
    gated.gate.set()
    drained(kit)
    assert kit.store.writes == [ahead.memory_id, "shot"]
    assert kit.store.records["shot"].text == SAYS[BLUE]


# -- a crash and a restart ------------------------------------------------------------------------


def test_a_new_intake_over_the_same_ledger_resumes_what_a_crash_left_pending(
    tmp_path: Path, kits: list[Kit]
) -> None:
    """Three images acknowledged by a process that never read them (killed), and a stray blob a
    crash between a put and its job left: the next process's intake resumes the three (Get's
    view PROCESSING meanwhile), removes the stray blob, and writes each once under its
    acknowledged id; their blobs stay, held by their records."""
    crashed = open_kit(kits, tmp_path, colours(), start=False)  # its worker never ran
    pngs = [png_of(c) for c in (RED, GREEN, BLUE)]
    acked = [send(crashed, image(p)).memory_id for p in pngs]
    stray = crashed.blobs.put(png_of(GREY))
    crashed.ledger.close()
    kits.remove(crashed)

    gated = GatedOcr(colours())
    kit = open_kit(kits, tmp_path, gated)
    assert kit.resumed == 3
    assert blob_files(tmp_path) == {sha(p) for p in pngs}  # the sweep removed the stray
    assert stray not in blob_files(tmp_path)
    for mid in acked:
        seen = kit.intake.pending(NS, mid)
        assert seen is not None and seen.processing == ProcessingState.PROCESSING
    assert kit.intake.counts().pending == 3

    gated.gate.set()
    drained(kit)
    assert sorted(kit.store.writes) == sorted(acked)  # each once
    assert [kit.store.records[m].text for m in acked] == [SAYS[c] for c in (RED, GREEN, BLUE)]
    assert kit.pending_jobs() == [] and blob_files(tmp_path) == {sha(p) for p in pngs}

    again = open_kit(kits, tmp_path, colours(), store=kit.store)  # nothing left to resume
    assert again.resumed == 0 and blob_files(tmp_path) == {sha(p) for p in pngs}


def test_a_job_written_before_a_crash_but_not_finished_upserts_the_same_memory(
    tmp_path: Path, kits: list[Kit]
) -> None:
    """A crash between a job's write and its finish (the job still in the ledger): the resumed
    job writes the same id again, an upsert, so there is one record, and its blob stays."""
    gated = GatedOcr(colours())
    kit = open_kit(kits, tmp_path, gated)
    got = send(kit, image(png_of(RED)))
    [job] = kit.ledger.jobs()
    gated.gate.set()
    drained(kit)
    kit.close()
    kits.remove(kit)
    ledger = SqliteMediaLedger(tmp_path / "media.sqlite")
    ledger.add(job)  # as if the finish had not committed
    ledger.close()

    again = open_kit(kits, tmp_path, colours(), store=kit.store)
    assert again.resumed == 1
    drained(again)
    assert kit.store.writes == [got.memory_id, got.memory_id]
    assert list(kit.store.records) == [got.memory_id]
    assert again.pending_jobs() == [] and blob_files(tmp_path) == {sha(png_of(RED))}
    assert again.keeper.holds(sha(png_of(RED)))


def test_stop_ends_after_the_job_in_hand_and_the_rest_resume_at_the_next_start(
    tmp_path: Path, kits: list[Kit]
) -> None:
    """Three jobs, the first being read when `stop` is called: the worker stops after it, the
    other two stay pending in the ledger, and the next intake resumes and writes them."""
    gated = GatedOcr(colours())
    kit = open_kit(kits, tmp_path, gated)
    acked = [send(kit, image(png_of(c))).memory_id for c in (RED, GREEN, BLUE)]
    assert gated.entered.wait(LONG)
    stopper = threading.Thread(target=kit.intake.stop, daemon=True)
    stopper.start()
    # The stop is requested before the read in hand ends (the queue is private: what else says
    # that `stop` has begun?).
    wait_for(lambda: kit.intake._queue.qsize() >= 3, LONG)
    gated.gate.set()
    stopper.join(LONG)
    assert not stopper.is_alive()
    assert kit.store.writes == acked[:1]
    assert kit.pending_jobs() == acked[1:]

    again = open_kit(kits, tmp_path, colours(), store=kit.store)
    assert again.resumed == 2
    drained(again)
    assert kit.store.writes == acked


# -- a reader that fails --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "note"),
    [
        (RuntimeError("the model crashed"), "reading the medium failed: RuntimeError"),
        (MediaRejected("the image cannot be read", "image/png"), "(detected type: image/png)"),
    ],
)
def test_a_failing_reader_leaves_the_record_failed_with_why_across_a_restart(
    tmp_path: Path, kits: list[Kit], error: Exception, note: str
) -> None:
    """A read that raises: nothing is written, the record is FAILED with a note saying why (in
    Get's view and in the ledger), the failure is counted, the blob goes (no one holds it); the
    next process still says FAILED with the same note and resumes nothing; the same id sent
    again is read afresh."""
    kit = open_kit(kits, tmp_path, FailingOcr(error))
    got = send(kit, image(png_of(RED), memory_id="broken", session="s1"))
    drained(kit)
    seen = kit.intake.pending(NS, "broken")
    assert seen is not None and seen.processing == ProcessingState.FAILED
    assert note in seen.processing_note and seen.session_id == "s1"
    assert got.memory_id == "broken" and kit.store.writes == []
    [job] = kit.ledger.jobs()
    assert note in job.failed and job.spec == b""
    counts = kit.intake.counts()
    assert (counts.pending, counts.processed, counts.failed, counts.blobs) == (0, 0, 1, 0)
    assert blob_files(tmp_path) == set()
    kit.close()
    kits.remove(kit)

    again = open_kit(kits, tmp_path, colours(), store=kit.store)
    assert again.resumed == 0
    seen = again.intake.pending(NS, "broken")
    assert seen is not None and seen.processing == ProcessingState.FAILED
    assert note in seen.processing_note

    send(again, image(png_of(RED), memory_id="broken"))
    drained(again)
    assert again.store.records["broken"].text == SAYS[RED]
    assert again.intake.pending(NS, "broken") is None


def test_a_job_whose_blob_vanished_fails_with_a_note(tmp_path: Path, kits: list[Kit]) -> None:
    """A pending job whose blob file is gone at its read fails, saying so, instead of stopping
    the queue; the next job is read."""
    crashed = open_kit(kits, tmp_path, colours(), start=False)
    lost = send(crashed, image(png_of(RED)))
    crashed.ledger.close()
    kits.remove(crashed)
    (tmp_path / "blobs" / sha(png_of(RED))[:2] / sha(png_of(RED))).unlink()

    kit = open_kit(kits, tmp_path, colours())
    ok = send(kit, image(png_of(GREEN)))
    drained(kit)
    seen = kit.intake.pending(NS, lost.memory_id)
    assert seen is not None and seen.processing == ProcessingState.FAILED
    assert "blob is missing" in seen.processing_note
    assert kit.store.writes == [ok.memory_id]
