"""The budget split: a policy's pockets, each with the probability that it is needed, become plan
steps whose cost fits `max_cost_units`.

Pockets are taken most probable first, while the budget lasts (greedily: a more probable pocket
is never passed over to pay for a less probable one), and none below `MIN_PROBABILITY` but the
first. Each has its probability's share of what is left:
- a pocket scanned whole (small warm pockets, exactly or coarse to fine; hot pockets) costs
  about the same at any depth: it is searched, at the full depth, if what is left pays for it;
- an HNSW pocket's cost grows with its depth: it gets the deepest search its share pays for, at
  least `top_k` (the minimum useful depth) if what is left pays for that, at most the full depth.
The most probable pocket is searched, within the budget or not (unless `at_least_one` is off), so
a plan is never empty.
No budget (None) keeps every pocket of positive probability at the full depth.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from server.core.memory.costs import CostModel
from server.core.query.plan import Pocket

MIN_PROBABILITY = 0.1  # a less probable pocket is never worth budget (the first one excepted)


# What the split needs of a pocket (a `PocketStats`, or one read back from the log): what the
# plan needs of one.
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


def split(
    scored: Sequence[Scored],
    budget: float | None,
    depth: int,
    top_k: int,
    costs: CostModel,
    at_least_one: bool = True,
) -> list[RoutedStep]:
    """`at_least_one`: the most probable pocket is searched even beyond the budget."""
    if budget is not None and not budget >= 0:
        raise ValueError(f"a budget of {budget} cost units; it must be at least 0")
    ranked = sorted(
        (s for s in scored if s.probability > 0 and s.pocket.size > 0),
        key=lambda s: (-s.probability, s.pocket.name),
    )
    if budget is None:
        return [_step(s, depth, costs) for s in ranked]
    out: list[RoutedStep] = []
    left = budget
    ranked = [s for i, s in enumerate(ranked) if i == 0 or s.probability >= MIN_PROBABILITY]
    mass = sum(s.probability for s in ranked)
    for i, s in enumerate(ranked):
        share = left * s.probability / mass if mass > 0 else 0.0
        mass -= s.probability
        step = _fit(s, share, left, depth, top_k, costs)
        if step is None and i == 0 and at_least_one:  # the most probable pocket is always searched
            step = _step(s, max(top_k, 1) if s.pocket.method == "hnsw" else depth, costs)
        if step is not None:
            out.append(step)
            left -= step.cost_units
    return out


def _cost(p: Candidate, depth: int, costs: CostModel) -> float:
    return costs.of(p.method, p.size, depth)


def _step(s: Scored, depth: int, costs: CostModel) -> RoutedStep:
    return RoutedStep(s.pocket.name, depth, s.probability, _cost(s.pocket, depth, costs))


def _fit(
    s: Scored, share: float, left: float, depth: int, top_k: int, costs: CostModel
) -> RoutedStep | None:
    """The step of `s` that its `share` of the budget pays for, or None. An exact pocket costs
    its size at any depth: it is searched if what is `left` pays for it. An HNSW pocket gets the
    deepest search its share pays for, and at least `top_k` if what is left pays for that."""
    p = s.pocket
    if p.method != "hnsw":  # exact, coarse or hot: about the same cost at any depth
        return _step(s, depth, costs) if _cost(p, depth, costs) <= left else None
    if _cost(p, top_k, costs) > left:
        return None
    lo, hi = top_k, max(depth, top_k)  # the cost is monotone in the depth: bisect
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if _cost(p, mid, costs) <= max(share, _cost(p, top_k, costs)):
            lo = mid
        else:
            hi = mid - 1
    return _step(s, lo, costs)
