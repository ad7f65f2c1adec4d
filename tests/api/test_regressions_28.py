"""Regression tests for issue 28's findings from a fresh clone: each failed on the code before
its fix."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import grpc
import pytest
from google.protobuf.timestamp_pb2 import Timestamp

from pocketd.v1 import agent_service_pb2 as apb
from pocketd.v1 import ledger_service_pb2 as lpb
from pocketd.v1 import memory_service_pb2 as spb
from server.adapters.onnx_encoder import OnnxTextEncoder
from server.api.fields import MAX_SECONDS
from tests.api.test_hardening import wait_for
from tests.api.test_memory_api import expect, record, stub
from tests.api.test_routing_api import NS, routed_server
from tests.api.test_step_api import SEARCH, open_task, stubs
from tests.conftest import RunningServer

# The last instant validation accepts: as a float it rounds up to the first second of year 10000.
LAST = Timestamp(seconds=MAX_SECONDS, nanos=999_999_999)


CUES = ("what happened yesterday", "today", "0 days ago", "this year", "last year")


@pytest.mark.parametrize("text", CUES)
async def test_recall_takes_the_last_instant_as_of(server: RunningServer, text: str) -> None:
    s = stub(server)
    await s.Remember(spb.RememberRequest(record=record(namespace="t28", text="the deploy failed")))
    server.engine.indexer.catch_up()
    query = spb.RecallRequest(namespace="t28", query_text=text, as_of=LAST, min_score=0.0)
    assert len((await s.Recall(query)).hits) == 1


async def test_explain_takes_the_last_instant_as_of(
    tmp_path: Path, encoder: OnnxTextEncoder
) -> None:
    async with routed_server(tmp_path, encoder, policy="heuristic") as r:
        for text in CUES:
            query = spb.RecallRequest(namespace=NS, query_text=text, as_of=LAST)
            resp = await r.stub.Explain(spb.ExplainRequest(recall=query, run=True))
            assert [p.policy for p in resp.policies] == ["full", "heuristic", "learned", "hybrid"]


def calls(caplog: pytest.LogCaptureFixture, method: str) -> list[logging.LogRecord]:
    return [
        r
        for r in caplog.records
        if r.name == "pocketd.calls" and r.fields["method"] == method  # type: ignore[attr-defined]
    ]


async def test_the_call_log_names_the_namespace_of_a_tasks_calls(
    server: RunningServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="pocketd.calls")
    agent, led = stubs(server)
    await open_task(led, "t28")  # in namespace "alice"
    step = apb.StepRequest(task_id="t28", round=1, goal="find order 88123")
    step.tools_json.append(json.dumps(SEARCH))
    await agent.Step(step)
    await agent.StepBatch(apb.StepBatchRequest(steps=[apb.StepRequest(task_id="t28", round=2)]))
    await led.CloseTask(lpb.CloseTaskRequest(task_id="t28", idempotency_key="close-t28"))
    late = lpb.ReserveRequest(
        task_id="t28",
        round=3,
        kind=lpb.SPEND_KIND_TOOL_CALL,
        estimate_micros=500,
        tool="search",
        idempotency_key="late-t28",
    )
    await expect(led.Reserve(late), grpc.StatusCode.FAILED_PRECONDITION)  # the task is closed
    methods = ("OpenTask", "Step", "StepBatch", "CloseTask", "Reserve")
    await asyncio.to_thread(wait_for, lambda: all(calls(caplog, m) for m in methods), 30.0)
    for m in methods:
        (line,) = calls(caplog, m)
        assert line.fields["namespace"] == "alice", m  # type: ignore[attr-defined]
        assert "ns=alice " in line.getMessage(), m
