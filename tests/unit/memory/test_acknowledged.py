"""The engine's intake of acknowledged memories on a real engine and its own file: queued writes
land in batches under their chosen ids, a bad memory does not hold back the others and stays
kept, what was kept is written again after a restart (also what an older ledger file kept),
backpressure writes on the call, close writes what is queued, and the engine's own calls read
what was acknowledged."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

import msgspec
import pytest

from server.adapters.acknowledged_file import SqliteAcknowledgedStore
from server.adapters.sqlite_ledger import SqliteLedgerStore
from server.app import keep_acknowledged
from server.core.deadline import Deadline
from server.core.engine import MemoryEngine
from server.core.errors import DeadlineExceededError, NotFoundError
from server.core.memory.acknowledged import Kept, MemoryWriter, Pending
from server.core.memory.model import Blob, Kind, MemoryFilter, RecallQuery, Record
from tests.conftest import make_settings


def pending(n: int, text: str | None = None, blob: Blob | None = None) -> Pending:
    rec = Record(
        memory_id=f"m-{n}",
        namespace="ns",
        kind=Kind.OBSERVATION,
        text=f"Ticket T-{n} was fixed by clearing cache number {n}." if text is None else text,
        importance=4,
        blob=blob,
    )
    return Pending(rec, f"gist {n}." if n % 2 else "")


def stored(engine: MemoryEngine, n: int) -> str:
    return engine.get("ns", f"m-{n}", False)[0].text


def kept(tmp: Path, batch: list[Pending]) -> tuple[SqliteAcknowledgedStore, Kept]:
    store = SqliteAcknowledgedStore(tmp / "acknowledged.sqlite3")
    pw = Kept(store)
    pw.keep(batch)
    return store, pw


def writer(engine: MemoryEngine, **kw: Any) -> MemoryWriter:
    return MemoryWriter(engine.encode, engine.remember, **kw)


def test_kept_writes_land_under_their_ids_and_are_dropped(
    engine: MemoryEngine, tmp_path: Path
) -> None:
    batch = [pending(n) for n in range(40)]
    store, pw = kept(tmp_path, batch)
    assert [p.record.memory_id for p in pw.load()] == [f"m-{n}" for n in range(40)]
    w = writer(engine, written=pw.done)
    for p in batch:
        w.submit(p)
    assert w.flush(timeout=120)
    assert all(stored(engine, n).startswith(f"Ticket T-{n} ") for n in range(40))
    w.close()
    assert len(pw.load()) == 40  # the drops wait for the next transaction, or the flush
    pw.flush()
    assert pw.load() == []  # written: their kept copies are gone
    store.close()


def test_a_bad_memory_does_not_hold_back_its_batch_and_stays_kept_for_the_next_start(
    engine: MemoryEngine, tmp_path: Path
) -> None:
    bad = pending(2, text="", blob=Blob("file:///shot.png", "image/png"))  # nothing to encode
    store, pw = kept(tmp_path, [pending(1), bad, pending(3)])
    w = writer(engine, written=pw.done)
    for p in pw.load():
        w.submit(p)
    assert w.flush(timeout=120)
    w.close()
    pw.flush()
    assert stored(engine, 1) and stored(engine, 3)
    with pytest.raises(NotFoundError):
        stored(engine, 2)
    store.close()
    again = Kept(SqliteAcknowledgedStore(tmp_path / "acknowledged.sqlite3"))  # a restart
    assert [p.record.memory_id for p in again.load()] == ["m-2"]


def test_backpressure_and_close_write_on_the_call(engine: MemoryEngine) -> None:
    w = writer(engine, max_pending=0)
    w.submit(pending(7))  # nothing may queue: written before submit returns
    assert stored(engine, 7)
    w.close()
    w.submit(pending(8))  # after close: on the call too
    assert stored(engine, 8)


def test_start_up_writes_again_only_what_the_store_never_had(
    engine: MemoryEngine, tmp_path: Path
) -> None:
    gone = pending(1)
    (res,) = engine.remember([gone.item()])  # written before the crash, forgotten since
    assert engine.forget("ns", res.memory_id, None) == 1
    store, pw = kept(tmp_path, [gone, pending(2)])
    known = lambda p: engine.known(p.record.namespace, p.record.memory_id)  # noqa: E731
    again, there, given_up = pw.sort_out(known, max_replays=2)
    assert [p.record.memory_id for p in again] == ["m-2"] and (there, given_up) == (1, 0)
    assert [(p.record.memory_id, p.replays) for p in pw.load()] == [("m-2", 1)]
    pw.sort_out(known, max_replays=2)  # m-2 fails to be written, start after start
    assert pw.sort_out(known, max_replays=2)[2] == 1  # then it is given up (and logged)
    assert pw.load() == []
    with pytest.raises(NotFoundError):
        stored(engine, 1)  # the Forget stays
    store.close()


def on(ns: str, n: int) -> Pending:
    p = pending(n)
    p.record = msgspec.structs.replace(p.record, namespace=ns, memory_id=f"{ns}-{n}")
    return p


def test_settle_writes_its_own_namespace_on_the_call_and_waits_for_no_other(
    engine: MemoryEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Namespace a's batch is stuck in the writer thread; b's settle takes b's queued memory,
    writes it on the call and returns, and a's settle waits for a's batch (its deadline says
    so), which a later write in a never extends."""
    w = writer(engine)
    gate, inside = threading.Event(), threading.Event()
    real = w._remember

    def held(batch: list[Pending]) -> None:
        if any(p.record.namespace == "a" for p in batch):
            inside.set()
            gate.wait(120)
        real(batch)

    monkeypatch.setattr(w, "_remember", held)
    try:
        w.submit(on("a", 1))
        assert inside.wait(120)  # the thread is writing a's batch
        w.submit(on("b", 2))
        w.settle("b", Deadline(60))
        assert engine.get("b", "b-2", False)[0].text.startswith("Ticket T-2 ")
        with pytest.raises(DeadlineExceededError):
            w.settle("a", Deadline(0.2))  # a's own batch is still being written
        gate.set()
        w.settle("a", Deadline(60))
        assert engine.get("a", "a-1", False)[0].text.startswith("Ticket T-1 ")
    finally:
        gate.set()
        w.close()


def test_the_engines_own_calls_read_what_was_acknowledged(
    engine: MemoryEngine, tmp_path: Path
) -> None:
    """Read-your-writes is the engine's rule: with its writer thread held, a Get (and a List)
    of the namespace writes the acknowledged memory first; a Recall told not to settle does
    not."""
    intake = engine.keep_acknowledged(SqliteAcknowledgedStore(tmp_path / "acknowledged.sqlite3"))
    w: Any = intake._writer
    gate = threading.Event()
    real = w._remember

    def held(batch: list[Pending]) -> None:
        gate.wait(120)
        real(batch)

    w._remember = held
    try:
        engine.acknowledge([pending(5)])
        assert intake.pending() == 1  # queued, held back
        rq = RecallQuery(namespace="ns", text="Ticket T-5 was fixed", top_k=5)
        assert engine.recall(rq, Deadline(60), settle=False).hits == []
        assert stored(engine, 5).startswith("Ticket T-5 ")  # settled on the call
        assert [r.memory_id for r in engine.list("ns", MemoryFilter(), 10, None).records] == ["m-5"]
    finally:
        gate.set()


def test_an_older_ledger_files_kept_memories_are_handed_over_and_written(
    engine: MemoryEngine, tmp_path: Path
) -> None:
    """A ledger file from before the intake kept the Step's memories beside its charges: at
    start-up they move to the intake's file (none lost, none left behind) and are written."""
    path = tmp_path / "ledger.sqlite3"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE pending_memories (memory_id TEXT PRIMARY KEY, body BLOB NOT NULL)")
    for p in (pending(1), pending(2)):
        db.execute(
            "INSERT INTO pending_memories VALUES (?, ?)",
            (p.record.memory_id, msgspec.msgpack.encode(p)),
        )
    db.commit()
    db.close()
    ledger = SqliteLedgerStore(path)
    keep_acknowledged(make_settings(tmp_path), engine, ledger)  # as `pocketd serve` starts
    intake: Any = engine._acknowledged
    assert intake.flush(120)
    assert stored(engine, 1) and stored(engine, 2)
    assert ledger.hand_over_memories(intake.adopt) == 0  # gone from the ledger's file
    ledger.close()
