"""Regression tests for issue 17's findings that are not about tenants (tests/security is):
each failed on the code before its fix."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from pathlib import Path
from typing import Any

import grpc
import msgspec
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from pocketd.v1 import agent_service_pb2 as apb
from pocketd.v1 import ledger_service_pb2 as lpb
from server.adapters.onnx_encoder import OnnxTextEncoder
from server.api.calls import CallRunner, Lane, WorkerPools
from server.config import ConfigError, check
from server.core.deadline import Deadline
from server.core.errors import ResourceExhaustedError
from server.core.settings import AgentSettings, ServerSettings
from tests.api.test_memory_api import expect, violations
from tests.api.test_step_api import SEARCH, open_task, stubs
from tests.conftest import RunningServer, make_settings, start_server, stop_server


async def test_step_texts_have_the_limits_of_what_they_feed(server: RunningServer) -> None:
    agent, led = stubs(server)
    await open_task(led, "big")
    for field in ("observation", "input", "goal"):
        req = apb.StepRequest(task_id="big", round=1, goal="Help")
        setattr(req, field, "x" * (1 << 20))  # 1 MiB: was a 1 MiB query and memory
        err = await expect(agent.Step(req), grpc.StatusCode.INVALID_ARGUMENT)
        assert field in violations(err)
    # At the limit it is taken, and its Recall's query is cut to limits.max_query_chars.
    asked: list[int] = []
    real = server.engine.recall

    def recall(q: Any, *args: Any, **kwargs: Any) -> Any:
        asked.append(len(q.text))
        return real(q, *args, **kwargs)

    server.engine.recall = recall  # type: ignore[method-assign, assignment]
    fine = await agent.Step(
        apb.StepRequest(task_id="big", round=1, goal="Help", input="Where is my order? " * 1700)
    )
    assert fine.budget.task_id == "big"
    assert asked and max(asked) == 4096  # 32,300 characters asked as their first 4,096


async def test_a_long_task_keeps_a_bounded_window(server: RunningServer) -> None:
    agent, led = stubs(server)
    await open_task(led, "long")
    for n in range(1, 101):
        await agent.Step(
            apb.StepRequest(
                task_id="long",
                round=n,
                goal="Keep going",
                previous_action_json='{"type":"tool","tool":"search"}',
                observation=f"round {n - 1} looked at page {n - 1}",
            )
        )
    (session,) = server.loop._sessions.values("default")
    assert len(session.turns) <= 64 and min(t.round for t in session.turns) >= 100 - 64
    assert len(session.noted) <= 64 and len(session.inputs) <= 64


async def test_health_has_a_status_for_every_service(server: RunningServer) -> None:
    stub = health_pb2_grpc.HealthStub(grpc.aio.insecure_channel(server.target))
    for name in (
        "",
        "pocketd.v1.MemoryService",
        "pocketd.v1.LedgerService",
        "pocketd.v1.AgentService",
    ):
        got = await stub.Check(health_pb2.HealthCheckRequest(service=name))
        assert got.status == health_pb2.HealthCheckResponse.SERVING, name


async def test_a_client_key_like_a_steps_own_does_not_break_its_step_down(
    server: RunningServer,
) -> None:
    agent, led = stubs(server)
    await open_task(led, "keys")
    await led.Reserve(
        lpb.ReserveRequest(
            task_id="keys",
            round=1,
            kind=lpb.SPEND_KIND_MODEL_INPUT_TOKENS,
            estimate_micros=1,
            idempotency_key="step:3:loop",  # what round 3's loop step-down used as its key
        )
    )
    raw = '{"type":"tool","tool":"search","params":{"q":"x"}}'
    base = apb.StepRequest(task_id="keys", goal="Find order x", tools_json=[json.dumps(SEARCH)])
    for n in range(1, 4):
        base.round, base.raw_model_output = n, raw
        out = await agent.Step(base)
    assert any("the same action 3 times" in w for w in out.warnings)


async def test_a_step_batch_past_its_deadline_answers_what_ran(
    tmp_path: Path, encoder: OnnxTextEncoder
) -> None:
    settings = make_settings(tmp_path / "srv")
    settings = msgspec.structs.replace(
        settings, server=msgspec.structs.replace(settings.server, max_call_seconds=0.5)
    )
    srv, executor = await start_server(tmp_path / "srv", encoder, settings)
    try:
        real = srv.loop.step

        def slow(*args: Any) -> Any:
            time.sleep(0.05)
            return real(*args)

        srv.loop.step = slow
        agent, led = stubs(srv)
        await open_task(led, "b")
        use = [apb.ModelUsage(model="fast_small_model", input_tokens=1000)]
        steps = [
            apb.StepRequest(task_id="b", round=n, goal="Help", usage=use, idempotency_key=f"k{n}")
            for n in range(1, 65)
        ]
        out = await agent.StepBatch(apb.StepBatchRequest(steps=steps), timeout=60)
        ran = [r for r in out.results if r.HasField("response")]
        cut = [r for r in out.results if r.error.code == "DEADLINE_EXCEEDED"]
        assert ran and cut and len(ran) + len(cut) == 64
        assert all(r.HasField("response") for r in out.results[: len(ran)])  # in order
        status = await led.Status(lpb.TaskStatusRequest(task_id="b"))
        # What ran was charged and is answered; what was cut booked nothing.
        assert status.spent_micros == ran[-1].response.budget.spent_micros > 0
    finally:
        await stop_server(srv, executor)


async def test_the_call_log_says_deadline_exceeded_once_the_work_stopped(
    server: RunningServer, caplog: pytest.LogCaptureFixture
) -> None:
    agent, led = stubs(server)
    await open_task(led, "slow")
    gate = threading.Event()
    real = server.loop.step
    deadlines: list[Deadline] = []

    def held(r: Any, deadline: Deadline) -> Any:
        deadlines.append(deadline)
        gate.wait(60)
        # The server's deadline began a little after the client's: the work goes on only once
        # its own has passed too, or it could finish inside it (it did, on a loaded machine).
        stop = time.monotonic() + 60
        while deadline.remaining() > 0 and time.monotonic() < stop:
            time.sleep(0.01)
        return real(r, deadline)

    def logged() -> list[logging.LogRecord]:  # this call's line, by its request id: another
        # test's server in this process may log a Step of its own meanwhile
        return [r for r in caplog.records if "rid=slow-step" in r.getMessage()]

    server.loop.step = held
    caplog.set_level(logging.INFO, logger="pocketd.calls")
    try:
        await expect(
            agent.Step(
                apb.StepRequest(task_id="slow", round=1, goal="Help"),
                timeout=0.3,
                metadata=(("x-request-id", "slow-step"),),
            ),
            grpc.StatusCode.DEADLINE_EXCEEDED,
        )
        # The server has seen the call go (its work's deadline is cancelled) and put the log
        # line off while the work still runs: only then does an empty log say something.
        for _ in range(2400):  # a generous deadline: 120 s (the server shares this event loop)
            if deadlines and deadlines[0].cancelled:
                break
            await asyncio.sleep(0.05)
        assert deadlines and deadlines[0].cancelled
        assert logged() == []  # the work still runs: not logged as if it had stopped
    finally:
        gate.set()
    for _ in range(2400):
        if logged():
            break
        await asyncio.sleep(0.05)
    (line,) = logged()
    assert "status=DEADLINE_EXCEEDED" in line.getMessage()


def test_an_idle_tenant_is_admitted_when_others_fill_the_lane() -> None:
    pools = WorkerPools(2, 1, agent_threads=2, spare_one=True)
    runner = CallRunner(ServerSettings(max_concurrent_calls=4), pools, tenants=3)
    try:
        for tenant in ("a", "a", "b", "b"):
            runner.admit(Lane.READ, tenant)
        with pytest.raises(ResourceExhaustedError):
            runner.admit(Lane.READ, "a")  # the lane is full, and a has calls in it
        runner.admit(Lane.READ, "c")  # c has none: one call always gets in
    finally:
        pools.shutdown()


def test_a_step_batch_counts_as_its_steps_and_pools_are_apart() -> None:
    pools = WorkerPools(2, 1, agent_threads=2, spare_one=True)
    runner = CallRunner(ServerSettings(max_calls_per_tenant=32), pools, tenants=2)
    try:
        runner.admit(Lane.AGENT, "a", 1)
        with pytest.raises(ResourceExhaustedError) as info:
            runner.admit(Lane.AGENT, "a", 32)  # a StepBatch of 32 beside a Step
        assert info.value.limit == "server.max_calls_per_tenant"
        runner.admit(Lane.AGENT, "b", 64)  # another tenant, nothing in flight: admitted
        runner.admit(Lane.READ, "a", 1)  # reads are counted apart
        gate = threading.Event()
        busy = [pools.agent.submit_for("a", gate.wait, 60) for _ in range(4)]
        done = pools.read.submit_for("b", lambda: "read")
        assert done.result(timeout=60) == "read"  # agent work never holds a read's worker
        gate.set()
        for f in busy:
            f.result(timeout=60)
    finally:
        pools.shutdown()


def test_an_import_never_holds_a_remembers_slot_or_worker() -> None:
    """The soak's finding: single Remembers shared the niced write lane with imports, and
    starved. Bulk writes have a lane, a bound and a pool of their own."""
    pools = WorkerPools(2, 1)
    runner = CallRunner(ServerSettings(max_concurrent_calls=2), pools)
    try:
        runner.admit(Lane.BULK, "a")
        runner.admit(Lane.BULK, "a")
        with pytest.raises(ResourceExhaustedError):
            runner.admit(Lane.BULK, "a")  # the bulk lane is full
        runner.admit(Lane.WRITE, "a")  # a Remember still gets in
        gate = threading.Event()
        busy = pools.bulk.submit_for("a", gate.wait, 60)
        done = pools.write.submit_for("a", lambda: "remembered")
        assert done.result(timeout=60) == "remembered"  # not queued behind the import
        gate.set()
        busy.result(timeout=60)
    finally:
        pools.shutdown()


def test_routes_must_name_every_tier(tmp_path: Path) -> None:
    base = make_settings(tmp_path)
    routes = dict(base.agent.routes)
    del routes["vision"]
    partial = msgspec.structs.replace(base, agent=AgentSettings(routes=routes))
    with pytest.raises(ConfigError, match=r"agent\.routes.*missing: vision"):
        check(partial)
