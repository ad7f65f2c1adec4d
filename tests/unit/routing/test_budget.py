"""A policy's plan (server/core/routing/budget.py): every pocket at or above `skip_below`, most
probable first, each searched as THE plan would search it, the least probable dropped past the
cost cap, and a plan never empty."""

from __future__ import annotations

import hypothesis.strategies as st
import pytest
from hypothesis import given, settings

from server.core.memory.costs import CostModel
from server.core.memory.model import Kind, Modality, PocketStats, Tier
from server.core.query import plan
from server.core.routing.budget import Scored, select
from server.core.settings import PocketSettings

COSTS = CostModel(PocketSettings(), 128)


def pocket(name: str, size: int) -> PocketStats:
    method = COSTS.method(Tier.WARM, size)
    return PocketStats(
        name=name,
        kind=Kind.FACT,
        tier=Tier.WARM,
        modality=Modality.TEXT,
        bucket="",
        size=size,
        method=method,
        cost_per_vector=COSTS.per_vector(Tier.WARM, size),
        search_cost=COSTS.search(Tier.WARM, size, 64),
        oldest=0.0,
        newest=0.0,
        radius=0.0,
        centroid=None,
    )


def test_every_pocket_at_or_above_skip_below_is_searched_most_probable_first() -> None:
    steps = select(
        [Scored(pocket("a", 100), 0.3), Scored(pocket("b", 100), 0.9),
         Scored(pocket("c", 9), 0.29)],
        0.3, None, 64, 5, COSTS,
    )  # fmt: skip
    assert [(s.pocket, s.depth) for s in steps] == [("b", 64), ("a", 64)]
    assert steps[0].cost_units == COSTS.exact(100) and steps[0].probability == 0.9


def test_the_most_probable_pocket_is_searched_whatever_its_probability() -> None:
    scored = [Scored(pocket("a", 100), 0.05), Scored(pocket("b", 10), 0.1)]
    assert [s.pocket for s in select(scored, 0.3, None, 64, 5, COSTS)] == ["b"]
    assert select(scored, 0.3, None, 64, 5, COSTS, at_least_one=False) == []
    assert select([Scored(pocket("a", 0), 0.9)], 0.3, None, 64, 5, COSTS) == []  # empty: none


def test_hnsw_pockets_share_the_depth_as_in_the_full_plan() -> None:
    big, small = pocket("big", 30_000), pocket("small", 10_000)
    steps = select([Scored(big, 0.9), Scored(small, 0.8)], 0.3, None, 64, 5, COSTS)
    want = {s.pocket: s.depth for s in plan.full_plan([big, small], 64, 5)}
    assert {s.pocket: s.depth for s in steps} == want == {"big": 48, "small": 16}
    alone = select([Scored(big, 0.9), Scored(small, 0.1)], 0.3, None, 64, 5, COSTS)
    assert [(s.pocket, s.depth) for s in alone] == [("big", 64)]  # the whole depth


@settings(max_examples=200, deadline=None)
@given(
    probs=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=8),
    sizes=st.lists(st.integers(0, 50_000), min_size=8, max_size=8),
    skip_below=st.floats(0.0, 1.0),
    cap=st.one_of(st.none(), st.floats(0.0, 5_000.0)),
)
def test_a_plan_is_the_probable_pockets_under_the_cap(
    probs: list[float], sizes: list[int], skip_below: float, cap: float | None
) -> None:
    scored = [Scored(pocket(f"p{i}", sizes[i]), x) for i, x in enumerate(probs)]
    steps = select(scored, skip_below, cap, 64, 5, COSTS)
    live = sorted(
        (s for s in scored if s.probability > 0 and s.pocket.size > 0),
        key=lambda s: (-s.probability, s.pocket.name),
    )
    names = [s.pocket for s in steps]
    assert names == [s.pocket.name for s in live[: len(names)]]  # most probable first, no gaps
    if live:
        assert names and names[0] == live[0].pocket.name  # never empty
    wanted = [s.pocket.name for s in live if s.probability >= skip_below]
    assert len(names) <= max(len(wanted), 1)
    cost = sum(s.cost_units for s in steps)
    if cap is None or cost <= cap:
        assert len(names) == max(len(wanted), 1 if live else 0) or cap is not None
    if cap is not None and len(names) > 1:
        assert cost <= cap  # past the cap only the first step may go


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="skip_below"):
        select([], 1.5, None, 64, 5, COSTS)
    with pytest.raises(ValueError, match="cost cap"):
        select([], 0.3, -1.0, 64, 5, COSTS)
