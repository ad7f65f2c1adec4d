"""What a Step keeps of what the user says (read sentence by sentence), and of how a task ended
(its outcome, read by the user's next tasks)."""

from __future__ import annotations

import json

import pytest

from server.core.agent.step_io import StepIn
from server.core.deadline import Deadline
from server.core.errors import UnavailableError
from server.core.memory.model import Kind, Record
from tests.unit.agent.fakes import Rig, rig

FINISH = json.dumps({"type": "finish", "answer": "Ticket T-2: FIX-22. Contact: email."})
TOOL = json.dumps({"type": "tool", "tool": "lookup", "params": {}})


@pytest.fixture
def r() -> Rig:
    return rig()


def kept(r: Rig) -> dict[str, Record]:
    return {m.text: m for m in r.memory.records.get("ns", [])}


def test_an_input_of_several_sentences_is_an_episode_and_each_sentence_that_says_something() -> (
    None
):
    r = rig()
    said = "The printer jams on tray two. Always use SMS please. It is broken again."
    out = r.loop.step(StepIn("t", 1, goal="Help", input=said), Deadline(10))
    mems = kept(r)
    assert mems[said].kind == Kind.EPISODE and mems[said].speaker == "user"
    assert mems["Always use SMS please."].kind == Kind.PREFERENCE
    assert "It is broken again." not in mems  # says nothing of its own: in the episode only
    assert len(out.committed) == 2 == len(mems)


def test_a_one_sentence_input_is_one_memory_of_its_kind(r: Rig) -> None:
    r.loop.step(StepIn("t", 1, goal="Help", input="I prefer chat"), Deadline(10))
    assert [(m.text, m.kind) for m in kept(r).values()] == [("I prefer chat", Kind.PREFERENCE)]


def test_the_tasks_own_preferences_are_shown_every_round_whether_written_or_not(r: Rig) -> None:
    r.loop.step(StepIn("t", 1, goal="Help", input="Hello there. I prefer chat."), Deadline(10))
    r.memory.records["ns"] = []  # not written yet (the intake writes off the call)
    later = [StepIn("t", n, input=f"still broken {n}") for n in range(2, 7)]
    for req in later:
        out = r.loop.step(req, Deadline(10))
    assert "I prefer chat." in out.context  # round 1 is long out of the recent rounds


def test_a_step_that_fails_late_takes_back_the_preference_it_held(r: Rig) -> None:
    """Its retry keeps the input again (under a new id): the task's state holds it once."""
    r.fail_first_close()
    req = StepIn("t", 1, goal="Help", input="I prefer chat")
    with pytest.raises(UnavailableError):
        r.loop.step(req, Deadline(10))
    out = r.loop.step(req, Deadline(10))
    session = r.loop._sessions.get("t")
    assert session is not None and [m.memory_id for m in session.said] == out.committed


def test_a_finish_keeps_the_observation_its_answer_rests_on_as_the_tasks_outcome(r: Rig) -> None:
    steps = [
        StepIn("t", 1, goal="Fix ticket T-2", input="fix it"),
        StepIn("t", 2, previous_action=TOOL, observation="Log: FIX-22 recommended for T-2."),
        StepIn("t", 3, previous_action=TOOL, observation="Applied FIX-22 to ticket T-2: done."),
        StepIn("t", 4, previous_action=TOOL, observation="Similar case T-9: FIX-99."),
    ]
    for req in steps:
        r.loop.step(req, Deadline(10))
    r.loop.step(StepIn("t", 4, raw_model_output=FINISH), Deadline(10))
    outcomes = [m for m in kept(r).values() if "key:outcome" in m.tags]
    assert [m.text for m in outcomes] == [
        "Task: Fix ticket T-2\nOutcome: Applied FIX-22 to ticket T-2: done."
    ]  # two of the answer's ids, and newer than the log that names as many


def test_a_finish_that_rests_on_nothing_observed_keeps_no_outcome(r: Rig) -> None:
    r.loop.step(StepIn("t", 1, goal="Help", input="hi"), Deadline(10))
    r.loop.step(StepIn("t", 2, previous_action=TOOL, observation="Nothing here."), Deadline(10))
    r.loop.step(StepIn("t", 2, raw_model_output=FINISH), Deadline(10))
    assert not [m for m in kept(r).values() if "key:outcome" in m.tags]


def _outcome(mid: str, session: str, at: float, text: str) -> Record:
    return Record(
        memory_id=mid, namespace="ns", kind=Kind.OBSERVATION, session_id=session,
        text=f"Task: earlier\nOutcome: {text}", tags=("key:outcome",), created_at=at,
    )  # fmt: skip


def test_the_earlier_outcomes_are_each_latest_sessions_newest(r: Rig) -> None:
    r.memory.records["ns"] = [
        _outcome("m-1", "s1", 1.0, "oldest task T-1"),
        _outcome("m-2", "s2", 2.0, "second task, first finish T-2"),
        _outcome("m-3", "s2", 3.0, "second task, last finish T-2"),
        _outcome("m-4", "s3", 4.0, "third task T-3"),
    ]
    out = r.loop.step(StepIn("t", 1, goal="earlier", input="hi"), Deadline(10))
    assert "third task" in out.context and "second task, last finish T-2" in out.context
    assert "first finish" not in out.context and "oldest task T-1" not in out.context
