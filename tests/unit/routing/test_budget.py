"""The budget split (server/core/routing/budget.py): probability order, greedy while the budget
lasts, exact pockets whole or not at all, HNSW depth from the share, and a plan never empty."""

from __future__ import annotations

import hypothesis.strategies as st
import pytest
from hypothesis import given, settings

from server.core.memory.costs import CostModel
from server.core.memory.model import Kind, Modality, PocketStats, Tier
from server.core.routing.budget import Scored, split
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


def test_no_budget_keeps_every_probable_pocket_in_probability_order() -> None:
    plan = split(
        [Scored(pocket("a", 100), 0.2), Scored(pocket("b", 100), 0.9), Scored(pocket("c", 9), 0)],
        None,
        64,
        5,
        COSTS,
    )
    assert [(s.pocket, s.depth) for s in plan] == [("b", 64), ("a", 64)]


def test_an_exact_pocket_is_searched_whole_or_not_at_all() -> None:
    plan = split(
        [Scored(pocket("big", 1500), 0.5), Scored(pocket("small", 300), 0.5)], 1000, 64, 5, COSTS
    )
    # "big" (first by name at equal probability) is allotted 500 < 1500 but is the most probable:
    # it is searched anyway; nothing is left for "small".
    assert [s.pocket for s in plan] == ["big"]
    plan = split(
        [Scored(pocket("big", 1500), 0.4), Scored(pocket("small", 300), 0.6)], 1000, 64, 5, COSTS
    )
    assert [s.pocket for s in plan] == ["small"]  # 600 pays for 300; 700 left < 1500


def test_an_hnsw_pocket_gets_the_depth_its_allotment_pays_for() -> None:
    big = pocket("g", 100_000)
    full = COSTS.hnsw(100_000, 64)
    (step,) = split([Scored(big, 1.0)], full * 10, 64, 5, COSTS)
    assert step.depth == 64  # capped at the full depth
    assert split([Scored(big, 0.5), Scored(pocket("x", 10), 0.5)], 1.0, 64, 5, COSTS)[0].depth == 5


@settings(max_examples=200, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 200_000), min_size=1, max_size=8),
    probs=st.lists(st.floats(0.01, 1.0), min_size=8, max_size=8),
    budget=st.floats(0.0, 5e5),
)
def test_the_plan_fits_the_budget_beyond_its_first_step(
    sizes: list[int], probs: list[float], budget: float
) -> None:
    scored = [Scored(pocket(f"p{i}", n), probs[i]) for i, n in enumerate(sizes)]
    plan = split(scored, budget, 64, 5, COSTS)
    assert plan, "a plan is never empty"
    assert sum(s.cost_units for s in plan[1:]) <= max(budget - plan[0].cost_units, 0.0) + 1e-6
    assert [s.probability for s in plan] == sorted((s.probability for s in plan), reverse=True)
    assert all(5 <= s.depth <= 64 for s in plan)
    assert len({s.pocket for s in plan}) == len(plan)


def test_a_policy_with_no_probable_pocket_gives_an_empty_plan() -> None:
    assert split([Scored(pocket("a", 10), 0.0)], 100.0, 64, 5, COSTS) == []
    with pytest.raises(ValueError):
        split([Scored(pocket("a", 10), 1.0)], -1.0, 64, 5, COSTS)


def test_improbable_pockets_neither_take_budget_nor_shrink_a_probable_ones_share() -> None:
    big = Scored(pocket("big", 200_000), 0.9)
    alone = split([big], 20_000, 64, 5, COSTS)
    noise = [Scored(pocket(f"n{i}", 100), 0.05) for i in range(30)]
    crowded = split([big, *noise], 20_000, 64, 5, COSTS)
    assert [s.pocket for s in crowded] == ["big"]
    assert crowded[0].depth == alone[0].depth
