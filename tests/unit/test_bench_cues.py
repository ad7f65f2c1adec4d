"""`bench cues` reads every question of its blind set and classes each reading."""

from __future__ import annotations

import json

from bench.cues import DATA, run, time_reading


def test_every_blind_question_is_read_and_classed() -> None:
    counts, misses = run(DATA)
    assert sum(counts.values()) == len(json.loads(DATA.read_text())) == 110
    assert {r for _, _, r in counts} <= {
        "ASKER",
        "AGENT",
        "NONE",
        "holds",
        "overlaps",
        "wrong",
        "none",
    }
    assert len(misses) == sum(n for (_, _, r), n in counts.items() if r not in ("holds",)) - sum(
        n
        for (k, _, r), n in counts.items()
        if (k, r) in (("user", "ASKER"), ("assistant", "AGENT"))
    )


def test_a_time_reading_holds_overlaps_or_misses_the_meant_day() -> None:
    assert time_reading("what did I do 3 days ago?", 3, 0) == "holds"
    assert time_reading("what did I do 3 days ago?", 5, 3) == "overlaps"
    assert time_reading("what did I do 3 days ago?", 30, 2) == "wrong"
    assert time_reading("what did I cook?", 3, 0) == "none"
