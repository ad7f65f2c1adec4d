"""The four policies, as one pure function from the pockets' probabilities to plan steps.

The router calls it on live pockets; training calls it on pockets read back from the decision
log, so the held-out report measures exactly the plans the server would run.

- `full`: every pocket at the full depth (the reference);
- `heuristic`: the heuristic's probabilities;
- `learned`: the model's probabilities;
- `hybrid` (seed 003 §4.2): the pockets a strong rule names (a heuristic probability of at least
  `STRONG`: "as I just said", an exact identifier's holders) are certain; the model's
  probabilities decide the rest.
Each becomes a plan by `budget.select`: every pocket at or above `skip_below`, most probable
first, under the cost cap.

A routed policy's plan is widened to `full` when its most probable pocket, and the probability
that nothing is needed, are below `min_confidence` (seed 003 §5.2: an unsure router searches
everything), when a probability is
not a number, or when the split leaves the plan empty. (The safety net, which widens before any
policy runs, is the router's: `Router.choose`, and `training.evaluate` for the replay.)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from server.core.memory.costs import CostModel
from server.core.query import plan
from server.core.routing.budget import Candidate, RoutedStep, Scored, select

POLICIES = ("full", "heuristic", "learned", "hybrid")
ROUTED = POLICIES[1:]
STRONG = 0.95  # a heuristic probability only a strong rule sets


@dataclass(frozen=True)
class Planned:
    steps: list[RoutedStep]
    widened: str  # why the plan is the full one ("" when it is not)
    scores: list[float]  # each candidate's probability under the policy (in candidate order)


def full_plan(
    pockets: Sequence[Candidate], depth: int, top_k: int, c: CostModel
) -> list[RoutedStep]:
    """THE plan (`query.plan.full_plan`, what an unrouted Recall runs), each step priced."""
    by_name = {p.name: p for p in pockets}
    return [
        RoutedStep(
            s.pocket, s.depth, 1.0, c.of(by_name[s.pocket].method, by_name[s.pocket].size, s.depth)
        )
        for s in plan.full_plan(pockets, depth, top_k)
    ]


def choose(
    policy: str,
    pockets: Sequence[Candidate],
    heuristic: Sequence[float],
    model: Sequence[float] | None,
    skip_below: float,
    max_cost: float | None,
    min_confidence: float,
    depth: int,
    top_k: int,
    c: CostModel,
    nothing: float = 0.0,
) -> Planned:
    """The plan of `policy` (`model`: the learned probabilities, needed by learned and hybrid):
    the pockets at or above `skip_below`, under the cost cap `max_cost` (`budget.select`).
    `nothing`: the probability that the query needs no memory (small talk), which makes a
    policy as sure as a probable pocket does."""
    if policy not in POLICIES:
        raise ValueError(f"unknown routing policy {policy!r}; expected one of {POLICIES}")
    if policy == "full":
        return Planned(full_plan(pockets, depth, top_k, c), "", [1.0] * len(pockets))
    if policy != "heuristic" and model is None:
        raise ValueError(f"the {policy} policy needs a model's probabilities")
    if policy == "heuristic" or model is None:
        scores = list(heuristic)
    elif policy == "learned":
        scores = list(model)
    else:
        scores = [1.0 if h >= STRONG else m for h, m in zip(heuristic, model, strict=True)]
    best = max(max(scores, default=0.0), nothing)
    why = ""
    if not all(math.isfinite(x) for x in scores):
        why = "a probability is not a number"
    elif best < min_confidence:
        why = f"low confidence: {best:.2f} < {min_confidence}"
    if why:
        return Planned(full_plan(pockets, depth, top_k, c), why, scores)
    scored = [Scored(p, x) for p, x in zip(pockets, scores, strict=True)]
    steps = select(scored, skip_below, max_cost, depth, top_k, c)
    if not steps:
        return Planned(full_plan(pockets, depth, top_k, c), "an empty plan", scores)
    return Planned(steps, "", scores)
