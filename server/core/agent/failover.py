"""What a task at the ladder's last step gets (seed 000 §3.2, 001 §5.3): never a bare error.

At degrade level 4 a Step answers with a `FailoverPlan` beside its usual answer:
- `pause`: the task stopped (`stop_reason`); the partial result is what it did so far, and
  `RaiseBudget` resumes it where it stopped;
- `best_memory_answer`: the best memory recalled for the task's goal, with its score and source,
  to answer with instead of another model call;
- `escalate_human` and `soft_stop`: the partial result, to hand over or to finish with (the
  emergency share of the budget is kept for that final answer).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from server.core.agent.context import Recalled, Turn, summarize
from server.core.ledger.model import Failover, Status

PARTIAL_TOKENS = 256  # the partial result's size
TURN_TOKENS = 48  # each round's share of it


@dataclass(frozen=True)
class FailoverPlan:
    action: Failover
    stop_reason: str
    partial_result: str
    best_memory: Recalled | None = None


def partial_result(
    goal: str, turns: Sequence[Turn], count: Callable[[str], int], max_tokens: int = PARTIAL_TOKENS
) -> str:
    """The goal, then the latest rounds (action and the gist of what it observed), newest
    kept first, in round order, within `max_tokens`."""
    head = f"Goal: {summarize(goal, max_tokens // 4, count)}"
    used = count(head)
    lines: list[str] = []
    for t in sorted(turns, key=lambda t: t.round, reverse=True):
        gist = summarize(t.observation, TURN_TOKENS, count)
        line = f"Round {t.round}: {t.action[:200]}" + (f" -> {gist}" if gist else "")
        n = count(line)
        if used + n > max_tokens:
            break
        lines.append(line)
        used += n
    return "\n".join([head, *reversed(lines)])


def best(memories: Sequence[Recalled]) -> Recalled | None:
    """The highest scored memory, if any."""
    return max(memories, key=lambda m: m.score, default=None)


def plan(
    status: Status, goal: str, turns: Sequence[Turn], count: Callable[[str], int],
    best_memory: Recalled | None,
) -> FailoverPlan:  # fmt: skip
    """The plan at degrade level 4: the action, the stop reason (or the newest warning) and the
    partial result, with the best memory (`best_memory_answer`)."""
    why = status.stop_reason or (status.warnings[-1] if status.warnings else "")
    return FailoverPlan(status.failover, why, partial_result(goal, turns, count), best_memory)


def foreseen(status: Status, round_: int, own: int, loop: bool) -> bool:
    """Whether a Step's closing transaction can bring the task to level 4, from the status its
    opening transaction left: already there, or a loop's step down from level 3, or pocketd's
    own work (`own` micros) spending the ordinary budget, or a round beyond the task's rounds
    (spend in a round past `max_rounds` is the failover). (Another call's spend between the
    two transactions is not foreseen.)"""
    if status.level >= 4 or (loop and status.level >= 3):
        return True
    limits = {x.limit: x for x in status.limits}
    ordinary, rounds = limits.get("ordinary"), limits.get("rounds")
    spends = own > 0 and ordinary is not None and status.spent + own >= ordinary.value
    beyond = own > 0 and rounds is not None and round_ > rounds.value
    return spends or beyond
