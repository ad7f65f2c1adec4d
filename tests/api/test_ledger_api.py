"""LedgerService over a real channel to an in-process server: every QuotaFailure subject, field
errors, idempotent retries, and 1,000 concurrent Reserve calls from 16 clients that never
overspend."""

from __future__ import annotations

import asyncio
from pathlib import Path

import grpc
import msgspec
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from pocketd.v1 import ledger_service_pb2 as lpb
from pocketd.v1 import ledger_service_pb2_grpc as lpb_grpc
from tests.api.test_memory_api import expect, violations
from tests.conftest import RunningServer, make_settings, start_server

M = lpb.SPEND_KIND_MODEL_INPUT_TOKENS


def stub(srv: RunningServer) -> lpb_grpc.LedgerServiceStub:
    return lpb_grpc.LedgerServiceStub(grpc.aio.insecure_channel(srv.target))


def quota(err: grpc.aio.AioRpcError) -> list[str]:
    status = rpc_status.from_call(err)  # type: ignore[arg-type]
    assert status is not None
    out = []
    for d in status.details:
        if d.Is(error_details_pb2.QuotaFailure.DESCRIPTOR):
            q = error_details_pb2.QuotaFailure()
            d.Unpack(q)
            out += [v.subject for v in q.violations]
    return out


def reserve(task: str, key: str, amount: int = 0, **kw: object) -> lpb.ReserveRequest:
    base: dict[str, object] = {"kind": M, "round": 1, "estimate_micros": amount}
    base.update(kw)
    return lpb.ReserveRequest(task_id=task, idempotency_key=key, **base)  # type: ignore[arg-type]


async def open_task(s: lpb_grpc.LedgerServiceStub, task: str, **budget: object) -> None:
    await s.OpenTask(
        lpb.OpenTaskRequest(task_id=task, namespace="ns", budget=lpb.TaskBudget(**budget))  # type: ignore[arg-type]
    )


async def test_each_limit_is_resource_exhausted_with_its_quota_subject(
    server: RunningServer,
) -> None:
    s = stub(server)
    tools = {"search": lpb.ToolBudget(max_calls=1, cost_per_call_micros=5)}
    await open_task(s, "t", total_micros=1000, round_micros=100, max_rounds=2, tools=tools)
    await s.Reserve(reserve("t", "a", 90))
    cases = [
        (reserve("t", "b", 20), "round"),
        (reserve("t", "c", 1, round=3), "rounds"),
        (reserve("t", "d", 900, round=2), "total"),
    ]
    for req, subject in cases:
        err = await expect(s.Reserve(req), grpc.StatusCode.RESOURCE_EXHAUSTED)
        assert quota(err) == [subject], req
    tool = reserve("t", "e", kind=lpb.SPEND_KIND_TOOL_CALL, tool="search", round=2)
    r = await s.Reserve(tool)
    assert r.amount_micros == 5
    tool.idempotency_key = "f"
    err = await expect(s.Reserve(tool), grpc.StatusCode.RESOURCE_EXHAUSTED)
    assert quota(err) == ["tool:search"]
    st = await s.Status(lpb.TaskStatusRequest(task_id="t"))
    assert {x.limit for x in st.limits} == {"total", "ordinary", "round", "rounds", "tool:search"}


async def test_bad_ledger_requests_name_the_field(server: RunningServer) -> None:
    s = stub(server)
    err = await expect(
        s.OpenTask(lpb.OpenTaskRequest(task_id="bad id", budget=lpb.TaskBudget())),
        grpc.StatusCode.INVALID_ARGUMENT,
    )
    assert {"task_id", "namespace", "budget.total_micros"} <= set(violations(err))
    err = await expect(
        s.Reserve(lpb.ReserveRequest(task_id="t", kind=lpb.SPEND_KIND_TOOL_CALL)),
        grpc.StatusCode.INVALID_ARGUMENT,
    )
    assert {"idempotency_key", "round", "tool"} <= set(violations(err))
    await expect(s.Status(lpb.TaskStatusRequest(task_id="nope")), grpc.StatusCode.NOT_FOUND)
    huge = lpb.CommitRequest(
        task_id="t", reservation_id="r-1", actual_micros=2**63, idempotency_key="k"
    )
    err = await expect(s.Commit(huge), grpc.StatusCode.INVALID_ARGUMENT)
    assert "above" in violations(err)["actual_micros"]


async def test_a_retried_commit_charges_once(server: RunningServer) -> None:
    s = stub(server)
    await open_task(s, "t", total_micros=1000)
    r = await s.Reserve(reserve("t", "a", 100))
    again = await s.Reserve(reserve("t", "a", 100))
    assert again.reservation_id == r.reservation_id
    commit = lpb.CommitRequest(
        task_id="t", reservation_id=r.reservation_id, actual_micros=80, idempotency_key="c"
    )
    await s.Commit(commit)
    st = await s.Commit(commit)
    assert (st.spent_micros, st.held_micros) == (80, 0)
    bill = await s.CloseTask(lpb.CloseTaskRequest(task_id="t", idempotency_key="close"))
    assert [(k.kind, k.spent_micros) for k in bill.by_kind] == [(M, 80)]


async def test_a_thousand_concurrent_reservations_from_16_clients_never_overspend(
    tmp_path: Path,
) -> None:
    """All in flight at once: the server admits them all (`max_concurrent_calls` raised), and
    only the ledger's transaction decides."""
    base = make_settings(tmp_path)
    settings = msgspec.structs.replace(
        base, server=msgspec.structs.replace(base.server, max_concurrent_calls=2000)
    )
    server, pools = await start_server(tmp_path / "srv", None, settings)
    try:
        await _thousand(server)
    finally:
        await server.grpc.drain(1.0)
        server.engine.close()
        pools.shutdown()


async def _thousand(server: RunningServer) -> None:
    s = stub(server)
    await open_task(s, "hot", total_micros=50_000, emergency_ratio=0.0)
    stubs = [stub(server) for _ in range(16)]

    async def one(i: int) -> int:
        try:
            r = await stubs[i % 16].Reserve(reserve("hot", f"k{i}", 97), timeout=120)
        except grpc.aio.AioRpcError as e:
            assert e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, e.details()
            assert quota(e) == ["total"]
            return 0
        return r.amount_micros

    granted = await asyncio.gather(*(one(i) for i in range(1000)))
    st = await s.Status(lpb.TaskStatusRequest(task_id="hot"))
    assert sum(granted) == st.held_micros <= 50_000
    assert sum(1 for g in granted if g) == 50_000 // 97  # every one that fit was granted
