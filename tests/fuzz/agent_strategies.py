"""Hypothesis strategies for LedgerService and AgentService requests, valid and hostile: task
ids that exist and do not, every spend kind and integer extreme, huge and deeply nested JSON,
huge observations, tool lists and reports over every cap."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from pocketd.v1 import agent_service_pb2 as apb
from pocketd.v1 import ledger_service_pb2 as lpb
from tests.fuzz.strategies import (
    UINT32,
    UINT64,
    enum,
    ids,
    ints,
    labels,
    mostly,
    namespaces,
    repeated,
    texts,
)

TASKS = ("fz-task-1", "fz-task-2")
task_ids = mostly(st.sampled_from(TASKS), ids)
keys = mostly(st.sampled_from(["k1", "k2", "step:3:loop", "#step:1:x"]), ids)


def nested(depth: int) -> str:
    """A JSON object nesting `depth` deep below its top, alternating arrays and objects (built
    as text: `json.dumps` itself cannot go this deep)."""
    opens = "".join("[" if i % 2 == 0 else '{"a":' for i in range(depth))
    closes = "".join("]" if i % 2 == 0 else "}" for i in reversed(range(depth)))
    return '{"q":' + opens + "1" + closes + "}"


json_docs = st.one_of(
    st.sampled_from(['{"q": "88123"}', "{}", '{"q": 1.5e308}', "[]", "not json", '{"q": NaN}']),
    st.sampled_from([60, 63, 64, 65, 500, 983, 984, 985, 3000]).map(nested),
    st.sampled_from([70_000, 1_100_000]).map(lambda n: json.dumps({"q": "x" * n})),
)
tool_schemas = st.one_of(
    st.sampled_from(
        [
            json.dumps({"name": "search", "description": "Search the orders."}),
            json.dumps({"name": "web", "description": "x" * 2000, "parameters": {}}),
            '{"name": ""}',
            "[]",
        ]
    ),
    json_docs,
)
big_texts = st.one_of(texts, st.sampled_from([32_769, 70_000, 1_100_000]).map(lambda n: "y" * n))


@st.composite
def budgets(draw: st.DrawFn) -> lpb.TaskBudget:
    b = lpb.TaskBudget(
        total_micros=draw(ints(UINT64)),
        round_micros=draw(ints(UINT64)),
        max_rounds=draw(ints(UINT32)),
    )
    if draw(st.booleans()):
        b.emergency_ratio = draw(st.sampled_from([0.0, 0.2, 0.95, -1.0, float("nan")]))
    for name in draw(repeated(labels, 300)):
        b.tools[name].CopyFrom(
            lpb.ToolBudget(
                max_calls=draw(ints(UINT32)),
                cost_per_call_micros=draw(ints(UINT64)),
                cache_ttl_seconds=draw(ints(UINT32)),
                idempotent=draw(st.booleans()),
            )
        )
    return b


@st.composite
def open_requests(draw: st.DrawFn) -> lpb.OpenTaskRequest:
    return lpb.OpenTaskRequest(
        task_id=draw(task_ids), namespace=draw(namespaces), budget=draw(budgets())
    )


@st.composite
def reserve_requests(draw: st.DrawFn) -> lpb.ReserveRequest:
    return lpb.ReserveRequest(
        task_id=draw(task_ids),
        round=draw(ints(UINT32)),
        kind=draw(enum(1, 6)),
        estimate_micros=draw(ints(UINT64)),
        tool=draw(labels),
        final=draw(st.booleans()),
        ttl_seconds=draw(ints(UINT32)),
        idempotency_key=draw(keys),
    )


@st.composite
def settle_requests(draw: st.DrawFn) -> lpb.CommitRequest:
    return lpb.CommitRequest(
        task_id=draw(task_ids),
        reservation_id=draw(ids),
        actual_micros=draw(ints(UINT64)),
        idempotency_key=draw(keys),
    )


@st.composite
def step_requests(draw: st.DrawFn) -> apb.StepRequest:
    r = apb.StepRequest(
        task_id=draw(task_ids),
        round=draw(ints(UINT32)),
        goal=draw(texts),
        input=draw(big_texts),
        previous_action_json=draw(json_docs),
        observation=draw(big_texts),
        raw_model_output=draw(
            st.one_of(json_docs, st.just('{"type":"tool","tool":"search","params":{"q":"1"}}'))
        ),
        recall_mode=draw(enum(0, 2)),
        idempotency_key=draw(keys),
    )
    r.tools_json.extend(draw(repeated(tool_schemas, 300)))
    for _ in range(draw(st.sampled_from([0, 1, 2, 65]))):
        r.usage.add(
            model=draw(labels),
            input_tokens=draw(ints(UINT32)),
            output_tokens=draw(ints(UINT32)),
        )
    for _ in range(draw(st.sampled_from([0, 1, 2, 65]))):
        r.tool_results.add(tool=draw(labels), params_json=draw(json_docs), result=draw(big_texts))
    return r


@st.composite
def batch_requests(draw: st.DrawFn) -> apb.StepBatchRequest:
    n = draw(st.sampled_from([0, 1, 3, 65]))  # 65: one over the cap
    few = [draw(step_requests()) for _ in range(min(n, 3))]
    return apb.StepBatchRequest(steps=[few[i % len(few)] for i in range(n)] if n else [])


LEDGER = "/pocketd.v1.LedgerService/"
AGENT = "/pocketd.v1.AgentService/"
CALLS: list[tuple[str, st.SearchStrategy[Any]]] = [
    (LEDGER + "OpenTask", open_requests()),
    (LEDGER + "Reserve", reserve_requests()),
    (LEDGER + "Commit", settle_requests()),
    (
        LEDGER + "Release",
        settle_requests().map(
            lambda c: lpb.ReleaseRequest(
                task_id=c.task_id,
                reservation_id=c.reservation_id,
                idempotency_key=c.idempotency_key,
            )
        ),
    ),
    (LEDGER + "Status", st.builds(lpb.TaskStatusRequest, task_id=task_ids)),
    (
        LEDGER + "RaiseBudget",
        st.builds(
            lpb.RaiseBudgetRequest,
            task_id=task_ids,
            add_total_micros=ints(UINT64),
            idempotency_key=keys,
        ),
    ),
    (LEDGER + "CloseTask", st.builds(lpb.CloseTaskRequest, task_id=task_ids, idempotency_key=keys)),
    (AGENT + "Step", step_requests()),
    (AGENT + "StepBatch", batch_requests()),
    (
        AGENT + "CompressTools",
        st.builds(apb.CompressToolsRequest, tools_json=repeated(tool_schemas, 300)),
    ),
]
