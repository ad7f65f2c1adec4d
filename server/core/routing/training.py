"""Training the learned policy from the decision log (`pocketd router train`).

An example is an explored decision: its shadow run of the full plan says which pockets were
needed (those whose hits entered the full top k), and its logged input rows say what the model
would have seen of each candidate pocket. Examples are split into a training and a held-out set
by a hash of the decision (the same split on every run over the same log).

The held-out report replays each policy's plan (`policies.choose`, the function the router runs,
and the full plan where the safety net widened the decision) on each held-out decision, and
measures, against the needed pockets:
- coverage: the share of decisions whose needed pockets were all searched;
- exact match: searched exactly the needed ones;
- waste: the share of searched pockets that were not needed;
- cost: the plans' estimated cost over the full plans'.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from server.core.memory.costs import CostModel
from server.core.routing.inputs import LAYOUT
from server.core.routing.mlp import Mlp, Progress, TrainSettings, train
from server.core.routing.policies import POLICIES, choose
from server.core.routing.record import DecisionRecord
from server.core.tenancy import in_target


@dataclass(frozen=True)
class LoggedPocket:
    """A candidate pocket as the log holds it: enough for a policy's plan."""

    name: str
    size: int
    method: str


@dataclass(frozen=True)
class Example:
    namespace: str
    rows: npt.NDArray[np.float32]  # (candidates, width)
    needed: npt.NDArray[np.bool_]  # (candidates,)
    pockets: list[LoggedPocket]
    heuristic: list[float]
    budget: float
    skip_below: float
    top_k: int
    held_out: bool
    safety: bool  # the safety net widened it: every routed policy replays as full
    nothing: float = 0.0  # the probability that it needed no memory


@dataclass(frozen=True)
class Metrics:
    policy: str
    decisions: int
    coverage: float
    exact_match: float
    waste: float
    cost_share: float


def examples(
    records: Iterable[DecisionRecord], width: int, namespace: str | None, holdout: float
) -> tuple[list[Example], int]:
    """The training examples among `records` of `namespace` (a kept name, or a
    `tenancy.tenant_wide` one for a tenant's namespaces; None: the default tenant's), and how
    many explored records were passed over (another layout or width, or no input rows)."""
    out: list[Example] = []
    skipped = 0
    for rec in records:
        if rec.shadow is None or not in_target(rec.namespace, namespace or ""):
            continue
        inp = rec.inputs
        if inp is None or inp.layout != LAYOUT or inp.width != width or not inp.pockets:
            skipped += 1
            continue
        try:
            rows = np.frombuffer(inp.rows, np.float32).reshape(len(inp.pockets), inp.width)
            pockets = [
                LoggedPocket(*t) for t in zip(inp.pockets, inp.sizes, inp.methods, strict=True)
            ]
            if len(inp.heuristic) != len(pockets):
                raise ValueError("one heuristic probability per pocket")
        except ValueError:  # a record that does not hold together: passed over, not trained on
            skipped += 1
            continue
        needed = set(rec.shadow.needed)
        digest = hashlib.blake2b(
            f"{rec.namespace}\0{rec.at!r}\0{rec.features}".encode(), digest_size=8
        ).digest()
        out.append(
            Example(
                rec.namespace,
                rows,
                np.array([p in needed for p in inp.pockets], dtype=np.bool_),
                pockets,
                list(inp.heuristic),
                inp.budget,
                inp.skip_below,
                inp.top_k,
                int.from_bytes(digest, "big") / 2**64 < holdout,
                "safety" in rec.flags,
                inp.nothing,
            )
        )
    return out, skipped


def fit(train_set: Sequence[Example], s: TrainSettings, progress: Progress | None = None) -> Mlp:
    """The MLP of `train_set`'s rows; the validation slice is whole decisions (rows of one
    decision share its query part, and must not be on both sides)."""
    x = np.concatenate([e.rows for e in train_set])
    y = np.concatenate([e.needed for e in train_set])
    groups = np.concatenate([np.full(len(e.rows), i) for i, e in enumerate(train_set)])
    return train(x, y, s, progress, groups)


def evaluate(
    test: Sequence[Example],
    score: Callable[[npt.NDArray[np.float32]], npt.NDArray[np.float32]] | None,
    min_confidence: float,
    depth: int,
    costs: CostModel,
) -> list[Metrics]:
    """Each policy's held-out metrics; `score`: the model (None: learned and hybrid are left
    out)."""
    out = []
    for policy in POLICIES:
        if policy in ("learned", "hybrid") and score is None:
            continue
        covered, exact, waste, cost, full = [], [], [], 0.0, 0.0
        for e in test:
            model = None if score is None else score(e.rows).tolist()
            planned = choose(
                "full" if e.safety else policy, e.pockets, e.heuristic, model, e.skip_below,
                e.budget, min_confidence, depth, e.top_k, costs, e.nothing,
            )  # fmt: skip
            everything = choose(
                "full", e.pockets, e.heuristic, None, 0.0, None, 0.0, depth, e.top_k, costs
            )
            searched = {s.pocket for s in planned.steps}
            need = {p.name for p, n in zip(e.pockets, e.needed, strict=True) if n}
            covered.append(need <= searched)
            exact.append(need == searched)
            waste.append(len(searched - need) / len(searched) if searched else 0.0)
            cost += sum(s.cost_units for s in planned.steps)
            full += sum(s.cost_units for s in everything.steps)
        out.append(
            Metrics(
                policy,
                len(test),
                float(np.mean(covered)) if test else 0.0,
                float(np.mean(exact)) if test else 0.0,
                float(np.mean(waste)) if test else 0.0,
                cost / full if full else 0.0,
            )
        )
    return out
