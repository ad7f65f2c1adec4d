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
    assert session is not None and [m.memory_id for m, _ in session.said] == out.committed


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


def test_a_finish_sent_again_keeps_no_second_outcome(r: Rig) -> None:
    r.loop.step(StepIn("t", 1, goal="Fix ticket T-2", input="fix it"), Deadline(10))
    obs = "Applied FIX-22 to ticket T-2: done."
    r.loop.step(StepIn("t", 2, previous_action=TOOL, observation=obs), Deadline(10))
    first = r.loop.step(StepIn("t", 2, raw_model_output=FINISH), Deadline(10))
    again = r.loop.step(StepIn("t", 2, raw_model_output=FINISH), Deadline(10))
    outcomes = [m for m in kept(r).values() if "key:outcome" in m.tags]
    assert len(outcomes) == 1 and outcomes[0].memory_id in first.committed
    assert not again.committed and outcomes[0].source.task_id == "t"


def test_an_input_whose_sentences_say_nothing_alone_is_read_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A preference spread over two sentences (the channel in one, the code in the next): no
    sentence reads as one alone, the whole does, and the input is kept as one."""
    from server.core.agent.said import LABELS, Reading, Said, SaidHead

    said = "Email from now on. Code PREF-EMAIL-1."

    def read(text: str, vector: object) -> Reading:
        p = 0.99 if text == said else 0.3
        return Reading(Said.PREFERENCE if text == said else Said.OTHER, p, (p, 0.0, 0.0, 1 - p))

    r = rig()
    assert len(LABELS) == 4
    monkeypatch.setattr(SaidHead, "read", lambda self, text, vector: read(text, vector))
    out = r.loop.step(StepIn("t", 1, goal="Help", input=said), Deadline(10))
    mems = kept(r)
    assert list(mems) == [said] and mems[said].kind == Kind.PREFERENCE
    assert len(out.committed) == 1


def test_the_tasks_own_profile_keeps_believed_preferences_before_maybes() -> None:
    from server.core.agent.context import Recalled
    from server.core.agent.keep import hold

    said: list[tuple[Recalled, bool]] = []
    for i, believed in enumerate([True, False, False, True, False]):
        hold(said, (Recalled(f"m-{i}", "x", 1.0, "", 0.7), believed), 3)
    assert [(m.memory_id, b) for m, b in said] == [("m-0", True), ("m-3", True), ("m-4", False)]


def test_each_earlier_task_ends_with_its_outcome_or_its_sessions_newest_milestone() -> None:
    from server.core.agent.recall import ended
    from server.core.memory.model import Hit, Score, Source

    def hit(mid: str, tag: str, session: str, task: str, at: float) -> Hit:
        rec = Record(
            memory_id=mid, namespace="ns", kind=Kind.OBSERVATION, session_id=session,
            tags=(f"key:{tag}",), source=Source(task_id=task), created_at=at,
        )  # fmt: skip
        return Hit(rec, Score(0.5, 0.0, 0.5, 1.0, 0.5, True, False))

    hits = [
        hit("o1", "outcome", "s1", "t1", 10.0),
        hit("m1", "stage", "s1", "t1", 11.0),  # s1 has an outcome: its milestones are not read
        hit("m2a", "stage", "s2", "t2", 20.0),
        hit("m2b", "fixed", "s2", "t2", 21.0),  # s2 kept no outcome: its newest milestone
        hit("o3a", "outcome", "s3", "t3", 30.0),
        hit("o3b", "outcome", "s3", "t4", 31.0),  # two tasks of one session: one each
        hit("o5", "outcome", "s5", "t5", 50.0),  # this task's own: left out
        hit("m5", "stage", "s5", "t5", 51.0),  # and this session's milestones
    ]
    assert [h.record.memory_id for h in ended(hits, "t5", "s5")] == ["o3b", "o3a", "m2b", "o1"]


def test_consecutive_sentences_likeliest_the_same_are_one_span_as_written() -> None:
    from server.core.agent.keep import spans
    from server.core.agent.said import Reading, Said

    def reading(said: Said, p: float, likeliest: Said) -> Reading:
        probs = [0.0] * 4
        probs[[Said.PREFERENCE, Said.FACT, Said.CORRECTION, Said.OTHER].index(likeliest)] = p
        return Reading(said, p, tuple(probs))

    said = "The fan grinds.  Use sms from now on. 代码PREF-SMS-1。 Thanks! Use chat. Bye. Ok."
    units = [
        ("The fan grinds.", reading(Said.OTHER, 0.9, Said.OTHER)),
        ("Use sms from now on.", reading(Said.PREFERENCE, 0.97, Said.PREFERENCE)),
        ("代码PREF-SMS-1。", reading(Said.OTHER, 0.9, Said.OTHER)),  # its code: taken
        ("Thanks!", reading(Said.OTHER, 0.9, Said.OTHER)),  # names no code: stands alone
        ("Use chat.", reading(Said.PREFERENCE, 0.9, Said.PREFERENCE)),
        ("Bye.", reading(Said.OTHER, 0.9, Said.OTHER)),  # names no code: stands alone
        ("Ok.", reading(Said.OTHER, 0.9, Said.OTHER)),
    ]
    out = spans(said, units)
    assert [t for t, _ in out] == [
        "The fan grinds.", "Use sms from now on. 代码PREF-SMS-1。", "Thanks!", "Use chat.",
        "Bye.", "Ok.",
    ]  # fmt: skip
    joined = out[1][1]
    assert joined is not None and joined.said == Said.PREFERENCE and joined.p == 0.97
    units[2] = ("代码PREF-SMS-1。", reading(Said.OTHER, 0.6, Said.PREFERENCE))  # likeliest the same
    assert spans(said, units)[1][0] == "Use sms from now on. 代码PREF-SMS-1。"
    said = "I live in Oslo. My code is 4411."
    fact = [
        ("I live in Oslo.", reading(Said.FACT, 0.9, Said.FACT)),
        ("My code is 4411.", reading(Said.OTHER, 0.9, Said.OTHER)),  # a fact takes none
    ]
    assert [t for t, _ in spans(said, fact)] == ["I live in Oslo.", "My code is 4411."]


def test_the_profile_shows_the_newest_of_the_nearest_preferences() -> None:
    r = rig()
    r.memory.records["ns"] = [
        Record(
            memory_id=f"m-{i}",
            namespace="ns",
            kind=Kind.PREFERENCE,
            text=f"use channel {i}",
            tags=("key:preference",),
            created_at=float(i),
        )
        for i in range(1, 6)
    ]
    out = r.loop.step(StepIn("t", 1, goal="Help", input="hello"), Deadline(10))
    assert [m.memory_id for m in out.memories] == ["m-5", "m-4", "m-3"]


def test_an_input_of_many_statements_keeps_a_bounded_number_apart() -> None:
    from server.core.agent.keep import SPANS_KEPT

    r = rig()
    said = " ".join(f"I prefer chat {i}. It is broken {i}." for i in range(40))
    out = r.loop.step(StepIn("t", 1, goal="Help", input=said), Deadline(10))
    assert len(out.committed) == 1 + SPANS_KEPT  # the input as an episode, and the first spans
