"""`python -m bench router_fit`: fit the heuristic's store model on `bench router`'s tune half.

The heuristic (`server.core.routing.heuristic.STORE_MODEL`) gives each of the four stores a
probability from a logistic model over what the router knows before it searches: the intents'
readouts, the question's form (the router's own cue flags) and the stores' term statistics.
This command builds the same world as `bench router` (same seed and size), loads it into an
engine with the server's encoder, computes those inputs for every question of the **tune half
only** with the server's own `Router.context`, fits one L2-regularised logistic regression per
store (the label: the store is in the question's gold set) and prints the weights as the
`STORE_MODEL` literal, with the tune half's coverage and store cost at a few `skip_below`
values. The report half is never read, so `bench router`'s report-half figures stay held out.

`--cv K` also prints the same curve from K-fold cross-validation by whole template inside the
tune half (each fold's templates held out of its fit): the estimate that choices of inputs and
of `skip_below` are made on, without touching the report half.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import numpy.typing as npt

from bench.router import PAPER, encoder, load, settings_for
from bench.routing_world import STORE_COST, Question, build
from server.app import build_engine
from server.core.memory.model import RecallQuery
from server.core.routing.heuristic import STORE_INPUTS, store_inputs
from server.core.routing.router import Context, Router

STORES = ("session", "profile", "summary", "history")
L2 = 2.0
STEPS = 4000
RATE = 0.3


def log(msg: str) -> None:
    print(f"[router_fit] {msg}", file=sys.stderr, flush=True)


def inputs(ctx: Context) -> dict[str, tuple[float, ...]]:
    """Each store's input row, exactly as the heuristic builds it."""
    return store_inputs(ctx.features, ctx.evidence, ctx.measures)


def fit(x: npt.NDArray[np.float64], y: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Logistic regression by gradient descent; the bias is not regularised."""
    w = np.zeros(x.shape[1])
    for _ in range(STEPS):
        p = 1.0 / (1.0 + np.exp(-(x @ w)))
        g = x.T @ (p - y) / len(y)
        g[1:] += L2 * w[1:] / len(y)
        w -= RATE * g
    return w


Rows = list[tuple[Question, dict[str, tuple[float, ...]]]]
SKIPS = (0.05, 0.1, 0.15, 0.2, 0.3)


def fit_all(rows: Rows) -> dict[str, npt.NDArray[np.float64]]:
    weights = {}
    for store in STORES:
        x = np.array([r.get(store, (0.0,) * len(STORE_INPUTS)) for _, r in rows])
        y = np.array([PAPER[store] in q.stores for q, _ in rows], dtype=np.float64)
        weights[store] = fit(x, y)
    return weights


def probabilities(
    weights: dict[str, npt.NDArray[np.float64]], row: dict[str, tuple[float, ...]]
) -> dict[str, float]:
    return {
        s: 1.0 / (1.0 + math.exp(-float(np.dot(weights[s], row[s])))) for s in STORES if s in row
    }


def scores(rows: Rows, probs: list[dict[str, float]], skip: float) -> tuple[float, float]:
    """Coverage and mean store cost of the plans at `skip`."""
    covered: list[bool] = []
    cost: list[float] = []
    for (q, _), p in zip(rows, probs, strict=True):
        chosen = {s for s in p if p[s] >= skip} or {max(p, key=lambda s: p[s])}
        named = {PAPER[s] for s in chosen}
        covered.append(set(q.stores) <= named)
        cost.append(sum(STORE_COST[s] for s in named))
    return float(np.mean(covered)), float(np.mean(cost))


def curve(name: str, rows: Rows, weights: dict[str, npt.NDArray[np.float64]]) -> None:
    probs = [probabilities(weights, r) for _, r in rows]
    for skip in SKIPS:
        cov, cost = scores(rows, probs, skip)
        print(f"# {name}, skip_below {skip}: coverage {cov:.3f}, store cost {cost:.2f}")


def cross_validate(rows: Rows, k: int) -> None:
    """`curve` with each question scored by a fit that never saw its template."""
    templates = sorted({q.template for q, _ in rows})
    order = np.random.default_rng(0).permutation(len(templates))
    fold = {templates[i]: j % k for j, i in enumerate(order)}
    probs: list[dict[str, float]] = [{} for _ in rows]
    for f in range(k):
        weights = fit_all([r for r in rows if fold[r[0].template] != f])
        for i, (q, r) in enumerate(rows):
            if fold[q.template] == f:
                probs[i] = probabilities(weights, r)
    for skip in SKIPS:
        cov, cost = scores(rows, probs, skip)
        print(
            f"# {k}-fold by template, skip_below {skip}: coverage {cov:.3f}, store cost {cost:.2f}"
        )


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench router_fit", description=__doc__)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--users", type=int, default=16)
    ap.add_argument("--questions", type=int, default=40, help="questions per user")
    ap.add_argument("--cv", type=int, default=0, help="folds by whole template (0: none)")
    ns = ap.parse_args(argv)
    world = build(seed=ns.seed, users=ns.users, questions_per_user=ns.questions)
    tune = [q for q in world.questions if q.half == "tune"]
    enc = encoder()
    offset = time.time() - world.now
    rows: Rows = []
    with tempfile.TemporaryDirectory(prefix="pocketd-router-fit-") as tmp:
        eng = build_engine(settings_for(Path(tmp), policy="heuristic"), enc)
        eng.load()
        try:
            load(eng, world, offset)
            router = eng.planner
            assert isinstance(router, Router)
            now = world.now + offset
            for q in tune:
                query = RecallQuery(q.namespace, text=q.text, top_k=5, as_of=now)
                rows.append((q, inputs(router.context(query, eng.routing_vector(query), now))))
        finally:
            eng.close()
    log(f"{len(rows)} tune-half questions")
    weights = fit_all(rows)
    print("STORE_MODEL: dict[str, tuple[float, ...]] = {")
    for store, w in weights.items():
        print(f'    "{store}": ({", ".join(f"{v:.2f}" for v in w)}),')
    print("}")
    print(f"# inputs: {', '.join(STORE_INPUTS)}")
    curve("tune half", rows, weights)
    if ns.cv > 1:
        cross_validate(rows, ns.cv)
    return 0
