"""The blobs' reference counts (server/core/media/blobs.py `BlobKeeper`) over the real blob store
and media ledger: a blob lives while a record or a job holds it, and its file goes with the last
of them; several records (and jobs) share one blob by its sha256; the start-up sweep removes the
files no one holds and keeps the rest; the references are saved with the revision they are
current to, and after a crash `catch_up` replays the record store's changes since, so that the
counts are exact again.

Records are fed as the writer's follower feeds them (`Applied`: a Put with the stored record, an
Erase with none) and replayed as the record store's `changes_since` returns them (`ChangedRow`:
the latest row of each key, a forgotten one with only its key).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import msgspec
import numpy as np
import pytest

from server.adapters.blob_files import FileBlobStore
from server.adapters.media_ledger import SqliteMediaLedger
from server.core.deadline import Deadline
from server.core.media.blobs import BlobKeeper, held_sha
from server.core.media.items import spec_of
from server.core.media.ports import Job
from server.core.memory.changes import Applied
from server.core.memory.model import (
    BLOB_URI,
    Blob,
    Kind,
    MediaInput,
    NewMemory,
    ProcessingState,
    Record,
)
from server.core.memory.ports import ChangedRow
from tests.conftest import DIM, FakeClock
from tests.media_fixtures import (
    ColourOcr,
    blob_files,
    media_settings,
    open_media_engine,
    solid_png,
)

NS = "desk"
LONG = 60.0  # a deadline no step here comes near, even on a loaded machine
A, B, C, D = b"screenshot A", b"screenshot B", b"voice note C", b"photo D"


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def rec(key: int, data: bytes | None, uri: str | None = None) -> Record:
    """A stored record (key `key`) holding the blob of `data` (None: no blob; `uri`: a blob
    pocketd does not hold, only names)."""
    blob = None
    if data is not None:
        blob = Blob(uri or f"{BLOB_URI}{sha(data)}", "image/png", len(data), sha(data))
    return Record(memory_id=f"m{key}", namespace=NS, kind=Kind.OBSERVATION, blob=blob, key=key)


def put(rev: int, key: int, data: bytes | None, uri: str | None = None) -> Applied:
    return Applied(rev, key, NS, rec(key, data, uri), None)


def erase(rev: int, key: int) -> Applied:
    return Applied(rev, key, NS, None, None)


def row(rev: int, key: int, data: bytes | None) -> ChangedRow:
    """A row of `changes_since` for a live record."""
    return ChangedRow(rec(key, data), None, rev, False)


def gone_row(rev: int, key: int) -> ChangedRow:
    """A row of `changes_since` for a forgotten record: its key and ids, no payload."""
    return ChangedRow(
        Record(memory_id=f"m{key}", namespace=NS, kind=Kind.OBSERVATION, key=key), None, rev, True
    )


class Place:
    """A data directory's blob store and media ledger, opened again as a restart opens them."""

    def __init__(self, data: Path) -> None:
        self.data = data
        self.ledgers: list[SqliteMediaLedger] = []
        self.blobs = FileBlobStore(data / "blobs")
        self.ledger = self.reopen_ledger()

    def reopen_ledger(self) -> SqliteMediaLedger:
        self.ledger = SqliteMediaLedger(self.data / "media.sqlite")
        self.ledgers.append(self.ledger)
        return self.ledger

    def keeper(self) -> BlobKeeper:
        """A keeper as a (re)started process makes it: from the ledger's saved references."""
        return BlobKeeper(FileBlobStore(self.data / "blobs"), self.reopen_ledger())

    def store(self, *items: bytes) -> None:
        for data in items:
            self.blobs.put(data)

    def on_disk(self) -> set[str]:
        return blob_files(self.data)

    def close(self) -> None:
        for ledger in self.ledgers:
            ledger.close()


@pytest.fixture
def place(tmp_path: Path) -> Iterator[Place]:
    p = Place(tmp_path)
    yield p
    p.close()


# -- reference counting ---------------------------------------------------------------------------


def test_a_blob_shared_by_several_records_goes_with_the_last_of_them(place: Place) -> None:
    """Three records (of one batch and of later ones) hold one blob: erasing two keeps its file
    and `holds` true; erasing the third removes the file."""
    place.store(A)
    keeper = place.keeper()
    keeper.follow([put(1, 1, A), put(2, 2, A)])
    keeper.follow([put(3, 3, A)])
    assert keeper.count() == 1 and keeper.holds(sha(A))
    keeper.follow([erase(4, 1)])
    keeper.follow([erase(5, 3)])
    assert place.on_disk() == {sha(A)} and keeper.holds(sha(A))
    keeper.follow([erase(6, 2)])
    assert place.on_disk() == set() and not keeper.holds(sha(A)) and keeper.count() == 0


def test_erasing_records_of_one_blob_in_one_batch_removes_it_once(place: Place) -> None:
    """The last references of a blob dropped in one batch remove its file; another blob in the
    same batch, still held, stays."""
    place.store(A, B)
    keeper = place.keeper()
    keeper.follow([put(1, 1, A), put(2, 2, A), put(3, 3, B), put(4, 4, B)])
    keeper.follow([erase(5, 1), erase(6, 2), erase(7, 3)])
    assert place.on_disk() == {sha(B)} and keeper.count() == 1


def test_a_put_that_no_longer_names_the_blob_drops_its_reference(place: Place) -> None:
    """A record rewritten with another blob moves its reference (the old blob goes when no one
    else holds it); one rewritten without a blob, or naming bytes pocketd does not hold, drops
    it; a rewrite naming the same blob changes nothing."""
    place.store(A, B, C)
    keeper = place.keeper()
    keeper.follow([put(1, 1, A), put(2, 2, B), put(3, 3, C)])
    keeper.follow([put(4, 1, A)])  # the same blob again (a tier move, a merge of counts)
    assert place.on_disk() == {sha(A), sha(B), sha(C)}
    keeper.follow([put(5, 1, B)])
    assert place.on_disk() == {sha(B), sha(C)}
    keeper.follow([put(6, 2, None)])
    assert place.on_disk() == {sha(B), sha(C)}  # key 1 still holds B
    keeper.follow([put(7, 3, C, uri="https://example.com/c.ogg")])
    assert place.on_disk() == {sha(B)} and keeper.count() == 1
    assert held_sha(rec(3, C, uri="https://example.com/c.ogg")) is None


def test_a_job_and_a_record_hold_a_blob_together(place: Place) -> None:
    """A blob held by a job and by a record lives until both let go, in either order; a job that
    holds it twice needs two releases."""
    place.store(A, B)
    keeper = place.keeper()
    keeper.hold(sha(A))
    keeper.follow([put(1, 1, A)])
    keeper.release(sha(A))
    assert place.on_disk() == {sha(A), sha(B)} and keeper.holds(sha(A))
    keeper.follow([erase(2, 1)])
    assert sha(A) not in place.on_disk()

    keeper.hold(sha(B))
    keeper.hold(sha(B))
    keeper.follow([put(3, 2, B)])
    keeper.follow([erase(4, 2)])
    assert place.on_disk() == {sha(B)}
    keeper.release(sha(B))
    assert place.on_disk() == {sha(B)} and keeper.count() == 1
    keeper.release(sha(B))
    assert place.on_disk() == set() and keeper.count() == 0


# -- the sweep ------------------------------------------------------------------------------------


def test_the_sweep_removes_the_files_no_one_holds_and_keeps_the_rest(place: Place) -> None:
    """At start-up, with the jobs held: a file held by a record and one held by a job stay; two
    no one holds, and a temporary file a crash left mid-put, go; the count says two."""
    place.store(A, B, C, D)
    tmp = place.data / "blobs" / sha(D)[:2] / f".{sha(D)}.123.456.tmp"
    tmp.write_bytes(D[:3])
    keeper = place.keeper()
    keeper.follow([put(1, 1, A)])
    keeper.hold(sha(B))
    assert keeper.sweep() == 2
    assert place.on_disk() == {sha(A), sha(B)} and not tmp.exists()
    assert keeper.sweep() == 0 and place.on_disk() == {sha(A), sha(B)}


def test_the_references_are_saved_and_a_restarted_keeper_starts_from_them(place: Place) -> None:
    """A new keeper over the same ledger has the revision and the references the last one saved:
    its sweep keeps every held blob, and an Erase it follows removes a blob the other took."""
    place.store(A, B, C)
    first = place.keeper()
    first.follow([put(1, 1, A), put(2, 2, A), put(3, 3, B)])
    first.follow([erase(4, 2)])
    first.follow([put(5, 3, C)])  # B is no longer held: removed then

    again = place.keeper()
    assert again.rev == 5 and again.count() == 2
    assert again.holds(sha(A)) and again.holds(sha(C)) and not again.holds(sha(B))
    assert again.sweep() == 0 and place.on_disk() == {sha(A), sha(C)}
    again.follow([erase(6, 1)])
    assert place.on_disk() == {sha(C)}


# -- catch_up after a crash -----------------------------------------------------------------------


def test_catch_up_replays_the_changes_a_crash_left_unsaved(place: Place) -> None:
    """The record store committed revisions 4 to 7 that the keeper never saved (a kill -9
    between the commit and the follower): a restarted keeper is behind (rev 3); `catch_up` with
    the store's rows since replays them (one record forgotten, one rewritten without its blob,
    one new), removes the blob no one holds any more, keeps the others, and saves the result, so
    the next keeper starts from rev 7; replaying rows again changes nothing."""
    place.store(A, B, C)
    first = place.keeper()
    first.follow([put(1, 1, A), put(2, 2, A), put(3, 3, B)])

    # Crash. What the store holds past rev 3: key 1 forgotten, key 3 rewritten without its blob,
    # key 4 new with C, key 2 untouched (its row is older).
    rows = [gone_row(4, 1), row(6, 3, None), row(7, 4, C)]
    keeper = place.keeper()
    assert keeper.rev == 3 and keeper.holds(sha(B))
    keeper.catch_up(rows)
    assert keeper.rev == 7
    assert keeper.holds(sha(A)) and keeper.holds(sha(C)) and not keeper.holds(sha(B))
    assert place.on_disk() == {sha(A), sha(C)}
    keeper.catch_up(rows)
    assert place.on_disk() == {sha(A), sha(C)} and keeper.count() == 2

    after = place.keeper()
    assert after.rev == 7 and after.count() == 2
    after.follow([erase(8, 2)])
    assert place.on_disk() == {sha(C)}


def test_catch_up_of_rows_without_blobs_changes_nothing(place: Place) -> None:
    """Rows that hold no blob and touch no record that held one leave the counts and the files
    as they were (the engine then moves the keeper's revision past them itself)."""
    place.store(A)
    first = place.keeper()
    first.follow([put(1, 1, A)])
    keeper = place.keeper()
    keeper.catch_up([row(2, 2, None), gone_row(3, 5)])
    assert keeper.rev == 1 and keeper.holds(sha(A)) and place.on_disk() == {sha(A)}


def test_catch_up_at_start_up_keeps_a_blob_a_pending_job_needs(tmp_path: Path) -> None:
    """One image sent twice: a record holds its blob, and the second write of the same bytes is
    acknowledged (its job pending). The record is forgotten and the process killed after the
    store's commit, before the keeper saved the reference's drop (the ledger's refs are put back
    as they were). The restarted engine must keep the blob and read the pending job."""
    data = tmp_path / "data"
    data.mkdir()
    png = solid_png((200, 10, 10))
    s = media_settings(data, queue={"warm_up": False})
    ocr = ColourOcr({(200, 10, 10): "Error E4012 payment refused"})
    vec = np.zeros(DIM, np.float32)
    vec[0] = 1.0

    def shot(namespace: str, memory_id: str) -> NewMemory:
        r = Record(memory_id=memory_id, namespace=namespace, kind=Kind.OBSERVATION)
        return NewMemory(record=r, vector=vec, media=MediaInput(png, wait=True))

    engine = open_media_engine(data, None, FakeClock(), s, ocr=ocr, speech=None, space=None)
    try:
        [first] = engine.remember([shot("a", "first")], Deadline(LONG))
        assert first.processing == ProcessingState.READY, first.reason
        key = engine.get("a", "first", False)[0].key
        assert engine.media is not None
        rev, refs = engine.media.keeper.rev, {key: sha(png)}
        assert engine.forget("a", "first", None) == 1
    finally:
        engine.close()
    # The state a kill -9 leaves: the Erase committed in the store, the refs not yet saved; the
    # second write's blob and job durable (it was acknowledged).
    ledger = SqliteMediaLedger(data / "media.sqlite")
    try:
        ledger.save_refs(rev, refs, [])
        FileBlobStore(data / "blobs").put(png)
        spec = spec_of(shot("b", "second"), "second")
        ledger.add(Job(0, "b", "second", "", sha(png), msgspec.msgpack.encode(spec), 0.0))
    finally:
        ledger.close()

    engine = open_media_engine(data, None, FakeClock(), s, ocr=ocr, speech=None, space=None)
    try:
        assert engine.media is not None
        assert engine.media.wait("b", "", Deadline(LONG))
        got = engine.get("b", "second", False)[0]
        assert got.processing == ProcessingState.READY, got.processing_note
        assert blob_files(data) == {sha(png)}
    finally:
        engine.close()
