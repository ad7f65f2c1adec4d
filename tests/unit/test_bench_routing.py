"""The routing bench's world and scoring helpers, which issue figures rest on. Fast: no server,
no encoder."""

from __future__ import annotations

from collections import Counter

from bench.router_baselines import regex_stores
from bench.routing_world import STORES, build, check, load_templates


def test_the_world_is_deterministic_whole_and_its_answers_sit_in_their_gold_stores() -> None:
    a, b = (
        build(seed=1, users=3, questions_per_user=30),
        build(seed=1, users=3, questions_per_user=30),
    )
    assert a == b
    assert build(seed=2, users=3, questions_per_user=30) != a
    assert check(a) == []
    store_of = {m.id: m.store for mems in a.memories.values() for m in mems}
    for q in a.questions:
        assert set(q.stores) <= set(STORES)
        assert {store_of[x] for x in q.answers} <= set(q.stores)
        assert bool(q.stores) == bool(q.answers)  # small talk: no store, no answer
    assert {q.lang for q in a.questions} == {"en", "zh"}
    assert set(Counter(q.half for q in a.questions)) == {"tune", "report"}


def test_the_halves_hold_out_whole_templates() -> None:
    templates = load_templates()
    half = {t.id: t.half for t in templates}
    world = build(seed=0, users=4, questions_per_user=30)
    for q in world.questions:
        assert half[q.template] == q.half  # a question's half is its template's
    by = Counter((t.lang, t.type, t.half) for t in templates)
    for lang, kind, _ in by:
        assert by[(lang, kind, "tune")] and by[(lang, kind, "report")], (lang, kind)


def test_the_regex_row_names_the_stores_its_expressions_match() -> None:
    assert regex_stores("What did I just say about the hotel?") == {"session"}
    assert regex_stores("What's my name?") == {"profile"}
    assert regex_stores("Summarize what we discussed before") == {"summary", "transcript"}
    assert regex_stores("The hotel in Kyoto") == {"transcript"}  # nothing matched
