"""What a Step acknowledges is what the store has: the memory ids a Step returns behave like
records from that moment (Get finds them, Forget erases them, a client's upsert wins over the
queued write), and without a text encoder a Step stores nothing and says so.

The engine's intake writes are held back until a call settles the namespace: on code without
the barrier (the engine's read-your-writes), the call would run while the write is queued."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from pocketd.v1 import agent_service_pb2 as apb
from pocketd.v1 import ledger_service_pb2 as lpb
from pocketd.v1 import memory_pb2 as pb
from pocketd.v1 import memory_service_pb2 as spb
from pocketd.v1 import memory_service_pb2_grpc as spb_grpc
from server.adapters.onnx_encoder import OnnxTextEncoder
from server.core.memory.acknowledged import Acknowledged
from tests.api.test_memory_api import expect
from tests.api.test_step_api import open_task, stubs
from tests.conftest import RunningServer, start_server, stop_server

PREFERENCE = "For the record, I prefer to be contacted by SMS only."


def intake(srv: RunningServer) -> Acknowledged:
    """The engine's intake of acknowledged memories."""
    out = srv.engine._acknowledged
    assert out is not None
    return out


@pytest.fixture
async def held(tmp_path: Path, encoder: OnnxTextEncoder) -> AsyncIterator[RunningServer]:
    """A server whose agent-memory writes wait until a MemoryService call settles."""
    srv, executor = await start_server(tmp_path / "srv", encoder)
    writer: Any = intake(srv)._writer
    gate = threading.Event()
    real_remember, real_settle = writer._remember, writer.settle

    def remember(batch: Any) -> None:
        gate.wait(120)
        real_remember(batch)

    def settle(namespace: str, deadline: Any) -> None:
        gate.set()  # the first settle lets the queued writes go
        real_settle(namespace, deadline)

    writer._remember, writer.settle = remember, settle
    yield srv
    gate.set()
    await stop_server(srv, executor)


async def acknowledged(srv: RunningServer, task: str = "ack") -> str:
    agent, led = stubs(srv)
    await open_task(led, task)
    out = await agent.Step(apb.StepRequest(task_id=task, round=1, goal="Help", input=PREFERENCE))
    (mid,) = out.committed_memory_ids
    return mid


async def test_get_finds_what_a_step_acknowledged_at_once(held: RunningServer) -> None:
    mid = await acknowledged(held)
    mem = spb_grpc.MemoryServiceStub(grpc.aio.insecure_channel(held.target))
    got = await mem.Get(spb.GetRequest(namespace="alice", memory_id=mid), timeout=60)
    assert got.record.text == PREFERENCE and got.record.kind == pb.MEMORY_KIND_PREFERENCE


async def test_forget_erases_what_a_step_acknowledged(held: RunningServer) -> None:
    mid = await acknowledged(held)
    mem = spb_grpc.MemoryServiceStub(grpc.aio.insecure_channel(held.target))
    gone = await mem.Forget(
        spb.ForgetRequest(namespace="alice", filter=spb.MemoryFilter(), all=True), timeout=60
    )
    assert gone.forgotten_count >= 1
    intake(held).flush(60)  # nothing queued can bring it back
    await expect(
        mem.Get(spb.GetRequest(namespace="alice", memory_id=mid)), grpc.StatusCode.NOT_FOUND
    )
    listed = await mem.List(spb.ListRequest(namespace="alice"))
    assert mid not in {r.memory_id for r in listed.records}


async def test_a_clients_upsert_wins_over_the_queued_write(held: RunningServer) -> None:
    mid = await acknowledged(held)
    mem = spb_grpc.MemoryServiceStub(grpc.aio.insecure_channel(held.target))
    fixed = "Correction: the user prefers email, not SMS."
    await mem.Remember(
        spb.RememberRequest(
            record=pb.MemoryRecord(
                namespace="alice", memory_id=mid, text=fixed, kind=pb.MEMORY_KIND_PREFERENCE
            ),
            hints=spb.WriteHints(remember=True),
        ),
        timeout=60,
    )
    intake(held).flush(60)
    got = await mem.Get(spb.GetRequest(namespace="alice", memory_id=mid))
    assert got.record.text == fixed


async def test_without_a_text_encoder_a_step_stores_nothing_and_says_so(tmp_path: Path) -> None:
    srv, executor = await start_server(tmp_path / "srv", None)
    try:
        agent, led = stubs(srv)
        await led.OpenTask(
            lpb.OpenTaskRequest(
                task_id="n", namespace="alice", budget=lpb.TaskBudget(total_micros=10**6)
            )
        )
        out = await agent.Step(apb.StepRequest(task_id="n", round=1, goal="Help", input=PREFERENCE))
        assert list(out.committed_memory_ids) == []
        assert any("not stored" in w and "encoder.text: none" in w for w in out.warnings)
        assert intake(srv).pending() == 0
    finally:
        await stop_server(srv, executor)
