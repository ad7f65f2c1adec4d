"""The failover's partial result: the goal, then the newest rounds that fit, in order."""

from __future__ import annotations

from server.core.agent.context import Recalled, Turn
from server.core.agent.failover import best, partial_result


def words(text: str) -> int:
    return len(text.split())


def test_the_partial_result_keeps_the_newest_rounds_within_its_budget() -> None:
    turns = [Turn(n, f"act{n}", f"Observed thing number {n}.") for n in range(1, 30)]
    out = partial_result("Fix the build", turns, words, max_tokens=40)
    lines = out.splitlines()
    assert lines[0] == "Goal: Fix the build"
    assert words(out) <= 40
    rounds = [int(line.split()[1].rstrip(":")) for line in lines[1:]]
    assert rounds == sorted(rounds) and rounds[-1] == 29  # the newest, in round order
    assert 1 not in rounds


def test_a_round_without_an_observation_is_its_action_alone() -> None:
    out = partial_result("g", [Turn(1, "search(x)", "")], words)
    assert out.splitlines()[1] == "Round 1: search(x)"


def test_best_is_the_highest_score_or_none() -> None:
    a = Recalled("a", "x", 0.2, "conversation", 0.7)
    b = Recalled("b", "y", 0.9, "conversation", 0.7)
    assert best([a, b]) == b and best([]) is None
