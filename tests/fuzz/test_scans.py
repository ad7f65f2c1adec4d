"""Scans that a random fuzz does not reach (issue 17): every JSON nesting depth a Step parses,
and error details of every size. Each must answer with a precise status: never INTERNAL, never
a charge booked by a call that failed, never RESOURCE_EXHAUSTED for a bad request (which the
README says to retry)."""

from __future__ import annotations

import grpc
from grpc_status import rpc_status

from pocketd.v1 import agent_service_pb2 as apb
from pocketd.v1 import ledger_service_pb2 as lpb
from pocketd.v1 import memory_pb2 as pb
from pocketd.v1 import memory_service_pb2 as spb
from pocketd.v1 import memory_service_pb2_grpc as spb_grpc
from tests.api.test_memory_api import violations
from tests.api.test_step_api import SEARCH, TOOLS, stubs
from tests.conftest import RunningServer
from tests.fuzz.agent_strategies import nested

DEPTHS = [1, 2, 10, 63, 64, 65, 100, 500, 982, 983, 984, 985, 986, 2000, 20_000]


async def test_every_nesting_depth_is_answered_and_a_refusal_books_nothing(
    server: RunningServer,
) -> None:
    import json

    agent, led = stubs(server)
    budget = lpb.TaskBudget(total_micros=10**9, emergency_ratio=0.0, tools=TOOLS)
    await led.OpenTask(lpb.OpenTaskRequest(task_id="deep", namespace="alice", budget=budget))
    rnd = 0
    for depth in DEPTHS:
        doc = nested(depth)
        for field in ("params", "raw", "schema"):
            rnd += 1
            before = (await led.Status(lpb.TaskStatusRequest(task_id="deep"))).spent_micros
            req = apb.StepRequest(task_id="deep", round=rnd, goal="Find the order")
            if field == "params":
                req.tool_results.add(tool="search", params_json=doc, result="ok")
                req.idempotency_key = f"k{rnd}"
            elif field == "raw":
                req.tools_json.append(json.dumps(SEARCH))
                req.raw_model_output = '{"type":"tool","tool":"search","params":' + doc + "}"
            else:
                req.tools_json.append(
                    '{"name":"search","description":"x","parameters":' + doc + "}"
                )
            try:
                out = await agent.Step(req, timeout=60)
            except grpc.aio.AioRpcError as e:
                assert e.code() == grpc.StatusCode.INVALID_ARGUMENT, (depth, field, e.details())
                assert violations(e), (depth, field)
                after = (await led.Status(lpb.TaskStatusRequest(task_id="deep"))).spent_micros
                assert after == before, (depth, field)  # refused: nothing booked
                continue
            assert depth <= 64 or field == "raw", (depth, field)
            if field == "raw" and depth > 64:  # the action itself is refused, with a reason
                assert out.action_error and not out.action.type


async def test_error_details_of_any_size_stay_invalid_argument(server: RunningServer) -> None:
    mem = spb_grpc.MemoryServiceStub(grpc.aio.insecure_channel(server.target))
    for n, bad in [(n, b) for n in (1, 10, 100, 1024) for b in ("z", "坏")]:
        items = [
            spb.RememberRequest(
                record=pb.MemoryRecord(namespace="bad ns " + bad * 300, kind=99, text="")
            )
            for _ in range(n)
        ]
        try:
            await mem.RememberBatch(spb.RememberBatchRequest(items=items), timeout=60)
        except grpc.aio.AioRpcError as e:
            assert e.code() == grpc.StatusCode.INVALID_ARGUMENT, (n, e.code())
            status = rpc_status.from_call(e)  # type: ignore[arg-type]
            assert status is not None and len(status.SerializeToString()) < 8192
            found = violations(e)
            assert found and (n < 100 or "" in found)  # "": "... and N more violations"
        else:
            raise AssertionError(f"a batch of {n} bad items was accepted")
