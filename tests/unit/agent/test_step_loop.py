"""`AgentLoop.step` against fakes, without a server: what a first Step checks before anything is
booked, a paused task's Steps, and a Step that fails late committing its key events on its
retry."""

from __future__ import annotations

import pytest

from server.core.agent.step_io import StepIn, Usage
from server.core.deadline import Deadline
from server.core.errors import FailedPreconditionError, InvalidArgumentError, UnavailableError
from server.core.ledger.model import Budget, Failover
from server.core.memory.model import Kind, Record
from tests.unit.agent.fakes import Rig, recall_cost, rig

SAID = "For the record, I prefer email only."


@pytest.fixture
def r() -> Rig:
    return rig()


def test_a_first_step_refused_by_its_own_checks_books_nothing(r: Rig) -> None:
    usage = (Usage("m", 1000, 0),)
    with pytest.raises(FailedPreconditionError, match="needs its goal"):
        r.loop.step(StepIn("t", 1, usage=usage, key="k"), Deadline(10))
    with pytest.raises(InvalidArgumentError):
        r.loop.step(StepIn("t", 1, goal="Help", usage=usage), Deadline(10))  # no key
    with pytest.raises(InvalidArgumentError):
        r.loop.step(StepIn("t", 1, goal="Help", tools=({"name": 3},), key="k"), Deadline(10))
    assert r.ledger.status("t").spent == 0 and len(r.loop._sessions) == 0
    out = r.loop.step(StepIn("t", 1, goal="Help", usage=usage, key="k"), Deadline(10))
    assert out.status.spent == 1000 + out.step_cost  # booked once it is admitted


def test_a_paused_task_is_charged_and_does_no_more_work_until_raised() -> None:
    """No recall, context or action while paused; what the user says is still kept (a memory,
    charged as one: nothing the user said is lost while the budget is raised)."""
    r = rig(Budget(total_micros=1000, failover=Failover.PAUSE))
    r.memory.records["ns"] = [Record(memory_id="m-1", namespace="ns", kind=Kind.FACT, text="help")]
    spend = StepIn("t", 1, goal="Help", input="help me", usage=(Usage("m", 850, 0),), key="k")
    out = r.loop.step(spend, Deadline(10))
    assert out.status.state == "paused" and out.failover is not None
    assert out.memories == [] and out.context == ""  # its recall dropped
    kept = r.settings.remember_micros
    assert out.step_cost == kept and len(out.committed) == 1  # the input, kept
    later = r.loop.step(StepIn("t", 2, input="help again"), Deadline(10))
    assert r.memory.recalls == ["help me"] and later.memories == []  # paused: no recall started
    r.ledger.raise_budget("t", 10_000, "raise")
    resumed = r.loop.step(StepIn("t", 3, input="help once more"), Deadline(10))
    assert resumed.status.state == "open" and resumed.memories[0].memory_id == "m-1"
    outcomes = recall_cost(r.memory.units, r.settings, searches=1)  # its first work: once a task
    assert resumed.step_cost == recall_cost(r.memory.units, r.settings) + kept + outcomes


def test_a_step_that_fails_at_close_commits_its_key_events_on_the_retry(r: Rig) -> None:
    r.fail_first_close()
    req = StepIn("t", 1, goal="Help", input=SAID)
    with pytest.raises(UnavailableError):
        r.loop.step(req, Deadline(10))
    assert r.memory.acknowledged == []  # nothing acknowledged before the money was booked
    again = r.loop.step(req, Deadline(10))
    assert len(again.committed) == 1 and r.memory.acknowledged == again.committed


def test_the_earlier_outcomes_are_looked_up_once_a_task_and_again_after_a_failure(r: Rig) -> None:
    """The lookup waits for the namespace's acknowledged memories (a settled Recall), the
    round's recall does not; when memory cannot answer, the Step goes on, says so, and the next
    round looks again."""
    done = Record(
        memory_id="m-old", namespace="ns", kind=Kind.OBSERVATION, session_id="s-before",
        text="Task: Fix ticket T-1\nOutcome: Applied FIX-1 to ticket T-1.", tags=("key:outcome",),
        created_at=5.0,
    )  # fmt: skip
    r.memory.records["ns"] = [done]
    r.memory.unavailable = 1
    first = r.loop.step(StepIn("t", 1, goal="Fix ticket T-2", input="hello"), Deadline(10))
    assert any("outcomes were not looked up" in w for w in first.warnings)
    assert "m-old" not in first.context and r.memory.settled == 1
    second = r.loop.step(StepIn("t", 2, input="still broken"), Deadline(10))
    assert "Applied FIX-1 to ticket T-1" in second.context and r.memory.settled == 2
    third = r.loop.step(StepIn("t", 3, input="any news"), Deadline(10))
    assert "Applied FIX-1 to ticket T-1" in third.context and r.memory.settled == 2  # once


def test_a_round_without_input_recalls_for_its_observations_summary(r: Rig) -> None:
    """A long log is recalled for by its sentences about the task (the encoder reads only a
    text's head), a short observation whole, and a round with input by the input."""
    noise = " ".join(f"Line {i}: checksum {i * 7919} verified in {i} ms." for i in range(60))
    log = f"{noise} Ticket T-77 needs FIX-9 applied to the tray sensor. {noise}"
    steps = [
        StepIn("t", 1, goal="Resolve ticket T-77", input="My tray sensor fails"),
        StepIn("t", 2, previous_action='{"tool": "logs"}', observation=log),
        StepIn("t", 3, previous_action='{"tool": "ping"}', observation="pong from T-77"),
    ]
    for s in steps:
        r.loop.step(s, Deadline(10))
    first, second, third = r.memory.recalls[0], *r.memory.recalls[-2:]  # (and the outcomes')
    assert first == "My tray sensor fails"
    assert "T-77 needs FIX-9" in second and len(second) < len(log) // 4
    assert third == "pong from T-77"
