"""The seeds' two published configurations load as OpenTask budgets, and a server takes them."""

from __future__ import annotations

import grpc
import pytest
import yaml

from pocketd.budgets import micros, task_budget
from pocketd.v1 import ledger_service_pb2 as lpb
from pocketd.v1 import ledger_service_pb2_grpc as lpb_grpc
from tests.conftest import ROOT, RunningServer

EXAMPLES = ROOT / "examples" / "budgets"


def load(name: str) -> lpb.TaskBudget:
    return task_budget(yaml.safe_load((EXAMPLES / name).read_text()))


def test_money_converts_to_micros_exactly() -> None:
    assert micros(0.002) == 2000 and micros("1.0") == 1_000_000 and micros(0.05) == 50_000


def test_seed_001_budget_and_tools() -> None:
    b = load("seed-001-support-agent.yaml")
    assert (b.total_micros, b.round_micros, b.max_rounds) == (1_000_000, 50_000, 15)
    assert b.emergency_ratio == pytest.approx(0.2)
    assert b.failover_action == lpb.FAILOVER_ACTION_ESCALATE_HUMAN
    assert b.tools["search"].max_calls == 5 and b.tools["search"].cache_ttl_seconds == 3600
    assert b.tools["search"].idempotent and not b.tools["internal_api"].idempotent
    assert b.tools["internal_api"].cost_per_call_micros == 2000


def test_seed_000_cost_control() -> None:
    b = load("seed-000-knowledge-assistant.yaml")
    assert b.total_micros == 500_000 and b.warn_at_percent == 80
    assert b.failover_action == lpb.FAILOVER_ACTION_SOFT_STOP
    with pytest.raises(ValueError, match="failover action"):
        task_budget(
            {
                "cost_control": {
                    "level": {"budget": {"max_cost_per_task": 1, "fallback_mode": "explode"}}
                }
            }
        )


NAMES = sorted(p.name for p in EXAMPLES.glob("*.yaml"))


async def test_a_server_opens_tasks_with_both(server: RunningServer) -> None:
    assert len(NAMES) == 2
    s = lpb_grpc.LedgerServiceStub(grpc.aio.insecure_channel(server.target))
    for i, name in enumerate(NAMES):
        st = await s.OpenTask(
            lpb.OpenTaskRequest(task_id=f"t{i}", namespace="ns", budget=load(name))
        )
        assert st.state == "open"
