"""AgentService.Step over a real channel, on a server with the real encoder, ledger and memory:
charges and their idempotency, key-event commits then recalled, the tool cache, the action
schema's one retry, loop detection, tiers, the ladder's optional tools, and field errors."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import grpc
import msgspec
import pytest
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from pocketd.v1 import agent_service_pb2 as apb
from pocketd.v1 import agent_service_pb2_grpc as apb_grpc
from pocketd.v1 import ledger_service_pb2 as lpb
from pocketd.v1 import ledger_service_pb2_grpc as lpb_grpc
from pocketd.v1 import memory_pb2 as pb
from pocketd.v1 import memory_service_pb2 as spb
from pocketd.v1 import memory_service_pb2_grpc as spb_grpc
from server.adapters.onnx_encoder import OnnxTextEncoder
from server.core.errors import UnavailableError
from tests.api.test_memory_api import expect, violations
from tests.conftest import RunningServer, make_settings, start_server, stop_server

SEARCH = {
    "name": "search",
    "description": "Search the order database. Returns matching orders.",
    "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
}
WEB = {"name": "web", "description": "Search the web. Returns pages."}
TOOLS = {
    "search": lpb.ToolBudget(cost_per_call_micros=500, cache_ttl_seconds=600, idempotent=True),
    "web": lpb.ToolBudget(cost_per_call_micros=2000, optional=True),
}


def stubs(srv: RunningServer) -> tuple[apb_grpc.AgentServiceStub, lpb_grpc.LedgerServiceStub]:
    ch = grpc.aio.insecure_channel(srv.target)
    return apb_grpc.AgentServiceStub(ch), lpb_grpc.LedgerServiceStub(ch)


async def open_task(led: lpb_grpc.LedgerServiceStub, task: str, total: int = 1_000_000) -> None:
    budget = lpb.TaskBudget(total_micros=total, emergency_ratio=0.0, tools=TOOLS)
    await led.OpenTask(lpb.OpenTaskRequest(task_id=task, namespace="alice", budget=budget))


async def written(mem: spb_grpc.MemoryServiceStub, memory_id: str) -> pb.MemoryRecord:
    """The memory, once written: a Step's memories are written off the call (waited for
    generously)."""
    for _ in range(2400):
        try:
            return (await mem.Get(spb.GetRequest(namespace="alice", memory_id=memory_id))).record
        except grpc.aio.AioRpcError:
            await asyncio.sleep(0.05)
    raise AssertionError(f"{memory_id} was never written")


async def test_a_loop_of_three_rounds(server: RunningServer) -> None:
    agent, led = stubs(server)
    await open_task(led, "t1")
    r1 = await agent.Step(
        apb.StepRequest(
            task_id="t1", round=1, goal="Where is my order 88123?",
            tools_json=[json.dumps(SEARCH), json.dumps(WEB)],
        )
    )  # fmt: skip
    assert r1.tier == "simple" and r1.model == "fast_small_model"
    assert r1.route_max_rounds == 3 and not r1.route_sticky and r1.route_micros < 1_000_000
    assert r1.context.startswith("Goal: Where is my order 88123?")
    assert r1.context_tokens <= r1.token_budget_round == 2000
    assert [t.name for t in r1.tools] == ["search", "web"]
    assert r1.tools[0].description.startswith("search(q: string)")
    r2_req = apb.StepRequest(
        task_id="t1", round=2,
        previous_action_json='{"type":"tool","tool":"search","params":{"q":"88123"}}',
        observation="Order 88123 shipped.",
        input="Thanks. By the way, I prefer email over phone calls from now on.",
        usage=[apb.ModelUsage(model="fast_small_model", input_tokens=1000, output_tokens=200)],
        tool_results=[
            apb.ToolResult(tool="search", params_json='{"q": "88123"}', result="shipped")
        ],
        idempotency_key="t1-r2",
    )  # fmt: skip
    r2 = await agent.Step(r2_req)
    assert r2.route_sticky  # the tier chosen in round one holds
    # What the user said: the input as an episode, and its preference sentence apart (the
    # observation is no event).
    assert len(r2.committed_memory_ids) == 2
    spent = r2.budget.spent_micros
    assert spent >= 150 + 120 + 500  # input 1000 tokens, output 200, one search
    again = await agent.Step(r2_req)  # a retried Step: the reported spend is not charged twice
    assert again.budget.spent_micros == spent + again.step_cost_micros
    assert not again.committed_memory_ids  # nor the input kept twice
    mem = spb_grpc.MemoryServiceStub(grpc.aio.insecure_channel(server.target))
    got = await written(mem, r2.committed_memory_ids[0])
    assert "prefer email" in got.text
    kept = await written(mem, r2.committed_memory_ids[1])
    assert kept.text == "By the way, I prefer email over phone calls from now on."
    assert kept.kind == pb.MEMORY_KIND_PREFERENCE
    r3 = await agent.Step(
        apb.StepRequest(
            task_id="t1", round=3, input="How should we contact the user about the delivery?",
            raw_model_output='{"type":"tool","tool":"search","params":{"q":"88123"}}',
        )
    )  # fmt: skip
    assert any("prefer email" in m.text for m in r3.memories)
    assert r3.action.type == "tool" and r3.action.cached and r3.action.cached_result == "shipped"
    bad = apb.StepRequest(task_id="t1", round=4, raw_model_output='{"type":"think"}')
    first = await agent.Step(bad)
    assert "type" in first.action_error and first.retry_action
    same = await agent.Step(bad)  # the same output again (a retried Step): the same answer
    assert same.retry_action
    worse = apb.StepRequest(task_id="t1", round=4, raw_model_output="not json")
    second = await agent.Step(worse)  # the retry failed too: no more tries this round
    assert second.action_error and not second.retry_action


async def test_the_same_action_three_times_is_a_loop(server: RunningServer) -> None:
    agent, led = stubs(server)
    await open_task(led, "loop")
    raw = '{"type":"tool","tool":"search","params":{"q":"x"}}'
    base = apb.StepRequest(task_id="loop", goal="Find order x", tools_json=[json.dumps(SEARCH)])
    warnings: list[str] = []
    for n in range(1, 4):
        base.round, base.raw_model_output = n, raw
        warnings = list((await agent.Step(base)).warnings)
    assert any("the same action 3 times" in w for w in warnings)
    st = await led.Status(lpb.TaskStatusRequest(task_id="loop"))
    assert st.degrade_level >= 1


async def test_an_image_goes_to_vision_and_a_low_budget_turns_optional_tools_off(
    server: RunningServer,
) -> None:
    agent, led = stubs(server)
    await open_task(led, "img")
    r = await agent.Step(
        apb.StepRequest(
            task_id="img", round=1, goal="What does this error say?", input_has_image=True
        )
    )
    assert r.tier == "vision" and r.model == "vlm_model"
    await open_task(led, "low", total=10_000)
    hold = await led.Reserve(
        lpb.ReserveRequest(
            task_id="low", round=1, kind=lpb.SPEND_KIND_MODEL_INPUT_TOKENS,
            estimate_micros=9_600, idempotency_key="k",
        )
    )  # fmt: skip
    assert hold.status.degrade_level == 3
    r = await agent.Step(
        apb.StepRequest(
            task_id="low", round=1, goal="Compare our two suppliers and design a plan",
            tools_json=[json.dumps(SEARCH), json.dumps(WEB)],
        )
    )  # fmt: skip
    assert [t.name for t in r.tools] == ["search"]  # web is optional: off at level 3
    assert r.tier == "medium"  # complex, one tier cheaper from level 2


async def test_step_errors_name_the_field(server: RunningServer) -> None:
    agent, led = stubs(server)
    await expect(
        agent.Step(apb.StepRequest(task_id="nope", round=1, goal="x")), grpc.StatusCode.NOT_FOUND
    )
    await open_task(led, "e")
    await expect(
        agent.Step(apb.StepRequest(task_id="e", round=1)), grpc.StatusCode.FAILED_PRECONDITION
    )
    err = await expect(
        agent.Step(
            apb.StepRequest(
                task_id="e", round=0, tools_json=["[1]"],
                tool_results=[apb.ToolResult(tool="search", params_json="nope")],
                usage=[apb.ModelUsage(input_tokens=5)],
                idempotency_key="e",
            )
        ),
        grpc.StatusCode.INVALID_ARGUMENT,
    )  # fmt: skip
    assert {"round", "tools_json[0]", "tool_results[0].params_json", "usage[0].model"} <= set(
        violations(err)
    )
    odd = [apb.ToolResult(tool="x" * 200, params_json="{}", result="r")]
    err = await expect(
        agent.Step(
            apb.StepRequest(
                task_id="e", round=1, goal="x", tool_results=odd, idempotency_key="k",
                usage=[apb.ModelUsage(model="m\n", input_tokens=1)],
            )
        ),
        grpc.StatusCode.INVALID_ARGUMENT,
    )  # fmt: skip
    assert {"tool_results[0].tool", "usage[0].model"} <= set(violations(err))


async def test_active_recall_supplies_search_memory_and_runs_it(server: RunningServer) -> None:
    agent, led = stubs(server)
    mem = spb_grpc.MemoryServiceStub(grpc.aio.insecure_channel(server.target))
    await mem.Remember(
        spb.RememberRequest(
            record=pb.MemoryRecord(
                namespace="alice", kind=pb.MEMORY_KIND_PREFERENCE, text="Alice prefers SMS"
            )
        )
    )
    await open_task(led, "act")
    first = await agent.Step(
        apb.StepRequest(
            task_id="act", round=1, goal="Tell Alice her order shipped",
            recall_mode=apb.RECALL_MODE_ACTIVE,
        )
    )  # fmt: skip
    assert not first.memories  # active: nothing is recalled unless the model asks
    assert json.loads(first.search_memory_tool_json)["name"] == "search_memory"
    asked = await agent.Step(
        apb.StepRequest(
            task_id="act", round=1, recall_mode=apb.RECALL_MODE_ACTIVE,
            raw_model_output=json.dumps({
                "type": "tool", "tool": "search_memory",
                "params": {"query": "how does Alice want to be contacted"},
            }),
        )
    )  # fmt: skip
    assert any("prefers SMS" in m.text for m in asked.memories)
    assert asked.step_cost_micros > 0  # the search it ran is charged


async def test_a_batch_of_independent_steps_answers_each(server: RunningServer) -> None:
    agent, led = stubs(server)
    await open_task(led, "b1")
    await open_task(led, "b2")
    resp = await agent.StepBatch(
        apb.StepBatchRequest(
            steps=[
                apb.StepRequest(task_id="b1", round=1, goal="Where is my order 5?"),
                apb.StepRequest(task_id="nope", round=1, goal="x"),
                apb.StepRequest(task_id="b2", round=0, goal="x"),
                apb.StepRequest(task_id="b2", round=1, goal="Compare two plans"),
            ]
        )
    )
    kinds = [r.WhichOneof("outcome") for r in resp.results]
    assert kinds == ["response", "error", "error", "response"]
    assert resp.results[0].response.tier == "simple"
    assert resp.results[1].error.code == "NOT_FOUND"
    bad = resp.results[2].error
    assert bad.code == "INVALID_ARGUMENT" and any(v.startswith("round:") for v in bad.violations)
    err = await expect(agent.StepBatch(apb.StepBatchRequest()), grpc.StatusCode.INVALID_ARGUMENT)
    assert "steps" in violations(err)


async def overspend(agent: apb_grpc.AgentServiceStub, task: str, goal: str) -> apb.StepResponse:
    """Round 1 reports a model call that costs more than the task's whole budget."""
    usage = apb.ModelUsage(model="fast_small_model", input_tokens=200_000)
    return await agent.Step(
        apb.StepRequest(task_id=task, round=1, goal=goal, usage=[usage], idempotency_key="over")
    )


async def test_best_memory_answer_returns_the_best_memory_for_the_goal(
    server: RunningServer,
) -> None:
    agent, led = stubs(server)
    mem = spb_grpc.MemoryServiceStub(grpc.aio.insecure_channel(server.target))
    await mem.Remember(
        spb.RememberRequest(
            record=pb.MemoryRecord(
                namespace="alice", kind=pb.MEMORY_KIND_FACT,
                text="The refund for order 4471 was approved on March 3",
            )
        )
    )  # fmt: skip
    budget = lpb.TaskBudget(
        total_micros=10_000, failover_action=lpb.FAILOVER_ACTION_BEST_MEMORY_ANSWER
    )
    await led.OpenTask(lpb.OpenTaskRequest(task_id="bm", namespace="alice", budget=budget))
    r = await overspend(agent, "bm", "Was the refund for order 4471 approved?")
    assert r.budget.degrade_level == 4
    f = r.failover
    assert f.action == lpb.FAILOVER_ACTION_BEST_MEMORY_ANSWER and f.stop_reason
    assert "4471" in f.best_memory.text and f.best_memory.score > 0
    assert f.best_memory.source_type and f.best_memory.memory_id
    assert f.partial_result.startswith("Goal: Was the refund")
    # Below level 4 there is no failover plan.
    await open_task(led, "fine")
    ok = await agent.Step(apb.StepRequest(task_id="fine", round=1, goal="Hello"))
    assert not ok.HasField("failover")


async def test_pause_stops_the_task_and_raise_budget_resumes_it(server: RunningServer) -> None:
    agent, led = stubs(server)
    budget = lpb.TaskBudget(total_micros=10_000, failover_action=lpb.FAILOVER_ACTION_PAUSE)
    await led.OpenTask(lpb.OpenTaskRequest(task_id="pz", namespace="alice", budget=budget))
    first = await overspend(agent, "pz", "Where is my order 88123?")
    assert first.budget.state == "paused" and first.failover.action == lpb.FAILOVER_ACTION_PAUSE
    assert first.failover.stop_reason == first.budget.stop_reason != ""
    r2 = apb.StepRequest(
        task_id="pz", round=2, input="Any news on order 88123?",
        previous_action_json='{"type":"tool","tool":"search","params":{"q":"88123"}}',
        observation="Order 88123 is in the warehouse in Lyon.",
    )  # fmt: skip
    paused = await agent.Step(r2)
    assert paused.failover.action == lpb.FAILOVER_ACTION_PAUSE
    assert not paused.context and not paused.memories  # no more work while paused
    assert "Round 1" in paused.failover.partial_result
    assert "Lyon" in paused.failover.partial_result  # what the task did so far
    mem = spb_grpc.MemoryServiceStub(grpc.aio.insecure_channel(server.target))
    note = pb.MemoryRecord(
        namespace="alice",
        kind=pb.MEMORY_KIND_FACT,
        text="Order 88123 left the warehouse on Friday.",
    )
    await mem.Remember(spb.RememberRequest(record=note))
    await led.RaiseBudget(
        lpb.RaiseBudgetRequest(task_id="pz", add_total_micros=1_000_000, idempotency_key="up")
    )
    resumed = await agent.Step(r2)  # the round it stopped at, again
    assert resumed.budget.state == "open" and not resumed.HasField("failover")
    assert resumed.context.startswith("Goal: Where is my order 88123?")
    assert "Lyon" in resumed.context
    assert any("left the warehouse" in m.text for m in resumed.memories)  # it recalls again


@pytest.fixture
async def top2(tmp_path: Path, encoder: OnnxTextEncoder) -> AsyncIterator[RunningServer]:
    """A server whose Step recalls the top 2 (and the profile beside them)."""
    base = make_settings(tmp_path / "srv")
    settings = msgspec.structs.replace(
        base, agent=msgspec.structs.replace(base.agent, recall_top_k=2)
    )
    srv, executor = await start_server(tmp_path / "srv", encoder, settings)
    yield srv
    await stop_server(srv, executor)


async def test_the_users_profile_comes_with_the_recall(top2: RunningServer) -> None:
    """A stated preference is recalled beside the round's top memories when the round's own
    facts outrank it; Step commits a stated preference as kind PREFERENCE."""
    agent, led = stubs(top2)
    mem = spb_grpc.MemoryServiceStub(grpc.aio.insecure_channel(top2.target))
    await open_task(led, "p1")
    said = await agent.Step(
        apb.StepRequest(
            task_id="p1", round=1, goal="Help Alice",
            input="For the record, I prefer to be contacted by SMS only.",
        )
    )  # fmt: skip
    (pref_id,) = said.committed_memory_ids
    for _ in range(2400):  # written off the call: wait (generously) until it is there
        try:
            got = await mem.Get(spb.GetRequest(namespace="alice", memory_id=pref_id))
            break
        except grpc.aio.AioRpcError:
            await asyncio.sleep(0.05)
    assert got.record.kind == pb.MEMORY_KIND_PREFERENCE
    for text in (
        "Ticket T-9: the router was reset on Monday and the fault cleared.",
        "Ticket T-9 was escalated to the network team after two failed resets.",
        "Ticket T-9 logs show the router rebooting every night at 3am.",
    ):
        await mem.Remember(
            spb.RememberRequest(
                record=pb.MemoryRecord(namespace="alice", kind=pb.MEMORY_KIND_FACT, text=text)
            )
        )
    query = "Summarise ticket T-9: its resets, logs and fix, and how to reach me."
    top = await mem.Recall(spb.RecallRequest(namespace="alice", query_text=query, top_k=2))
    assert not any("SMS" in h.record.text for h in top.hits)  # outranked by the tickets
    await open_task(led, "p2")
    r = await agent.Step(
        apb.StepRequest(task_id="p2", round=1, goal="Close ticket T-9", input=query)
    )
    texts = [m.text for m in r.memories]
    assert [t for t in texts if "T-9" in t] == [h.record.text for h in top.hits]
    assert any("prefer to be contacted by SMS" in t for t in texts)  # and the profile
    assert "SMS" in r.context


async def test_two_reports_alike_are_two_charges_and_a_key_is_required(
    server: RunningServer,
) -> None:
    agent, led = stubs(server)
    await open_task(led, "keys")
    usage = [apb.ModelUsage(model="fast_small_model", input_tokens=1000)]
    call = [apb.ToolResult(tool="search", params_json='{"q": "x"}', result="r")]
    base = dict(task_id="keys", round=1, goal="Find x", usage=usage, tool_results=call)
    first = await agent.Step(apb.StepRequest(**base, idempotency_key="a"))
    again = await agent.Step(apb.StepRequest(**base, idempotency_key="a"))  # a retry
    second = await agent.Step(apb.StepRequest(**base, idempotency_key="b"))  # a second call
    own = again.step_cost_micros + second.step_cost_micros
    assert again.budget.spent_micros - first.budget.spent_micros == again.step_cost_micros
    assert second.budget.spent_micros - first.budget.spent_micros == own + 150 + 500
    err = await expect(agent.Step(apb.StepRequest(**base)), grpc.StatusCode.INVALID_ARGUMENT)
    assert "idempotency_key" in violations(err)
    other = [apb.ModelUsage(model="fast_small_model", input_tokens=7)]
    reused = dict(base, usage=other, idempotency_key="a")
    await expect(agent.Step(apb.StepRequest(**reused)), grpc.StatusCode.FAILED_PRECONDITION)
    more = dict(base, usage=[*usage, *usage], idempotency_key="a")  # more reports, same key
    await expect(agent.Step(apb.StepRequest(**more)), grpc.StatusCode.FAILED_PRECONDITION)
    for odd in ('{"q": NaN}', '{"q": 1e999}'):
        nan = [apb.ToolResult(tool="search", params_json=odd, result="r")]
        bad = dict(base, tool_results=nan, idempotency_key="c")
        err = await expect(agent.Step(apb.StepRequest(**bad)), grpc.StatusCode.INVALID_ARGUMENT)
        assert "tool_results[0].params_json" in violations(err)
    bill = await led.CloseTask(lpb.CloseTaskRequest(task_id="keys", idempotency_key="close"))
    assert bill.by_tool["search"].commits == 2  # two calls of the tool, as its cap counts them


async def test_a_task_that_does_not_declare_a_tool_cacheable_gets_no_cached_result(
    server: RunningServer,
) -> None:
    agent, led = stubs(server)
    await open_task(led, "c1")  # search: idempotent, 600 s
    ran = [apb.ToolResult(tool="search", params_json='{"q": "x"}', result="found x")]
    await agent.Step(
        apb.StepRequest(task_id="c1", round=1, goal="x", tool_results=ran, idempotency_key="k")
    )
    raw = '{"type":"tool","tool":"search","params":{"q":"x"}}'
    tools = [json.dumps(SEARCH)]
    hit = await agent.Step(
        apb.StepRequest(task_id="c1", round=2, goal="x", tools_json=tools, raw_model_output=raw)
    )
    assert hit.action.cached and hit.action.cached_result == "found x"
    assert hit.step_cost_micros >= 1  # the lookup is charged, the tool's call is not
    plain = lpb.TaskBudget(total_micros=10**6, tools={"search": lpb.ToolBudget()})
    await led.OpenTask(lpb.OpenTaskRequest(task_id="c2", namespace="alice", budget=plain))
    miss = await agent.Step(
        apb.StepRequest(task_id="c2", round=1, goal="x", tools_json=tools, raw_model_output=raw)
    )
    assert miss.action.tool == "search" and not miss.action.cached  # it must call the tool


async def test_a_step_that_fails_late_commits_its_key_events_on_the_retry(
    server: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent, led = stubs(server)
    await open_task(led, "late")
    loop = server.loop
    assert loop is not None
    ledger = loop._ledger  # type: ignore[attr-defined]
    real = ledger.close_round
    calls = 0

    def once(*args: object) -> object:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise UnavailableError("the ledger did not answer")
        return real(*args)

    monkeypatch.setattr(ledger, "close_round", once)
    req = apb.StepRequest(
        task_id="late", round=1, goal="Help", input="For the record, I prefer email only."
    )
    await expect(agent.Step(req), grpc.StatusCode.UNAVAILABLE)
    again = await agent.Step(req)  # the retry: the stated preference is committed this time
    assert len(again.committed_memory_ids) == 1


async def test_closing_a_task_drops_its_loop_state_and_later_steps_are_refused(
    server: RunningServer,
) -> None:
    """A closed task's rounds are not kept until `agent.sessions` newer tasks push them out
    (the soak's RSS crept up by a closed task's state every few seconds)."""
    agent, led = stubs(server)
    loop = server.loop
    for n in range(3):
        await open_task(led, f"c{n}")
        await agent.Step(apb.StepRequest(task_id=f"c{n}", round=1, goal="Where is 88123?"))
    assert len(loop._sessions) == 3
    await led.CloseTask(lpb.CloseTaskRequest(task_id="c1", idempotency_key="close"))
    assert len(loop._sessions) == 2
    with pytest.raises(grpc.aio.AioRpcError) as closed:
        await agent.Step(apb.StepRequest(task_id="c1", round=2, goal="Where is 88123?"))
    assert closed.value.code() is grpc.StatusCode.FAILED_PRECONDITION
    assert len(loop._sessions) == 2


def _closing_during_first_read(
    loop: object, closes: str, monkeypatch: pytest.MonkeyPatch
) -> list[str]:
    """Make the ledger close task `closes` (as CloseTask does: the ledger, then the loop)
    right after a first Step's opening transaction read the task; the ids read, in order."""
    ledger = loop._ledger  # type: ignore[attr-defined]
    real = ledger.open_round
    reads: list[str] = []

    def racing(task_id: str, *args: object, **kwargs: object) -> Callable[[], object]:
        wait = real(task_id, *args, **kwargs)

        def waited() -> object:
            out = wait()
            reads.append(task_id)
            if len(reads) == 1:
                tenant, sep, _ = task_id.rpartition("~")  # the same tenant's task `closes`
                target = tenant + sep + closes
                ledger.close_task(target, "close")
                loop.closed(target)  # type: ignore[attr-defined]
            return out

        return waited

    monkeypatch.setattr(ledger, "open_round", racing)
    return reads


async def test_a_first_step_racing_closetask_keeps_no_loop_state(
    server: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The task is closed (and its state dropped) after a first Step read it from the ledger
    and before that Step kept its state: the Step is refused as closed, and nothing of the
    closed task stays in memory until `agent.sessions` newer tasks push it out."""
    agent, led = stubs(server)
    loop = server.loop
    await open_task(led, "racer")
    before = len(loop._sessions)
    reads = _closing_during_first_read(loop, "racer", monkeypatch)
    err = await expect(
        agent.Step(apb.StepRequest(task_id="racer", round=1, goal="Where is 88123?")),
        grpc.StatusCode.FAILED_PRECONDITION,
    )
    status = rpc_status.from_call(err)  # type: ignore[arg-type]
    pre = error_details_pb2.PreconditionFailure()
    assert status is not None and any(d.Unpack(pre) for d in status.details)
    assert pre.violations[0].type == "TASK_CLOSED"
    assert len(reads) == 1  # the close was counted: refused as the ledger refuses it
    assert len(loop._sessions) == before
    assert loop._sessions.opening() == 0


async def test_another_tasks_close_during_a_first_step_keeps_its_state(
    server: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only a close of the Step's own task refuses its first Step."""
    agent, led = stubs(server)
    loop = server.loop
    await open_task(led, "stays")
    await open_task(led, "goes")
    before = len(loop._sessions)
    reads = _closing_during_first_read(loop, "goes", monkeypatch)
    out = await agent.Step(apb.StepRequest(task_id="stays", round=1, goal="Where is 88123?"))
    assert out.model and out.context  # planned: a tier's model and the round's context
    assert len(reads) == 1  # not read again: its own task was not closed
    assert len(loop._sessions) == before + 1
    assert loop._sessions.opening() == 0
    with pytest.raises(grpc.aio.AioRpcError) as closed:
        await agent.Step(apb.StepRequest(task_id="goes", round=1, goal="Where is 88123?"))
    assert closed.value.code() is grpc.StatusCode.FAILED_PRECONDITION
