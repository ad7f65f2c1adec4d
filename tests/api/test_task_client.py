"""The typed client's `Task`: a budget in a few lines, retries that never charge twice."""

from __future__ import annotations

import asyncio

import grpc
import pytest

from pocketd import AsyncClient, Client
from pocketd.v1 import ledger_service_pb2 as lpb
from tests.conftest import RunningServer


def run(server: RunningServer) -> None:
    budget = lpb.TaskBudget(total_micros=10_000, emergency_ratio=0.0)
    with Client(server.target) as c:
        with c.task("t1", budget, namespace="alice") as t:
            with t.spend("model_input_tokens", 1200) as s:
                s.actual = 1000
            with pytest.raises(RuntimeError), t.spend("tool_call", 500, tool="search"):
                raise RuntimeError("the tool failed")  # the hold is released
            st = t.status()
            assert (st.spent_micros, st.held_micros) == (1000, 0)
            with pytest.raises(grpc.RpcError) as info:
                t.reserve("model_output_tokens", 20_000)
            assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED  # type: ignore[attr-defined]
        assert t.bill is not None and t.bill.status.state == "closed"
        assert [(k.kind, k.spent_micros) for k in t.bill.by_kind] == [
            (lpb.SPEND_KIND_MODEL_INPUT_TOKENS, 1000)
        ]
        # A retry of the same request (same key) is answered, not applied again.
        with c.task("t2", budget, namespace="alice") as t2:
            calls = 0
            real = t2._stub.Commit
            r = t2.reserve("memory", 300)

            def flaky(req: lpb.CommitRequest, timeout: float) -> lpb.TaskStatus:
                nonlocal calls
                calls += 1
                out = real(req, timeout=timeout)
                if calls == 1:  # applied, but the answer is lost on the way back
                    raise _Unavailable()
                return out

            t2._stub.Commit = flaky  # type: ignore[method-assign]
            assert t2.commit(r, 300).spent_micros == 300 and calls == 2


class _Unavailable(grpc.RpcError):  # type: ignore[misc]
    def code(self) -> grpc.StatusCode:
        return grpc.StatusCode.UNAVAILABLE


async def test_a_task_in_a_few_lines(server: RunningServer) -> None:
    await asyncio.to_thread(run, server)


async def test_the_async_task_spends_steps_and_closes(server: RunningServer) -> None:
    budget = lpb.TaskBudget(total_micros=10_000, emergency_ratio=0.0)
    async with AsyncClient(server.target) as c:
        async with c.task("a1", budget, namespace="alice", goal="Where is order 5?") as t:
            async with t.spend("model_input_tokens", 1200) as s:
                s.actual = 700
            with pytest.raises(RuntimeError):
                async with t.spend("tool_call", 500, tool="search"):
                    raise RuntimeError("the tool failed")  # the hold is released
            plan = await t.step(1, input="Where is order 5?")
            assert plan.tier and plan.context.startswith("Goal: Where is order 5?")
            st = await t.status()
            assert st.spent_micros >= 700 and st.held_micros == 0
            assert (await t.raise_budget(5_000)).limits[0].limit_value == 15_000
        assert t.bill is not None and t.bill.status.state == "closed"
