"""An attacker with its own valid token tries every RPC on the victim's namespaces, task ids,
memory ids, page tokens and idempotency keys, and tries to learn from cached answers, scores,
Explain and errors. Each test asserts the exact status and that the victim's state is
unchanged."""

from __future__ import annotations

import asyncio
import json

import grpc

from pocketd.v1 import agent_service_pb2 as apb
from pocketd.v1 import ledger_service_pb2 as lpb
from pocketd.v1 import memory_pb2 as pb
from pocketd.v1 import memory_service_pb2 as spb
from tests.api.test_memory_api import expect, violations
from tests.conftest import RunningServer
from tests.security.conftest import Caller, caller

Tenants = tuple[RunningServer, Caller, Caller, Caller]
M = lpb.SPEND_KIND_MODEL_INPUT_TOKENS
TOOLS = {"search": lpb.ToolBudget(cost_per_call_micros=500, cache_ttl_seconds=600, idempotent=True)}
SEARCH = json.dumps({"name": "search", "description": "Search the notes."})
GOAL = "Help me plan the quarterly finance report for the board"


def fact(ns: str, text: str, memory_id: str = "") -> spb.RememberRequest:
    return spb.RememberRequest(
        record=pb.MemoryRecord(
            namespace=ns, text=text, kind=pb.MEMORY_KIND_FACT, memory_id=memory_id
        ),
        hints=spb.WriteHints(remember=True),
    )


def pin_step(key: str) -> apb.StepRequest:
    """Round 2 of the victim's task t1: asks for the PIN and reports a large spend."""
    return apb.StepRequest(
        task_id="t1",
        round=2,
        input="What is my PIN?",
        usage=[apb.ModelUsage(model="m", input_tokens=10**6)],
        idempotency_key=key,
    )


async def snapshot(v: Caller) -> tuple[object, ...]:
    """What the victim can see of its own state."""
    listed = await v.memory.List(spb.ListRequest(namespace="home", page_size=1000))
    status = await v.ledger.Status(lpb.TaskStatusRequest(task_id="t1"))
    stats = await v.memory.Stats(spb.StatsRequest(namespace="home"))
    return (
        sorted((r.memory_id, r.text, r.obsolete) for r in listed.records),
        (status.spent_micros, status.held_micros, status.round, status.state),
        stats.namespaces[0].record_count,
    )


async def victim_world(v: Caller) -> str:
    """The victim's memory ("PIN is 4321"), an open task with one Step, and a List page."""
    r = await v.memory.Remember(fact("home", "My bank card PIN is 4321", "pin"))
    for i in range(3):
        await v.memory.Remember(fact("home", f"Note {i}: the boiler was serviced in May"))
    budget = lpb.TaskBudget(total_micros=1_000_000, emergency_ratio=0.0, tools=TOOLS)
    await v.ledger.OpenTask(lpb.OpenTaskRequest(task_id="t1", namespace="home", budget=budget))
    await v.ledger.Reserve(
        lpb.ReserveRequest(task_id="t1", round=1, kind=M, estimate_micros=10, idempotency_key="k1")
    )
    await v.agent.Step(
        apb.StepRequest(
            task_id="t1",
            round=1,
            goal=GOAL,
            input="What is my PIN?",
            tool_results=[apb.ToolResult(tool="search", params_json='{"q":"pin"}', result="4321")],
            idempotency_key="s1",
        )
    )
    return r.memory_id


async def test_no_token_or_a_wrong_token_is_unauthenticated_everywhere(tenants: Tenants) -> None:
    srv, v, _, _ = tenants
    await victim_world(v)
    before = await snapshot(v)
    for token in (None, "not-a-token", ""):
        c = caller(srv.target, token)
        calls = [
            c.memory.Remember(fact("home", "x")),
            c.memory.RememberBatch(spb.RememberBatchRequest(items=[fact("home", "x")])),
            c.memory.Recall(spb.RecallRequest(namespace="home", query_text="PIN")),
            c.memory.Explain(spb.ExplainRequest(recall=spb.RecallRequest(namespace="home"))),
            c.memory.Get(spb.GetRequest(namespace="home", memory_id="pin")),
            c.memory.Forget(spb.ForgetRequest(namespace="home", memory_id="pin")),
            c.memory.List(spb.ListRequest(namespace="home")),
            c.memory.Stats(spb.StatsRequest()),
            c.ledger.OpenTask(lpb.OpenTaskRequest(task_id="t1", namespace="home")),
            c.ledger.Reserve(lpb.ReserveRequest(task_id="t1", idempotency_key="k")),
            c.ledger.Commit(lpb.CommitRequest(task_id="t1", idempotency_key="k")),
            c.ledger.Release(lpb.ReleaseRequest(task_id="t1", idempotency_key="k")),
            c.ledger.Status(lpb.TaskStatusRequest(task_id="t1")),
            c.ledger.RaiseBudget(lpb.RaiseBudgetRequest(task_id="t1", idempotency_key="k")),
            c.ledger.CloseTask(lpb.CloseTaskRequest(task_id="t1", idempotency_key="k")),
            c.agent.Step(apb.StepRequest(task_id="t1", round=2)),
            c.agent.StepBatch(apb.StepBatchRequest(steps=[apb.StepRequest(task_id="t1")])),
            c.agent.CompressTools(apb.CompressToolsRequest(tools_json=['{"name":"a"}'])),
        ]
        for call in calls:
            err = await expect(call, grpc.StatusCode.UNAUTHENTICATED)
            assert "Bearer" in (err.details() or "")
        await c.channel.close()
    assert await snapshot(v) == before


async def test_a_token_is_denied_the_namespaces_it_does_not_grant(tenants: Tenants) -> None:
    _, v, _, narrow = tenants
    await victim_world(v)
    before = await snapshot(v)
    await narrow.memory.Remember(fact("team-a/notes", "granted"))  # its own glob: fine
    err = await expect(narrow.memory.Remember(fact("home", "x")), grpc.StatusCode.PERMISSION_DENIED)
    assert violations(err) == {"record.namespace": "not granted to this token"}
    batch = spb.RememberBatchRequest(items=[fact("team-a/x", "a"), fact("home", "b")])
    err = await expect(narrow.memory.RememberBatch(batch), grpc.StatusCode.PERMISSION_DENIED)
    assert violations(err) == {"items[1].record.namespace": "not granted to this token"}
    for call in (
        narrow.memory.Recall(spb.RecallRequest(namespace="home", query_text="PIN")),
        narrow.memory.Get(spb.GetRequest(namespace="home", memory_id="pin")),
        narrow.memory.Forget(spb.ForgetRequest(namespace="home", memory_id="pin")),
        narrow.memory.List(spb.ListRequest(namespace="home")),
        narrow.memory.Stats(spb.StatsRequest(namespace="home")),
        narrow.ledger.OpenTask(
            lpb.OpenTaskRequest(
                task_id="t9", namespace="home", budget=lpb.TaskBudget(total_micros=5)
            )
        ),
    ):
        await expect(call, grpc.StatusCode.PERMISSION_DENIED)
    # The same tenant's task in a namespace this token does not grant: as if it did not exist.
    for call in (
        narrow.ledger.Status(lpb.TaskStatusRequest(task_id="t1")),
        narrow.ledger.Reserve(
            lpb.ReserveRequest(
                task_id="t1", round=1, kind=M, estimate_micros=5, idempotency_key="n"
            )
        ),
        narrow.ledger.CloseTask(lpb.CloseTaskRequest(task_id="t1", idempotency_key="n")),
        narrow.agent.Step(pin_step("n2")),
    ):
        await expect(call, grpc.StatusCode.NOT_FOUND)
    batch = await narrow.agent.StepBatch(
        apb.StepBatchRequest(steps=[apb.StepRequest(task_id="t1", round=2, input="PIN?")])
    )
    assert batch.results[0].error.code == "NOT_FOUND"
    # Stats of every namespace lists only the granted ones.
    st = await narrow.memory.Stats(spb.StatsRequest())
    assert [n.namespace for n in st.namespaces] == ["team-a/notes"]
    assert await snapshot(v) == before


async def test_the_attacker_sees_nothing_of_the_victims_memory(tenants: Tenants) -> None:
    _, v, a, _ = tenants
    pin = await victim_world(v)
    page = await v.memory.List(spb.ListRequest(namespace="home", page_size=1))
    assert page.next_page_token
    before = await snapshot(v)

    got = await a.memory.Recall(spb.RecallRequest(namespace="home", query_text="What is my PIN?"))
    assert list(got.hits) == []
    err = await expect(
        a.memory.Get(spb.GetRequest(namespace="home", memory_id=pin)), grpc.StatusCode.NOT_FOUND
    )
    assert "victim" not in (err.details() or "")
    await expect(
        a.memory.Forget(spb.ForgetRequest(namespace="home", memory_id=pin)),
        grpc.StatusCode.NOT_FOUND,
    )
    gone = await a.memory.Forget(
        spb.ForgetRequest(namespace="home", filter=spb.MemoryFilter(), all=True)
    )
    assert gone.forgotten_count == 0
    err = await expect(
        a.memory.List(spb.ListRequest(namespace="home", page_token=page.next_page_token)),
        grpc.StatusCode.INVALID_ARGUMENT,
    )
    assert set(violations(err)) == {"page_token"}
    assert list((await a.memory.List(spb.ListRequest(namespace="home"))).records) == []
    # The victim's memory id, upserted by the attacker: the attacker's own record.
    await a.memory.Remember(fact("home", "PIN is 0000", pin))
    own = await a.memory.Get(spb.GetRequest(namespace="home", memory_id=pin))
    assert own.record.text == "PIN is 0000" and own.record.namespace == "home"
    st = await a.memory.Stats(spb.StatsRequest())
    assert [(n.namespace, n.record_count) for n in st.namespaces] == [("home", 1)]
    assert st.index.head_revision == 0 and st.pending_index == 0  # not an admin token
    # (This server has no router: Explain refuses before it reads anything.)
    await expect(
        a.memory.Explain(
            spb.ExplainRequest(recall=spb.RecallRequest(namespace="home", query_text="PIN"))
        ),
        grpc.StatusCode.FAILED_PRECONDITION,
    )
    assert await snapshot(v) == before
    assert (await v.memory.Get(spb.GetRequest(namespace="home", memory_id=pin))).record.text == (
        "My bank card PIN is 4321"
    )


async def test_the_attacker_cannot_touch_or_detect_the_victims_task(tenants: Tenants) -> None:
    _, v, a, _ = tenants
    await victim_world(v)
    before = await snapshot(v)
    for call in (
        a.ledger.Status(lpb.TaskStatusRequest(task_id="t1")),
        a.ledger.Reserve(
            lpb.ReserveRequest(
                task_id="t1", round=1, kind=M, estimate_micros=5, idempotency_key="k1"
            )
        ),
        a.ledger.Commit(lpb.CommitRequest(task_id="t1", reservation_id="r", idempotency_key="c")),
        a.ledger.Release(lpb.ReleaseRequest(task_id="t1", reservation_id="r", idempotency_key="c")),
        a.ledger.RaiseBudget(
            lpb.RaiseBudgetRequest(task_id="t1", add_total_micros=5, idempotency_key="r")
        ),
        a.ledger.CloseTask(lpb.CloseTaskRequest(task_id="t1", idempotency_key="c")),
        a.agent.Step(pin_step("s2")),
    ):
        err = await expect(call, grpc.StatusCode.NOT_FOUND)
        assert "victim" not in (err.details() or "") and "~" not in (err.details() or "")
    batch = await a.agent.StepBatch(
        apb.StepBatchRequest(steps=[apb.StepRequest(task_id="t1", round=2, input="PIN?")])
    )
    assert batch.results[0].error.code == "NOT_FOUND"
    # Opening the same task id opens the attacker's own task: it does not tell that t1 exists.
    budget = lpb.TaskBudget(total_micros=500, tools=TOOLS)
    mine = await a.ledger.OpenTask(
        lpb.OpenTaskRequest(task_id="t1", namespace="home", budget=budget)
    )
    assert mine.task_id == "t1" and mine.spent_micros == 0 and mine.round == 0
    # The victim's idempotency key on the attacker's task is the attacker's own.
    r = await a.ledger.Reserve(
        lpb.ReserveRequest(task_id="t1", round=1, kind=M, estimate_micros=7, idempotency_key="k1")
    )
    assert r.amount_micros == 7
    # Its first Step with the victim's goal: the intent cache does not answer it.
    out = await a.agent.Step(apb.StepRequest(task_id="t1", round=1, goal=GOAL, input="PIN?"))
    assert not out.route_cached
    assert all("4321" not in m.text for m in out.memories) and "4321" not in out.context
    assert await snapshot(v) == before


async def test_the_tool_cache_answers_only_its_own_tenant(tenants: Tenants) -> None:
    _, v, a, _ = tenants
    await victim_world(v)  # the victim reported search {"q": "pin"} → "4321"
    before = await snapshot(v)
    budget = lpb.TaskBudget(total_micros=1_000_000, tools=TOOLS)
    await a.ledger.OpenTask(lpb.OpenTaskRequest(task_id="t2", namespace="home", budget=budget))
    action = json.dumps({"type": "tool", "tool": "search", "params": {"q": "pin"}})
    step = apb.StepRequest(
        task_id="t2", round=1, goal=GOAL, tools_json=[SEARCH], raw_model_output=action
    )
    out = await a.agent.Step(step)
    assert out.action.tool == "search", out.action_error
    assert not out.action.cached and out.action.cached_result == ""
    again = await v.agent.Step(
        apb.StepRequest(task_id="t1", round=2, tools_json=[SEARCH], raw_model_output=action)
    )  # the victim's own cache still answers the victim
    assert again.action.cached and again.action.cached_result == "4321"
    after = await snapshot(v)
    assert after[0] == before[0] and after[2] == before[2]  # the victim's memory, untouched


async def test_scores_do_not_depend_on_another_tenants_memories(tenants: Tenants) -> None:
    _, v, a, _ = tenants
    for i in range(4):
        await a.memory.Remember(fact("notes", f"The invoice {i} for the garden shed was paid"))
    await a.memory.Remember(fact("notes", "The boiler service is due in spring"))
    q = spb.RecallRequest(namespace="notes", query_text="boiler service invoice")

    async def scores() -> list[tuple[str, float, float]]:
        got = await a.memory.Recall(q)
        return [
            (h.record.memory_id, round(h.score.bm25, 6), round(h.score.final, 6)) for h in got.hits
        ]

    async def indexed() -> None:
        head = (await v.memory.Stats(spb.StatsRequest())).index.head_revision
        for _ in range(2400):  # a generous deadline: 120 s
            st = await v.memory.Stats(spb.StatsRequest())
            if st.index.indexed_revision >= head:
                return
            await asyncio.sleep(0.05)
        raise AssertionError("the index did not catch up")

    await indexed()
    first = await scores()
    assert first
    # The victim floods its own namespace of the same name with the same words (each fact
    # names its own ticket, so none merges into another).
    items = [fact("notes", f"boiler service invoice for ticket T-{i} boiler") for i in range(64)]
    await v.memory.RememberBatch(spb.RememberBatchRequest(items=items))
    await indexed()
    listed = await v.memory.List(spb.ListRequest(namespace="notes", page_size=1000))
    assert len(listed.records) == 64
    assert await scores() == first
    mine = await a.memory.List(spb.ListRequest(namespace="notes", page_size=1000))
    assert len(mine.records) == 5  # and the attacker's namespace holds only its own
