"""The README's agent loop, runnable, with a stand-in model and tool.

Start `make run` in another terminal, then:

    .venv/bin/python clients/python/examples/agent_loop.py [HOST:PORT]
"""

import json
import sys
import uuid

from pocketd import Client
from pocketd.v1 import ledger_service_pb2 as lpb


def model(context: str) -> tuple[str, int, int]:
    """A stand-in for the agent's model: (its output, tokens in, tokens out)."""
    if "Observation:" in context:
        return '{"type": "finish", "answer": "Your order shipped on Monday."}', 600, 20
    return '{"type": "tool", "tool": "search", "params": {"q": "88123"}}', 400, 30


def search(params: dict[str, str]) -> str:  # a stand-in for the agent's tool
    return f"Order {params['q']}: shipped Monday"


SEARCH = {"name": "search", "description": "Search orders. Returns the order's status."}
target = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:50051"
price = {"search": lpb.ToolBudget(cost_per_call_micros=500)}
budget = lpb.TaskBudget(total_micros=100_000, tools=price)

task = f"demo-{uuid.uuid4().hex[:8]}"
with Client(target) as c, c.task(task, budget, "alice", goal="Where is my order 88123?") as t:
    obs, action = "", ""
    used: tuple[tuple[str, int, int], ...] = ()
    ran: tuple[tuple[str, dict[str, str], str], ...] = ()
    for n in range(1, 6):
        plan = t.step(
            n, action=action, observation=obs, usage=used, tool_results=ran, tools=[SEARCH]
        )
        raw, n_in, n_out = model(plan.context)  # the model, on pocketd's context and tier
        act = t.step(n, raw_output=raw).action  # the same round: the action, parsed and checked
        used = ((plan.model, n_in, n_out),)
        if act.type == "finish" or plan.budget.degrade_level >= 4:
            break
        action, obs = act.params_json, act.cached_result or search(json.loads(act.params_json))
        ran = () if act.cached else (("search", json.loads(act.params_json), obs),)
    print(act.answer, "| tier:", plan.tier, "| rounds:", n)
print("spent:", t.bill.status.spent_micros if t.bill else 0, "micros")
