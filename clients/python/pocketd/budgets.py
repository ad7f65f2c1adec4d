"""Task budgets for `LedgerService.OpenTask`, from the configuration shapes agents already use.

`task_budget(config)` reads either published shape (both ship in `examples/budgets/`):
- seed 001 §4.1: `agent.budget` (`total_usd`, `round_usd`, `emergency_ratio`,
  `failover_action`, `max_rounds`) and `agent.tools` (`max_calls`, `cache_ttl`,
  `cost_per_call`);
- seed 000 §4.5: `cost_control.level.budget` (`max_cost_per_task`, `warn_at_percent`,
  `fallback_mode`).
Money is converted from currency units to integer micros (1,000,000 per unit); `micros()`
rounds half to even, never through a float sum. An unknown failover action is a ValueError.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any

from pocketd.v1 import ledger_service_pb2 as lpb

FAILOVERS = {
    "escalate_human": lpb.FAILOVER_ACTION_ESCALATE_HUMAN,
    "best_memory_answer": lpb.FAILOVER_ACTION_BEST_MEMORY_ANSWER,
    "soft_stop": lpb.FAILOVER_ACTION_SOFT_STOP,
    "pause": lpb.FAILOVER_ACTION_PAUSE,
}


def micros(amount: float | int | str) -> int:
    """Currency units to micro-units, exactly: 0.002 → 2000."""
    return int((Decimal(str(amount)) * 1_000_000).quantize(Decimal(1), ROUND_HALF_EVEN))


def _failover(name: str) -> int:
    key = name.strip().lower().replace("-", "_")
    if key not in FAILOVERS:
        raise ValueError(f"failover action {name!r}: expected one of {sorted(FAILOVERS)}")
    return FAILOVERS[key]


def task_budget(config: Mapping[str, Any]) -> lpb.TaskBudget:
    agent = config.get("agent") or {}
    if "budget" in agent:
        b = agent["budget"]
        out = lpb.TaskBudget(
            total_micros=micros(b["total_usd"]),
            round_micros=micros(b.get("round_usd", 0)),
            max_rounds=int(b.get("max_rounds", 0)),
        )
        if "emergency_ratio" in b:
            out.emergency_ratio = float(b["emergency_ratio"])
        if "failover_action" in b:
            out.failover_action = _failover(b["failover_action"])  # type: ignore[assignment]
        for name, t in (agent.get("tools") or {}).items():
            out.tools[name].CopyFrom(
                lpb.ToolBudget(
                    max_calls=int(t.get("max_calls", 0)),
                    cost_per_call_micros=micros(t.get("cost_per_call", 0)),
                    cache_ttl_seconds=int(t.get("cache_ttl", 0)),
                    idempotent=bool(t.get("cache_ttl")),
                )
            )
        return out
    level = (config.get("cost_control") or {}).get("level") or {}
    if "budget" in level:
        b = level["budget"]
        out = lpb.TaskBudget(total_micros=micros(b["max_cost_per_task"]))
        if "warn_at_percent" in b:
            out.warn_at_percent = int(b["warn_at_percent"])
        if "fallback_mode" in b:
            out.failover_action = _failover(b["fallback_mode"])  # type: ignore[assignment]
        return out
    raise ValueError("no agent.budget and no cost_control.level.budget in this configuration")
