"""The typed client's `Task`: a budget in a few lines, retries that never charge twice."""

from __future__ import annotations

import asyncio

import grpc
import pytest

from pocketd import Client
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
