"""AgentService's Step answer, from the agent loop's result."""

from __future__ import annotations

import json

from pocketd.v1 import agent_service_pb2 as apb
from server.api.convert_ledger import status_pb
from server.core.agent.context import Recalled
from server.core.agent.step_io import StepOut
from server.core.tenancy import Tenant


def _memory(m: Recalled) -> apb.StepMemory:
    return apb.StepMemory(
        memory_id=m.memory_id, text=m.text, score=m.score, source_type=m.source_type
    )


def step_pb(o: StepOut, tenant: Tenant) -> apb.StepResponse:
    route = o.route
    out = apb.StepResponse(
        budget=status_pb(o.status, tenant),
        tier=route.route.name,
        model=route.route.model,
        token_budget_round=route.route.token_budget_round,
        route_reason=route.why,
        escalate=route.escalate,
        route_cached=route.cached,
        route_sticky=route.sticky,
        route_micros=min(o.route_micros, 2**32 - 1),
        route_max_rounds=route.route.max_rounds,
        tools=[apb.AllowedTool(name=n, description=d) for n, d in o.tools],
        context=o.context,
        context_tokens=o.context_tokens,
        context_dropped=o.context_dropped,
        memories=[_memory(m) for m in o.memories],
        action_error=o.action_error,
        retry_action=o.retry_action,
        committed_memory_ids=o.committed,
        warnings=o.warnings,
        search_memory_tool_json=o.search_memory_tool,
        step_cost_micros=o.step_cost,
    )
    if o.failover is not None:
        f = o.failover
        out.failover.action = int(f.action)  # type: ignore[assignment]
        out.failover.stop_reason = f.stop_reason
        out.failover.partial_result = f.partial_result
        if f.best_memory is not None:
            out.failover.best_memory.CopyFrom(_memory(f.best_memory))
    if o.action is not None:
        a = o.action
        out.action.CopyFrom(
            apb.StepAction(
                type=a.type,
                tool=a.tool,
                params_json=json.dumps(a.params, ensure_ascii=False) if a.type == "tool" else "",
                answer=a.answer,
                estimated_cost_micros=a.estimated_cost,
                cached_result=o.cached_result or "",
                cached=o.cached_result is not None,
            )
        )
    return out
