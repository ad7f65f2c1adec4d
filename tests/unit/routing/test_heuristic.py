"""The heuristic policy (server/core/routing/heuristic.py): each rule moves the pockets it names,
and only those."""

from __future__ import annotations

import numpy as np
import pytest

from server.core.memory.model import Kind, Modality, PocketStats, Tier
from server.core.routing.features import FeatureExtractor
from server.core.routing.heuristic import PRIOR, Evidence, heuristic
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
    scored, rules = heuristic(
        f,
        ev.pop("vector", None),
        pockets,
        Evidence(ev.pop("hits", {}), ev.pop("window", None)),  # type: ignore[arg-type]
    )
    return {s.pocket.name: s.probability for s in scored}, rules


def test_what_is_my_goes_to_the_profile() -> None:
    p, rules = probs(
        "what is my shoe size",
        [pocket("fact"), pocket("preference", Kind.PREFERENCE), pocket("ep", Kind.EPISODE)],
    )
    assert p["fact"] == p["preference"] == 0.95 and p["ep"] < 0.95
    assert "about_me" in rules


def test_a_time_window_keeps_the_buckets_it_overlaps() -> None:
    week = (NOW - 7 * DAY, NOW)
    old = pocket("ep/old", Kind.EPISODE, bucket="2026-W10", span=(NOW - 200 * DAY, NOW - 190 * DAY))
    new = pocket("ep/new", Kind.EPISODE, bucket="2026-W40", span=(NOW - 3 * DAY, NOW - 2 * DAY))
    fact = pocket("fact")
    p, rules = probs("what happened last week", [old, new, fact], window=week)
    # No pocket holds a query term (halved), and the old bucket is outside the window (×0.3).
    assert p["ep/new"] == 0.95 and p["ep/old"] == pytest.approx(PRIOR * 0.5 * 0.3)
    assert p["fact"] == pytest.approx(PRIOR * 0.5)  # unbucketed: the window says nothing of it
    assert "time_window" in rules


def test_term_statistics_raise_the_holders_and_halve_the_rest() -> None:
    p, _ = probs(
        "deploy checklist",
        [pocket("skill", Kind.SKILL), pocket("fact"), pocket("hot", tier=Tier.HOT)],
        hits={"skill": {"deploy": 3, "checklist": 1}},
    )
    assert p["skill"] == pytest.approx(0.9)
    assert p["fact"] == pytest.approx(PRIOR * 0.5)
    assert p["hot"] == 0.6  # hot memories have no term statistics; hot pockets stay likely


def test_just_said_goes_to_the_hot_tier_and_the_centroid_counts() -> None:
    v = np.zeros(4, np.float32)
    v[0] = 1.0
    p, rules = probs(
        "as I said earlier",
        [pocket("hot", tier=Tier.HOT), pocket("near", centroid=v), pocket("far", centroid=-v)],
        vector=v,
        hits={"near": {"earlier": 1}, "far": {"earlier": 1}},
    )
    assert p["hot"] == 0.95 and p["near"] == pytest.approx(0.8)
    assert p["far"] == pytest.approx(0.5 + 0.4 / 4)  # one of the four terms
    assert {"just_said", "centroid"} <= set(rules)
