"""The heuristic policy (server/core/routing/heuristic.py): each pocket starts from its store's
intent, and each rule moves the pockets it names, and only those."""

from __future__ import annotations

import numpy as np
import pytest

from server.core.memory.model import Kind, Modality, PocketStats, Tier
from server.core.routing.features import FeatureExtractor
from server.core.routing.heuristic import PRIOR, Evidence, heuristic, measure
from server.core.settings import RouterSettings

DAY = 86_400.0
NOW = 1_800_000_000.0
FX = FeatureExtractor(RouterSettings(), lambda t: t.lower().replace("?", "").split())


def pocket(
    name: str,
    kind: Kind = Kind.FACT,
    tier: Tier = Tier.WARM,
    bucket: str = "",
    span: tuple[float, float] = (NOW - 90 * DAY, NOW),
    centroid: np.ndarray | None = None,
) -> PocketStats:
    return PocketStats(
        name=name,
        kind=kind,
        tier=tier,
        modality=Modality.TEXT,
        bucket=bucket,
        size=100,
        method="exact",
        cost_per_vector=1.0,
        search_cost=100.0,
        oldest=span[0],
        newest=span[1],
        radius=0.1,
        centroid=centroid,
    )


def probs(
    text: str, pockets: list[PocketStats], **ev: object
) -> tuple[dict[str, float], list[str]]:
    f = FX.extract(text, None, False)
    e = Evidence(
        ev.pop("hits", {}),  # type: ignore[arg-type]
        ev.pop("window", None),  # type: ignore[arg-type]
        ev.pop("intents", {}),  # type: ignore[arg-type]
    )
    scored, rules = heuristic(f, pockets, e, measure(f, None, pockets, e))
    return {s.pocket.name: s.probability for s in scored}, rules


def test_each_pocket_starts_from_its_stores_intent() -> None:
    pockets = [
        pocket("fact"),
        pocket("preference", Kind.PREFERENCE),
        pocket("summary", Kind.SUMMARY),
        pocket("past", Kind.EPISODE, bucket="2026-W10"),
        pocket("now", Kind.EPISODE, tier=Tier.HOT),
        pocket("skill", Kind.SKILL),
    ]
    intents = {"profile": 0.2, "summary": 0.9, "history": 0.6, "session": 0.1, "skill": 0.05}
    p, rules = probs("how did the renovation go", [*pockets, pocket("other", Kind.UNSPECIFIED)],
                     intents=intents)  # fmt: skip
    assert p == {
        "fact": 0.2, "preference": 0.2, "summary": 0.9, "past": 0.6, "now": 0.1, "skill": 0.05,
        "other": PRIOR,
    }  # fmt: skip
    assert rules == []
    blind, _ = probs("how did the renovation go", pockets)  # no vector: no intent
    assert set(blind.values()) == {PRIOR}


def test_about_me_raises_the_profile_in_the_first_person_and_the_third() -> None:
    pockets = [pocket("fact"), pocket("preference", Kind.PREFERENCE), pocket("ep", Kind.EPISODE)]
    for text in ("what is my shoe size", "what is the user's shoe size"):
        p, rules = probs(text, pockets, intents={"profile": 0.4, "history": 0.4})
        assert p["fact"] == p["preference"] == 0.9 and p["ep"] == 0.4
        assert "about_me" in rules


def test_a_time_window_cuts_the_buckets_it_misses_and_raises_none() -> None:
    week = (NOW - 7 * DAY, NOW)
    old = pocket("ep/old", Kind.EPISODE, bucket="2026-W10", span=(NOW - 200 * DAY, NOW - 190 * DAY))
    new = pocket("ep/new", Kind.EPISODE, bucket="2026-W40", span=(NOW - 3 * DAY, NOW - 2 * DAY))
    fact = pocket("fact")
    p, rules = probs("what happened last week", [old, new, fact], window=week)
    assert p["ep/new"] == PRIOR and p["ep/old"] == pytest.approx(PRIOR * 0.3)
    assert p["fact"] == PRIOR  # unbucketed: the window says nothing of it
    assert "time_window" in rules
    # A window no bucket meets cuts nothing: the cue named a time the memory does not cover.
    p, _ = probs("what happened last week", [old, fact], window=week)
    assert p["ep/old"] == PRIOR


def test_holding_a_query_term_raises_only_the_current_session_and_exact_identifiers() -> None:
    p, rules = probs(
        "restaurant booking",
        [pocket("now", Kind.EPISODE, tier=Tier.HOT), pocket("past", Kind.EPISODE, bucket="W1")],
        hits={"now": {"restaurant": 1}, "past": {"restaurant": 3, "booking": 2}},
    )
    assert p["now"] == 0.5 and p["past"] == PRIOR  # every week holds some term of a question
    assert rules == ["in_session"]
    p, rules = probs(
        "order A1234-77 status",
        [pocket("fact"), pocket("past", Kind.EPISODE, bucket="W1")],
        hits={"past": {"a1234-77": 1}},
    )
    assert p["past"] == 0.95 and p["fact"] == PRIOR and rules == ["identifier"]


def test_just_said_goes_to_the_current_session_only() -> None:
    p, rules = probs(
        "as I just said",
        [pocket("hot", Kind.EPISODE, tier=Tier.HOT), pocket("past", Kind.EPISODE, bucket="W1")],
        intents={"session": 0.3, "history": 0.7},
    )
    assert p == {"hot": 0.95, "past": 0.7} and rules == ["just_said"]
