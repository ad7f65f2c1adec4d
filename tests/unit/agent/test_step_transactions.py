"""A Step takes two ledger transactions: one opening (the reported charges under the Step's key;
on a task's first Step also the read of where the task lives), one closing (pocketd's own work
and a loop's step down; the Step's memories go to the engine's intake), whatever the round:
counted on a ledger store in memory, with `AgentLoop.step` run against fakes."""

from __future__ import annotations

import json

import pytest

from server.core.agent.step_io import StepIn, Usage
from server.core.deadline import Deadline
from server.core.ledger.model import Budget, Failover
from server.core.memory.model import Kind, Record
from tests.unit.agent.fakes import Rig, recall_cost, rig

SEARCH = {"name": "search", "description": "Search the web", "parameters": {"type": "object"}}
LOOPED = json.dumps({"type": "tool", "tool": "search", "params": {"q": "flights"}})


@pytest.fixture
def r() -> Rig:
    return rig()


def test_the_first_round_reads_the_task_in_its_opening_transaction(r: Rig) -> None:
    said = "For the record, I prefer email only."
    first = StepIn("t", 1, goal="Book a trip", input=said, usage=(Usage("m", 1000, 0),), key="k")
    out, n = r.counted(lambda: r.loop.step(first, Deadline(10)))
    assert n == 2  # the opening (the read, the reports) and the closing (pocketd's work)
    assert out.namespace == "ns" and len(out.committed) == 1
    own = recall_cost(r.memory.units, r.settings) + r.settings.remember_micros
    own += recall_cost(r.memory.units, r.settings, searches=1)  # the earlier tasks' outcomes
    assert out.step_cost == own
    assert out.status.spent == 1000 + own  # the usage at the default price, and pocketd's work
    (kept,) = r.memory.records["ns"]  # acknowledged to the engine's intake once closed
    assert kept.memory_id == out.committed[0] and kept.kind == Kind.PREFERENCE
    assert r.memory.acknowledged == out.committed


def test_a_normal_round_and_its_retry_book_the_reports_once(r: Rig) -> None:
    r.loop.step(StepIn("t", 1, goal="Book a trip"), Deadline(10))
    later = StepIn(
        "t", 2, input="Any flights to Lisbon?", previous_action="search",
        observation="3 flights found", usage=(Usage("m", 2000, 0),), key="k2",
    )  # fmt: skip
    out, n = r.counted(lambda: r.loop.step(later, Deadline(10)))
    assert n == 2
    spent = out.status.spent
    again, n = r.counted(lambda: r.loop.step(later, Deadline(10)))  # the client retries it
    assert n == 2
    assert again.status.spent == spent + again.step_cost  # only pocketd's work, run again
    assert again.step_cost == recall_cost(r.memory.units, r.settings)


def test_a_step_with_nothing_to_close_takes_one_transaction(r: Rig) -> None:
    r.loop.step(StepIn("t", 1, goal="Book a trip"), Deadline(10))
    finish = json.dumps({"type": "finish", "answer": "Done."})
    out, n = r.counted(lambda: r.loop.step(StepIn("t", 1, raw_model_output=finish), Deadline(10)))
    assert n == 1 and out.action is not None and out.step_cost == 0


def test_a_loop_steps_down_in_the_closing_transaction_once_per_round(r: Rig) -> None:
    r.loop.step(StepIn("t", 1, goal="Book a trip", tools=(SEARCH,)), Deadline(10))
    for rnd in (1, 2):
        r.loop.step(StepIn("t", rnd, raw_model_output=LOOPED), Deadline(10))
    third = StepIn("t", 3, raw_model_output=LOOPED)
    out, n = r.counted(lambda: r.loop.step(third, Deadline(10)))
    assert n == 2  # the opening, and the closing with the step down
    assert out.status.level == 1 and any("3 times in a row" in w for w in out.warnings)
    again, n = r.counted(lambda: r.loop.step(third, Deadline(10)))  # a retry: no second step
    assert n == 2 and again.status.level == 1


def test_a_level_4_round_charges_its_goal_recall_in_the_closing_transaction() -> None:
    r = rig(Budget(total_micros=1000, failover=Failover.BEST_MEMORY_ANSWER))  # ordinary 800
    goal = Record(memory_id="m-1", namespace="ns", kind=Kind.FACT, text="parcel to Lisbon")
    r.memory.records["ns"] = [goal]
    spend = StepIn(
        "t", 1, goal="Ship the parcel", input="What is the weather?",
        usage=(Usage("m", 900, 0),), key="k",
    )  # fmt: skip
    out, n = r.counted(lambda: r.loop.step(spend, Deadline(10)))
    assert n == 2  # the goal's recall is charged with the round's work, at close
    assert out.status.level == 4 and out.failover is not None
    assert out.failover.best_memory is not None and out.failover.best_memory.memory_id == "m-1"
    # the round's, the earlier tasks' outcomes (once a task), the goal's for the failover
    assert r.memory.recalls == ["What is the weather?", "Ship the parcel", "Ship the parcel"]
    two = 2 * recall_cost(r.memory.units, r.settings)
    two += recall_cost(r.memory.units, r.settings, searches=1) + r.settings.remember_micros
    assert out.step_cost == two and out.status.spent == 900 + two  # and the outcomes, the input
