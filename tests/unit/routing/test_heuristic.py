"""The heuristic policy (server/core/routing/heuristic.py): each store's probability moves with
the question's form, meaning and terms as its model says, and each rule moves the pockets it
names, and only those."""

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
        term_hits=ev.pop("hits", {}),  # type: ignore[arg-type]
        window=ev.pop("window", None),  # type: ignore[arg-type]
        intents=ev.pop("intents", {}),  # type: ignore[arg-type]
        readout=ev.pop("readout", {}),  # type: ignore[arg-type]
    )
    scored, rules = heuristic(f, pockets, e, measure(f, None, pockets, e))
    return {s.pocket.name: s.probability for s in scored}, rules


STORES = [
    pocket("fact"),
    pocket("preference", Kind.PREFERENCE),
    pocket("summary", Kind.SUMMARY),
    pocket("past", Kind.EPISODE, bucket="2026-W10"),
    pocket("now", Kind.EPISODE, tier=Tier.HOT),
]
# Readouts on their scale (centred across the intents): no intent stands out, small talk least.
FLAT = {"session": 0.1, "profile": 0.1, "summary": 0.1, "history": 0.1, "skill": 0.1, "none": -0.5}


def test_a_pocket_gets_its_stores_probability_and_others_their_intent_or_the_prior() -> None:
    pockets = [*STORES, pocket("skill", Kind.SKILL), pocket("other", Kind.UNSPECIFIED)]
    p, rules = probs("how did it go", pockets, readout=FLAT, intents={"skill": 0.05})
    assert p["fact"] == p["preference"]  # one store, one probability
    assert p["skill"] == 0.05 and p["other"] == PRIOR and rules == []
    assert all(0.0 < p[n] < 1.0 for n in ("summary", "past", "now"))


def test_the_form_of_the_question_moves_its_stores() -> None:
    def store(text: str, name: str) -> float:
        return probs(text, STORES, readout=FLAT)[0][name]

    assert store("give me the gist of the renovation", "summary") > store(
        "the renovation", "summary"
    )
    assert store("what exactly was the quote back then", "past") > store("the quote", "past")
    assert store("what is my usual coffee order", "fact") > store("the coffee order", "fact")
    assert store("用户的咖啡口味", "fact") > store("咖啡", "fact")
    assert store("the hotel we settled on in this chat", "now") > store("the hotel", "now")
    assert store("give me the gist of the renovation", "now") < store("the renovation", "now")


def test_the_meaning_moves_its_store() -> None:
    near = dict(FLAT, summary=0.8)
    assert (
        probs("x", STORES, readout=near)[0]["summary"]
        > probs("x", STORES, readout=FLAT)[0]["summary"]
    )
    talk = dict(FLAT, none=0.8)
    assert probs("x", STORES, readout=talk)[0]["past"] < probs("x", STORES, readout=FLAT)[0]["past"]


def test_a_store_holding_the_querys_terms_is_likelier() -> None:
    hits = {"now": {"restaurant": 1, "book": 1}}
    held, _ = probs("restaurant book", STORES, readout=FLAT, hits=hits)
    bare, _ = probs("restaurant book", STORES, readout=FLAT)
    assert held["now"] > bare["now"] and held["summary"] == bare["summary"]


def test_a_time_window_cuts_the_buckets_it_misses() -> None:
    week = (NOW - 7 * DAY, NOW)
    old = pocket("ep/old", Kind.EPISODE, bucket="2026-W10", span=(NOW - 200 * DAY, NOW - 190 * DAY))
    new = pocket("ep/new", Kind.EPISODE, bucket="2026-W40", span=(NOW - 3 * DAY, NOW - 2 * DAY))
    p, rules = probs("what happened last week", [old, new, pocket("fact")], window=week)
    assert p["ep/old"] == pytest.approx(p["ep/new"] * 0.1) and "time_window" in rules
    # A window no bucket meets cuts nothing: the cue named a time the memory does not cover.
    p, rules = probs("what happened last week", [old, pocket("fact")], window=week)
    assert "time_window" not in rules


def test_just_said_and_identifiers_are_strong() -> None:
    p, rules = probs("as I just said", STORES, readout=FLAT)
    assert p["now"] == 0.95 and p["past"] < 0.95 and rules == ["just_said"]
    p, rules = probs("order A1234-77 status", STORES, hits={"past": {"a1234-77": 1}})
    assert p["past"] == 0.95 and p["fact"] < 0.95 and rules == ["identifier"]
