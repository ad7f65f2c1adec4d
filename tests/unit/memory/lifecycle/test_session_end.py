"""A session's end (server/core/memory/lifecycle/session_end.py): EndSession, or a maintenance run
once the session is idle past `hot.ttl_seconds`, summarises its turns into warm summaries linked
to the turns they came from, and moves its hot turns to warm; an unknown session is NOT_FOUND
naming `session_id`."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from server.core.deadline import no_deadline
from server.core.engine import MemoryEngine
from server.core.errors import Location, NotFoundError
from server.core.memory.model import GateDecision, Kind, Record, Tier
from tests.conftest import FakeClock
from tests.unit.memory.lifecycle.lifecycle_kit import lifecycle_settings, maintain, records
from tests.unit.test_engine import NS, mem

ENGLISH = [
    ("user", "I'm moving to Lisbon in March, so switch my timezone to Europe/Lisbon."),
    ("assistant", "Sure, I will update the timezone on your profile."),
    ("user", "My new manager is Priya Raman; send the weekly report to her from now on."),
    ("user", "The quarterly budget review moved to April 14th."),
]
CHINESE = [
    ("user", "我下个月搬到杭州，请把收货地址改成西湖区文三路90号。"),
    ("assistant", "好的，新地址从下一个订单开始使用。"),
    ("user", "另外，周报以后发给新经理王磊。"),
    ("user", "The staging server moves to the Frankfurt region next week."),
]


def converse(
    engine: MemoryEngine, clock: FakeClock, session: str, turns: list[tuple[str, str]]
) -> list[str]:
    """The session's turns, a minute apart; each arrives hot. Returns their ids."""
    out = []
    for speaker, text in turns:
        clock.advance(60)
        r = engine.remember([mem(text, Kind.EPISODE, session_id=session, speaker=speaker)])[0]
        assert r.decision == GateDecision.STORED and r.tier == Tier.HOT, r.reason
        out.append(r.memory_id)
    return out


def session_summaries(engine: MemoryEngine, session: str) -> list[Record]:
    return [
        r for r in records(engine).values() if r.kind == Kind.SUMMARY and r.session_id == session
    ]


def assert_ended(engine: MemoryEngine, session: str, turns: list[str]) -> list[Record]:
    """The turns warm, and summaries of the session whose every link names one of its turns;
    each summary says what its turn said, in its words (after the speaker's name: the session
    has two speakers)."""
    recs = records(engine)
    assert {recs[t].tier for t in turns} == {Tier.WARM}
    got = session_summaries(engine, session)
    assert got
    for s in got:
        assert s.tier == Tier.WARM and s.derived_from
        assert set(s.derived_from) <= set(turns)
        for t in s.derived_from:
            speaker, _, sentence = s.text.partition(": ")
            assert speaker == recs[t].speaker and sentence in recs[t].text, (s.text, t)
    return got


def test_end_session_summarises_the_turns_and_moves_them_to_warm(
    engine_factory: Callable[..., MemoryEngine], clock: FakeClock
) -> None:
    engine = engine_factory(lifecycle_settings())
    turns = converse(engine, clock, "s1", ENGLISH)
    other = converse(engine, clock, "s2", [("user", "Book the team offsite for June 3rd.")])
    res = engine.end_session(NS, "s1", no_deadline())
    assert res.moved == len(turns)
    assert res.summaries and all(s.decision == GateDecision.STORED for s in res.summaries)
    got = assert_ended(engine, "s1", turns)
    assert {s.memory_id for s in got} == {s.memory_id for s in res.summaries}
    said = " ".join(s.text for s in got)
    assert "Priya Raman" in said  # a fact the agent must not lose
    # Another session is left as it was.
    assert records(engine)[other[0]].tier == Tier.HOT
    assert session_summaries(engine, "s2") == []


def test_a_bilingual_session_keeps_both_languages(
    engine_factory: Callable[..., MemoryEngine], clock: FakeClock
) -> None:
    engine = engine_factory(lifecycle_settings())
    turns = converse(engine, clock, "zh-en", CHINESE)
    engine.end_session(NS, "zh-en", no_deadline())
    said = " ".join(s.text for s in assert_ended(engine, "zh-en", turns))
    assert "文三路90号" in said and "王磊" in said
    assert "Frankfurt" in said


def test_an_idle_session_is_ended_by_maintenance_after_the_ttl(
    engine_factory: Callable[..., MemoryEngine], clock: FakeClock
) -> None:
    engine = engine_factory(lifecycle_settings(hot={"ttl_seconds": 1800.0}))
    turns = converse(engine, clock, "s1", ENGLISH)
    clock.advance(1700)  # idle, but not for 30 minutes yet
    report = maintain(engine)
    assert (report.sessions_ended, report.moved_to_warm) == (0, 0)
    assert {records(engine)[t].tier for t in turns} == {Tier.HOT}
    clock.advance(200)
    report = maintain(engine)
    assert (report.sessions_ended, report.moved_to_warm) == (1, len(turns))
    assert_ended(engine, "s1", turns)
    # Ended once: the next run finds no idle session and writes no second summary.
    n = len(session_summaries(engine, "s1"))
    assert maintain(engine).sessions_ended == 0
    assert len(session_summaries(engine, "s1")) == n


def test_an_unknown_session_is_not_found_naming_session_id(
    engine_factory: Callable[..., MemoryEngine], clock: FakeClock
) -> None:
    engine = engine_factory(lifecycle_settings())
    converse(engine, clock, "s1", ENGLISH[:1])
    for namespace, session in ((NS, "no-such-session"), ("another-namespace", "s1")):
        with pytest.raises(NotFoundError) as err:
            engine.end_session(namespace, session, no_deadline())
        assert err.value.where == Location("session_id")
        assert err.value.resource == "session" and err.value.name == session
