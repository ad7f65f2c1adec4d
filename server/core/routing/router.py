"""The router: it chooses a Recall's plan, which pockets to search and how deep (seed 003).

For each query it builds the route features and the heuristic's view once (`Context`): the
query's intent from its vector (`intents`: the engine encodes a routed text query first, so no
decision is blind to its meaning), the rules, the pockets' statistics. It asks the policy
(`policies.choose`: full, heuristic, learned, hybrid) for each candidate pocket's probability
of being needed, and searches every pocket at or above `skip_below` under the cost cap
(`max_cost_share` of what the full plan would cost; `budget.select`). The plan it returns runs
with the early stop on, so a routed pocket is still skipped once it cannot matter. learned and
hybrid score the pockets with the namespace's installed model, else the global one; with neither
they run the heuristic (cold start), and the decision says so.

It widens a plan to `full`, and records why, when:
- the query names a critical pattern (allergy, medication, payment, identity, security, and the
  configured `safety_cues`): missing one of those memories costs more than any scan (§5.2), so
  this safety net widens it to every pocket, the cold tier's archive included;
- the policy is unsure: its most probable pocket is below `min_confidence` (a query with no
  vector and no rule that fired is).

The cold pockets are candidates only when the query asks for them (`include_cold`): the full
plan leaves them out (`query.plan.default_pockets`), and so do the routed policies.

`full` is the reference policy (every pocket the filter allows, at full depth) and the switch:
`router.policy: full`, or a Recall's `route_policy: full`, turns routing off.

An explored decision (`explore_share`) also runs the full plan in shadow, off the request path,
and logs the comparison with the model's input rows: the training examples of
`pocketd router train`.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import random
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial

import msgspec
import numpy as np
import numpy.typing as npt

from server.core.memory.costs import CostModel
from server.core.memory.model import (
    MemoryFilter,
    PlanStep,
    PocketStats,
    RecallQuery,
    RecallResult,
)
from server.core.memory.timecues import window
from server.core.query.plan import default_pockets
from server.core.query.ports import RoutedPlan
from server.core.routing.budget import RoutedStep
from server.core.routing.features import FeatureExtractor, QueryFeatures
from server.core.routing.heuristic import Evidence, Measures, heuristic, measure
from server.core.routing.inputs import LAYOUT, pocket_inputs
from server.core.routing.intents import Encode, IntentModel, probabilities
from server.core.routing.policies import POLICIES, choose, full_plan
from server.core.routing.ports import DecisionSink, ModelSource
from server.core.routing.record import DecisionRecord, Inputs, LoggedStep, Shadow
from server.core.settings import MemorySettings, RouterSettings

log = logging.getLogger(__name__)
# (namespace, filter) → the non-empty pockets the filter allows, with their statistics.
PocketSource = Callable[[str, MemoryFilter], Sequence[PocketStats]]
# (namespace, terms) → pocket name → term → documents holding it.
TermSource = Callable[[str, Sequence[str]], Mapping[str, Mapping[str, int]]]


@dataclass(frozen=True)
class Context:
    """What every policy's decision on one query starts from."""

    features: QueryFeatures
    pockets: list[PocketStats]  # the candidates
    heuristic: list[float]  # the heuristic's probability of each
    rules: list[str]  # the heuristic rules that fired
    evidence: Evidence
    measures: Measures
    full: list[RoutedStep]
    full_cost: float
    budget: float  # the cost cap (cost units)
    skip_below: float
    top_k: int
    now: float
    vector: npt.NDArray[np.float32] | None
    similarity: dict[str, float]  # intent → the query's similarity to its examples ({}: none)
    cold: list[PocketStats] = field(default_factory=list)  # the cold pockets left out

    @property
    def nothing(self) -> float:
        """The probability that the query needs no memory (the `none` intent's)."""
        return self.evidence.intents.get("none", 0.0)


@dataclass(frozen=True)
class Decision:
    asked: str  # the policy asked for
    policy: str  # the policy whose plan runs ("heuristic" when learned or hybrid has no model)
    steps: list[RoutedStep]
    rules: list[str]  # the heuristic rules that fired
    widened: str  # why the plan became the full one ("" when it did not)
    cost_units: float  # the plan's estimated cost
    full_cost_units: float  # the full plan's
    context: Context
    scores: list[float]  # each candidate's probability under the policy
    model: str = ""  # the version of the model that scored, if one did
    rows: npt.NDArray[np.float32] | None = None  # the model's input, if it was built

    @property
    def features(self) -> QueryFeatures:
        return self.context.features

    def plan(self) -> list[PlanStep]:
        return [PlanStep(s.pocket, s.depth) for s in self.steps]


class Router:
    def __init__(
        self,
        settings: RouterSettings,
        memory: MemorySettings,
        analyze: Callable[[str], list[str]],
        pockets: PocketSource,
        term_hits: TermSource,
        sink: DecisionSink | None = None,
        shadow: Callable[[RecallQuery], RecallResult] | None = None,
        seed: int | None = None,
        models: ModelSource | None = None,
        encode: Encode | None = None,
    ) -> None:
        """`shadow` runs a query's full plan (the engine's, unrouted); `seed` fixes which
        decisions are explored; `models`: the installed learned models; `encode`: unit vectors
        of texts, in the queries' space (the intents' examples; None: no intent is read)."""
        self._s = settings
        self.intents = IntentModel(encode, settings.intent_examples)
        self._sink = sink
        self._shadow = shadow
        self._models = models
        self._rng = random.Random(seed)
        # One shadow run at a time, off the request path; one more waits, the rest are skipped.
        self._shadows = ThreadPoolExecutor(1, thread_name_prefix="pocketd-shadow")
        self._waiting = threading.BoundedSemaphore(2)
        self._depth = memory.hybrid_search.candidates_per_channel
        self._top_k = memory.hybrid_search.top_k
        self._costs = CostModel.from_settings(memory)
        self._features = FeatureExtractor(settings, analyze)
        self._pockets = pockets
        self._term_hits = term_hits

    def context(
        self, q: RecallQuery, vector: npt.NDArray[np.float32] | None, now: float
    ) -> Context:
        f = self._features.extract(q.text, vector, q.image_query)
        every = list(self._pockets(q.namespace, q.filter))
        pockets = default_pockets(every, q.include_cold)
        kept = {id(p) for p in pockets}
        top_k = q.top_k or self._top_k
        full = full_plan(pockets, self._depth, top_k, self._costs)
        full_cost = sum(s.cost_units for s in full)
        ref = now if q.as_of is None else q.as_of
        similarity = self.intents.similarities(vector) if pockets else {}
        ev = Evidence(
            self._term_hits(q.namespace, list(f.terms)) if f.terms and pockets else {},
            window(q.text, ref) if q.text else None,
            probabilities(similarity),
            self.intents.readout(vector) if pockets else {},
        )
        m = measure(f, vector, pockets, ev)
        scored, rules = heuristic(f, pockets, ev, m) if pockets else ([], [])
        return Context(
            f,
            pockets,
            [s.probability for s in scored],
            rules,
            ev,
            m,
            full,
            full_cost,
            self._s.max_cost_share * full_cost,
            self._s.skip_below,
            top_k,
            ref,
            vector,
            similarity,
            [p for p in every if id(p) not in kept],
        )

    def decide(
        self,
        q: RecallQuery,
        vector: npt.NDArray[np.float32] | None,
        now: float,
        policy: str | None = None,
        rows: bool = False,
    ) -> Decision:
        """The plan for `q` under `policy` (None: the request's, else the configured one);
        `rows`: build the model's input even if no model scores it (to log it)."""
        return self.choose(
            self.context(q, vector, now),
            q.namespace,
            policy or q.route_policy or self._s.policy,
            rows,
        )

    def choose(self, ctx: Context, namespace: str, asked: str, rows: bool = False) -> Decision:
        """`asked`'s decision in `ctx`."""
        if asked not in POLICIES:
            raise ValueError(f"unknown routing policy {asked!r}; expected one of {POLICIES}")
        f = ctx.features
        matrix = self._rows(ctx) if rows and ctx.pockets else None
        safety = bool(f.safety) and asked != "full" and bool(ctx.pockets or ctx.cold)
        if asked == "full" or not ctx.pockets or safety:
            why = "" if asked == "full" else "no pockets" if not ctx.pockets else ""
            steps = ctx.full
            if safety:  # every pocket, the archive's too
                why = f"safety: {', '.join(f.safety)}"
                steps = full_plan([*ctx.pockets, *ctx.cold], self._depth, ctx.top_k, self._costs)
            return Decision(
                asked, "full", steps, ctx.rules if why else [], why,
                sum(s.cost_units for s in steps), ctx.full_cost, ctx, [1.0] * len(ctx.pockets),
                rows=matrix,
            )  # fmt: skip
        model = (
            self._models.model(namespace)
            if asked in ("learned", "hybrid") and self._models
            else None
        )
        if model is not None and matrix is None:
            matrix = self._rows(ctx)
        probs = None if model is None or matrix is None else model.score(matrix).tolist()
        policy = asked if probs is not None else "heuristic"
        planned = choose(
            policy, ctx.pockets, ctx.heuristic, probs, ctx.skip_below, ctx.budget,
            self._s.min_confidence, self._depth, ctx.top_k, self._costs, ctx.nothing,
        )  # fmt: skip
        cost = sum(s.cost_units for s in planned.steps)
        return Decision(
            asked,
            "full" if planned.widened else policy,
            planned.steps,
            ctx.rules,
            planned.widened,
            cost,
            ctx.full_cost,
            ctx,
            planned.scores,
            "" if model is None else model.version,
            matrix,
        )

    def _rows(self, ctx: Context) -> npt.NDArray[np.float32]:
        costs = {s.pocket: s.cost_units for s in ctx.full}
        return pocket_inputs(
            ctx.features, ctx.pockets, ctx.measures, ctx.now, ctx.heuristic,
            [costs.get(p.name, 0.0) for p in ctx.pockets],
        )  # fmt: skip

    def routes(self, q: RecallQuery) -> bool:
        """Whether `q` is routed: its policy (or the configured one) is not `full`."""
        return (q.route_policy or self._s.policy) != "full"

    def plan(
        self, q: RecallQuery, vector: npt.NDArray[np.float32] | None, now: float
    ) -> RoutedPlan | None:
        """The memory engine's `Planner`: the routed plan, logged once it has run; None under
        the `full` policy (the engine's default plan is the full one)."""
        asked = q.route_policy or self._s.policy
        if asked == "full":
            return None
        explore = self._shadow is not None and self._rng.random() < self._s.explore_share
        d = self.decide(q, vector, now, asked, rows=explore)
        original = msgspec.structs.replace(q)  # as asked: the engine fills in the plan
        return RoutedPlan(d.plan(), partial(self._done, d, original, now, explore))

    def drain(self) -> None:
        """Wait until the shadow runs queued so far have run (and been handed to the log)."""
        with contextlib.suppress(RuntimeError):  # closed: nothing is left to run
            self._shadows.submit(lambda: None).result()

    def close(self) -> None:
        self._shadows.shutdown(wait=True, cancel_futures=True)
        if self._sink is not None:
            self._sink.close()
        if self._models is not None:
            self._models.close()

    def _done(
        self, d: Decision, q: RecallQuery, now: float, explore: bool, res: RecallResult
    ) -> None:
        # A decision with no pocket to choose from has nothing to teach: not explored.
        explore = explore and bool(d.context.pockets)
        if not explore or not self._waiting.acquire(blocking=False):
            self._log(d, q.namespace, now, res)
            return
        try:
            self._shadows.submit(self._compare, d, q, now, res)
        except RuntimeError:  # closed meanwhile
            self._waiting.release()
            self._log(d, q.namespace, now, res)

    def _compare(self, d: Decision, q: RecallQuery, now: float, res: RecallResult) -> None:
        try:
            assert self._shadow is not None
            full = self._shadow(q)
            top = [h.record.key for h in full.hits]
            got = {h.record.key for h in res.hits}
            shadow = Shadow(
                recall_at_k=len(got & set(top)) / len(top) if top else 1.0,
                cost_units=full.cost_units,
                needed=sorted({h.pocket for h in full.hits}),
            )
            self._log(d, q.namespace, now, res, shadow)
        except Exception:  # a shadow run is only ever a measurement
            log.exception("a shadow run of the full plan failed")
        finally:
            self._waiting.release()

    def _log(
        self,
        d: Decision,
        namespace: str,
        now: float,
        res: RecallResult,
        shadow: Shadow | None = None,
    ) -> None:
        if self._sink is None:
            return
        ran = {r.pocket: r for r in res.plan}
        steps = []
        for s in d.steps:
            r = ran.get(s.pocket)
            steps.append(
                LoggedStep(
                    s.pocket,
                    s.depth,
                    s.probability,
                    s.cost_units,
                    "" if r is None else r.method,
                    0.0 if r is None else r.cost_units,
                    0.0 if r is None else r.best,
                )
            )
        f = d.features
        digest = hashlib.blake2b(f.vector().tobytes(), digest_size=8).hexdigest()
        self._sink.write(
            DecisionRecord(
                at=now,
                namespace=namespace,
                features=digest,
                flags=sorted(f.flags),
                rules=d.rules,
                policy=d.policy,
                asked=d.asked,
                widened=d.widened,
                steps=steps,
                cost_units=res.cost_units,
                full_cost_units=d.full_cost_units,
                hits=len(res.hits),
                took_micros=res.took_micros,
                shadow=shadow,
                inputs=None if shadow is None else _inputs(d),
                model=d.model,
            )
        )


def _inputs(d: Decision) -> Inputs | None:
    if d.rows is None:
        return None
    ctx = d.context
    return Inputs(
        layout=LAYOUT,
        width=int(d.rows.shape[1]),
        pockets=[p.name for p in ctx.pockets],
        sizes=[p.size for p in ctx.pockets],
        methods=[p.method for p in ctx.pockets],
        heuristic=ctx.heuristic,
        rows=np.ascontiguousarray(d.rows, np.float32).tobytes(),
        top_k=ctx.top_k,
        budget=ctx.budget,
        skip_below=ctx.skip_below,
        nothing=ctx.nothing,
    )
