"""The agent loop's memory writer on a real engine: queued writes land in batches under their
chosen ids, a bad memory does not lose the others, backpressure writes on the call, and close
writes what is queued."""

from __future__ import annotations

import pytest

from server.core.agent.memory_writer import MemoryWriter
from server.core.errors import NotFoundError
from server.core.memory.engine import MemoryEngine
from server.core.memory.model import Kind, NewMemory, Record, WriteHints


def item(n: int, text: str | None = None, blob: bytes | None = None) -> NewMemory:
    rec = Record(
        memory_id=f"m-{n}",
        namespace="ns",
        kind=Kind.OBSERVATION,
        text=f"Ticket T-{n} was fixed by clearing cache number {n}." if text is None else text,
        importance=4,
        blob=blob,
    )
    return NewMemory(rec, None, hints=WriteHints(remember=True), client_memory_id=True)


def stored(engine: MemoryEngine, n: int) -> str:
    return engine.get("ns", f"m-{n}", False)[0].text


def test_queued_writes_land_under_their_ids(engine: MemoryEngine) -> None:
    w = MemoryWriter(engine)
    for n in range(40):
        w.submit(item(n), f"gist {n}." if n % 2 else "")
    assert w.flush(timeout=120)
    assert w.pending() == 0
    assert all(stored(engine, n).startswith(f"Ticket T-{n} ") for n in range(40))
    w.close()


def test_a_bad_memory_does_not_lose_the_rest_of_its_batch(engine: MemoryEngine) -> None:
    w = MemoryWriter(engine)
    w.submit(item(1), "")
    w.submit(item(2, text="", blob=b"\x89PNG"), "")  # nothing to encode: refused by the engine
    w.submit(item(3), "")
    assert w.flush(timeout=120)
    assert stored(engine, 1) and stored(engine, 3)
    with pytest.raises(NotFoundError):
        stored(engine, 2)
    w.close()


def test_backpressure_and_close_write_on_the_call(engine: MemoryEngine) -> None:
    w = MemoryWriter(engine, max_pending=0)
    w.submit(item(7), "")  # nothing may queue: written before submit returns
    assert stored(engine, 7)
    w.close()
    w.submit(item(8), "")  # after close: on the call too
    assert stored(engine, 8)
