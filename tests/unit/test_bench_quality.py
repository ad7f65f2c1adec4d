"""The quality benchmark's generator and scoring, which issue figures rest on."""

from __future__ import annotations

from collections import Counter

from bench.dialogs import TYPES, generate
from bench.quality import score, tokens


def test_the_generator_is_deterministic_and_its_evidence_exists() -> None:
    a, b = generate(1, conversations=4, sessions=6), generate(1, conversations=4, sessions=6)
    assert a == b
    assert generate(2, conversations=4, sessions=6) != a
    turns = {t.turn_id: t for t in a.turns}
    assert len(turns) == len(a.turns)
    assert set(Counter(q.kind for q in a.questions)) == set(TYPES)
    for q in a.questions:
        assert q.evidence and all(turns[e].namespace == q.namespace for e in q.evidence)
    multi = [q for q in a.questions if q.kind == "multi_hop"]
    assert all(len({turns[e].session_id for e in q.evidence}) >= 2 for q in multi)
    # Both languages, and every conversation has two speakers.
    assert any("是" in t.text for t in a.turns) and any(" the " in t.text for t in a.turns)
    for ns in {t.namespace for t in a.turns}:
        assert len({t.speaker for t in a.turns if t.namespace == ns}) == 2


def test_adversarial_evidence_has_a_look_alike_of_the_other_speaker() -> None:
    d = generate(3, conversations=2, sessions=6)
    turns = {t.turn_id: t for t in d.turns}
    for q in (q for q in d.questions if q.kind == "adversarial"):
        ev = turns[q.evidence[0]]
        words = ev.text.split(": ", 1)[1]
        twins = [t for t in d.turns if t.namespace == ev.namespace and t.text.endswith(words)]
        # The same words, said by both speakers: only the name tells evidence from trap.
        assert any(t.speaker != ev.speaker for t in twins), q


def test_tokens_are_words_and_cjk_bigrams() -> None:
    assert tokens("Order ORD-48213 failed") == ["order", "ord", "48213", "failed"]
    assert tokens("上周六我跑了") == ["上周", "周六", "六我", "我跑", "跑了"]
    assert tokens("我 ok") == ["ok", "我"]


def test_recall_at_k_counts_the_share_of_evidence_found() -> None:
    d = generate(1, conversations=2, sessions=6)
    perfect = score(d.questions, lambda q: list(q.evidence))
    assert all(m["r5"] == 1.0 for m in perfect.values())  # at most 3 evidence turns each
    nothing = score(d.questions, lambda q: [])
    assert nothing["overall"]["r10"] == 0.0
    half = score(d.questions, lambda q: list(q.evidence[:1]))
    multi = [q for q in d.questions if q.kind == "multi_hop"]
    expected = sum(1 / len(q.evidence) for q in multi) / len(multi)
    assert abs(half["multi_hop"]["r5"] - expected) < 1e-9
    assert perfect["overall"]["questions"] == len(d.questions)
