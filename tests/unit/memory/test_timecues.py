"""Time cues as event-time windows, and time expressions as the answer type of a "when"
question (server/core/memory/timecues.py), through the engine too."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

import msgspec
import numpy as np
import pytest

from server.core.clock import utc
from server.core.engine import MemoryEngine
from server.core.memory.model import Kind, RecallQuery
from server.core.memory.timecues import has_time_expression, window
from server.core.settings import MemorySettings
from tests.conftest import unit_vec
from tests.unit.test_engine import NS, mem

WED = dt.datetime(2026, 12, 2, 15, tzinfo=dt.UTC)  # a Wednesday


def day(y: int, m: int, d: int) -> float:
    return dt.datetime(y, m, d, tzinfo=dt.UTC).timestamp()


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("what did we do yesterday?", day(2026, 12, 1), day(2026, 12, 2)),
        ("the plan from last week", day(2026, 11, 23), day(2026, 11, 30)),
        ("上周说的事", day(2026, 11, 23), day(2026, 11, 30)),
        ("this month", day(2026, 12, 1), day(2027, 1, 1)),
        ("上个月", day(2026, 11, 1), day(2026, 12, 1)),
        ("last year", day(2025, 1, 1), day(2026, 1, 1)),
        ("3 days ago", day(2026, 11, 29), day(2026, 11, 30)),
        ("5天前", day(2026, 11, 27), day(2026, 11, 28)),
        # spans of a week or more: that day, a quarter of the span either side
        (
            "I mentioned it two weeks ago",
            day(2026, 11, 18) - 3.5 * 86400,
            day(2026, 11, 19) + 3.5 * 86400,
        ),
        ("a week ago", day(2026, 11, 25) - 1.75 * 86400, day(2026, 11, 26) + 1.75 * 86400),
        ("两个月前", day(2026, 10, 3) - 15 * 86400, day(2026, 10, 4) + 15 * 86400),
        # the latest such weekday before the reference day
        ("who gave it to me last Saturday?", day(2026, 11, 28), day(2026, 11, 29)),
        ("last wednesday", day(2026, 11, 25), day(2026, 11, 26)),
        ("上周六", day(2026, 11, 28), day(2026, 11, 29)),
        # from that many units back to the end of the reference day
        ("the trips I took in the past three months", day(2026, 9, 3), day(2026, 12, 3)),
        ("during the past month", day(2026, 11, 2), day(2026, 12, 3)),
        ("过去两周", day(2026, 11, 18), day(2026, 12, 3)),
        ("the past few weeks", day(2026, 11, 11), day(2026, 12, 3)),
        # the weekday of the calendar week before (asked on a Wednesday: not this Monday)
        ("上周一", day(2026, 11, 23), day(2026, 11, 24)),
        # Chinese numerals past ten
        ("十二天前", day(2026, 11, 20) - 3 * 86400, day(2026, 11, 21) + 3 * 86400),
        ("二十天前", day(2026, 11, 12) - 5 * 86400, day(2026, 11, 13) + 5 * 86400),
    ],
)
def test_cues_name_a_window_relative_to_the_reference(text: str, start: float, end: float) -> None:
    assert window(text, WED.timestamp()) == (start, end)


def test_no_cue_no_window() -> None:
    assert window("what is the wifi password", WED.timestamp()) is None
    assert window("a week-long trip", WED.timestamp()) is None
    assert window("how many days ago did I meet Emma?", WED.timestamp()) is None


@pytest.mark.parametrize(
    "text",
    [
        "我要在5月1日前交报告",  # a deadline, not "one day ago"
        "12月31日前完成了吗",
        "我家附近天天下雨",  # 近 and 天 inside other words
        "最近天气怎么样",
        "将近一年",
        "近年来",
        "what did I do on the last day of my trip?",
        "in the past",
        "a few days",
    ],
)
def test_words_that_only_look_like_a_time_cue_name_no_window(text: str) -> None:
    assert window(text, WED.timestamp()) is None


@pytest.mark.parametrize(
    ("text", "says_when"),
    [
        ("Last Saturday I ran the half marathon in Osaka.", True),
        ("上周六我在大阪跑了半马。", True),
        ("We met on Monday at 10:00", True),
        ("Did I ever tell you how I ran the half marathon? Long story.", False),
        ("我一直在回想那次跑半马的事。", False),
    ],
)
def test_time_expressions(text: str, says_when: bool) -> None:
    assert has_time_expression(text) is says_when


def test_a_when_question_prefers_the_memory_that_says_when(
    engine_factory: Callable[..., MemoryEngine],
) -> None:
    """Two tellings equally near the question; only the one that says when answers it: its
    score is raised by exactly the share `temporal_answer_boost`."""
    rng = np.random.default_rng(31)
    q = unit_vec(rng)
    eng = engine_factory()
    eng.remember(
        [
            mem("Someone asked me again about how I ran the half marathon.", Kind.EPISODE, q),
            mem("Last Saturday I ran the half marathon in Osaka.", Kind.EPISODE, q),
        ]
    )
    eng.indexer.catch_up()
    ask = RecallQuery(namespace=NS, text="when did I run the half marathon", vector=q)

    def fused(e: MemoryEngine) -> dict[str, float]:
        return {
            h.record.text[:4]: h.score.fused for h in e.recall(msgspec.structs.replace(ask)).hits
        }

    with_boost = fused(eng)
    assert eng.recall(ask).hits[0].record.text.startswith("Last Saturday")
    eng.close()
    s = MemorySettings()
    off = msgspec.structs.replace(
        s, hybrid_search=msgspec.structs.replace(s.hybrid_search, temporal_answer_boost=0.0)
    )
    without = fused(engine_factory(off))
    boost = s.hybrid_search.temporal_answer_boost
    assert with_boost["Last"] == pytest.approx(without["Last"] * (1 + boost), abs=1e-5)
    assert with_boost["Some"] == pytest.approx(without["Some"], abs=1e-5)


def test_a_question_that_mentions_the_past_without_asking_when_boosts_no_answer_type(
    engine_factory: Callable[..., MemoryEngine],
) -> None:
    """ "之前那次上线失败是怎么回事" looks back (nothing decays) but does not ask when: a dated
    memory gets no answer-type boost over the one that answers it."""
    rng = np.random.default_rng(32)
    q = unit_vec(rng)
    eng = engine_factory()
    eng.remember(
        [
            mem("上次上线失败是因为配置文件写错了。", Kind.FACT, q),
            mem("上周六我们去爬山了。", Kind.FACT, q),
        ]
    )
    eng.indexer.catch_up()
    hits = eng.recall(RecallQuery(namespace=NS, text="之前那次上线失败是怎么回事", vector=q)).hits
    by = {h.record.text[:2]: h.score for h in hits}
    assert by["上周"].fused <= by["上次"].fused


LAST = 253_402_300_799 + 999_999_999 / 1e9  # as validation accepts it: rounds to year 10000


def test_the_calendars_last_instant_is_read_exactly() -> None:
    assert utc(LAST) == dt.datetime(9999, 12, 31, 23, 59, 59, 999_999, tzinfo=dt.UTC)
    assert window("yesterday", LAST) == (day(9999, 12, 30), day(9999, 12, 31))
    assert window("3天前", LAST) == (day(9999, 12, 28), day(9999, 12, 29))


@pytest.mark.parametrize("text", ["today", "0 days ago", "this week", "this month", "this year"])
def test_a_window_past_the_calendars_end_is_none(text: str) -> None:
    assert window(text, LAST) is None


def test_a_window_before_the_epoch_is_kept() -> None:
    assert window("yesterday", 0.0) == (-86_400.0, 0.0)
