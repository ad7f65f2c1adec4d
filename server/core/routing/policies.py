"""The four policies, as one pure function from the pockets' probabilities to plan steps.

The router calls it on live pockets; training calls it on pockets read back from the decision
log, so the held-out report measures exactly the plans the server would run.

- `full`: every pocket at the full depth (the reference);
- `heuristic`: the heuristic's probabilities, split under the budget;
- `learned`: the model's probabilities, split under the budget;
- `hybrid` (seed 003 §4.2): the pockets a strong rule names (a heuristic probability of at least
  `STRONG`: "what is my …", a time window, "as I said") are split the budget first, as if
  certain; then the model's probabilities share what is left; the most probable of those is the
  default pocket when no strong rule fired.

A routed policy's plan is widened to `full` when its most probable pocket is below
`min_confidence` (seed 003 §5.2: an unsure router searches everything), when a probability is
not a number, or when the split leaves the plan empty. (The safety net, which widens before any
policy runs, is the router's: `Router.choose`, and `training.evaluate` for the replay.)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from server.core.memory.costs import CostModel
from server.core.query import plan
from server.core.routing.budget import Candidate, RoutedStep, Scored, split

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
    budget: float,
    min_confidence: float,
    depth: int,
    top_k: int,
    c: CostModel,
) -> Planned:
    """The plan of `policy` (`model`: the learned probabilities, needed by learned and hybrid).
    `budget`: the cost units a routed plan may spend."""
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
    best = max(scores, default=0.0)
    why = ""
    if not all(math.isfinite(x) for x in scores):
        why = "a probability is not a number"
    elif best < min_confidence:
        why = f"low confidence: {best:.2f} < {min_confidence}"
    if why:
        return Planned(full_plan(pockets, depth, top_k, c), why, scores)
    scored = [Scored(p, x) for p, x in zip(pockets, scores, strict=True)]
    if policy != "hybrid":
        steps = split(scored, budget, depth, top_k, c)
    else:
        strong = [s for s, h in zip(scored, heuristic, strict=True) if h >= STRONG]
        steps = split(strong, budget, depth, top_k, c) if strong else []
        taken = {s.pocket for s in steps} | {s.pocket.name for s in strong}
        left = max(budget - sum(s.cost_units for s in steps), 0.0)
        rest = [s for s in scored if s.pocket.name not in taken]
        steps += split(rest, left, depth, top_k, c, at_least_one=not steps)
    if not steps:
        return Planned(full_plan(pockets, depth, top_k, c), "an empty plan", scores)
    return Planned(steps, "", scores)
