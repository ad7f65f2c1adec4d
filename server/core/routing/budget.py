"""The plan of a policy's probabilities: coverage first, then cost.

A routed plan that misses a needed pocket costs a wrong answer, while an extra small pocket costs
microseconds; so the budget is stated as a probability, not as a share of the full scan:
- every pocket at or above `skip_below` (the chance that it holds what the query needs below
  which the router may skip it) is searched, most probable first; the most probable pocket is
  searched whatever its probability, so a plan is never empty;
- each is searched as THE plan would search it (`query.plan.full_plan` over the plan's pockets):
  a pocket scanned whole (small warm pockets, hot pockets) at the full depth, the HNSW pockets
  sharing the depth in proportion to their sizes, each at least `top_k`;
- `max_cost` (cost units; None: no cap) caps the estimated cost: the least probable pockets are
  dropped until the plan fits (the most probable one stays), and what a dropped pocket would
  have held is the cap's price. By default the cap is the full plan's own cost (no cap).

Lowering `skip_below` trades cost for coverage; `bench router` draws the curve.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from server.core.memory.costs import CostModel
from server.core.query import plan
from server.core.query.plan import Pocket

# What the plan needs of a pocket (a `PocketStats`, or one read back from the log).
Candidate = Pocket


@dataclass(frozen=True)
class Scored:
    """A candidate pocket with the policy's probability that it holds what the query needs."""

    pocket: Candidate
    probability: float


@dataclass(frozen=True)
class RoutedStep:
    pocket: str
    depth: int
    probability: float
    cost_units: float


def select(
    scored: Sequence[Scored],
    skip_below: float,
    max_cost: float | None,
    depth: int,
    top_k: int,
    costs: CostModel,
    at_least_one: bool = True,
) -> list[RoutedStep]:
    """The plan's steps, most probable first (see the module docstring). `at_least_one`: the
    most probable pocket is searched even below `skip_below` and beyond `max_cost`."""
    if not 0.0 <= skip_below <= 1.0:
        raise ValueError(f"skip_below is {skip_below}; it must be in [0, 1]")
    if max_cost is not None and not max_cost >= 0:
        raise ValueError(f"a cost cap of {max_cost} cost units; it must be at least 0")
    ranked = sorted(
        (s for s in scored if s.probability > 0 and s.pocket.size > 0),
        key=lambda s: (-s.probability, s.pocket.name),
    )
    chosen = [
        s for i, s in enumerate(ranked) if s.probability >= skip_below or (i == 0 and at_least_one)
    ]
    while True:
        steps = _steps(chosen, depth, top_k, costs)
        if max_cost is None or len(steps) <= 1 or sum(s.cost_units for s in steps) <= max_cost:
            return steps
        chosen = chosen[:-1]  # the least probable goes first


def _steps(chosen: Sequence[Scored], depth: int, top_k: int, costs: CostModel) -> list[RoutedStep]:
    by_name = {s.pocket.name: s for s in chosen}
    return [
        RoutedStep(
            st.pocket,
            st.depth,
            by_name[st.pocket].probability,
            costs.of(by_name[st.pocket].pocket.method, by_name[st.pocket].pocket.size, st.depth),
        )
        for st in plan.full_plan([s.pocket for s in chosen], depth, top_k)
    ]
