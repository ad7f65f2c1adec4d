"""The router: it chooses a Recall's plan, which pockets to search and how deep (seed 003).

For each query it builds the route features, asks the policy for each candidate pocket's
probability of being needed, and splits the budget (`max_cost_share` of what the full plan would
cost) over them (`budget.split`). The plan it returns runs with the early stop on, so a routed
pocket is still skipped once it cannot matter.

It widens a plan to `full`, and records why, when:
- the query names a critical pattern (allergy, medication, payment, identity, security, and the
  configured `safety_cues`): missing one of those memories costs more than any scan (§5.2);
- the policy is unsure: its most probable pocket is below `min_confidence`.

`full` is the reference policy (every pocket the filter allows, at full depth) and the switch:
`router.policy: full` turns routing off.
"""

from __future__ import annotations

import hashlib
import logging
import random
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
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
from server.core.memory.ports import RoutedPlan
from server.core.memory.timecues import window
from server.core.routing.budget import RoutedStep, Scored, split
from server.core.routing.features import FeatureExtractor, QueryFeatures
from server.core.routing.heuristic import Evidence, heuristic
from server.core.routing.ports import DecisionSink
from server.core.routing.record import DecisionRecord, LoggedStep, Shadow
from server.core.settings import MemorySettings, RouterSettings

log = logging.getLogger(__name__)
# (namespace, filter) → the non-empty pockets the filter allows, with their statistics.
PocketSource = Callable[[str, MemoryFilter], Sequence[PocketStats]]
# (namespace, terms) → pocket name → term → documents holding it.
TermSource = Callable[[str, Sequence[str]], Mapping[str, Mapping[str, int]]]


@dataclass(frozen=True)
class Decision:
    policy: str  # the policy whose plan runs: "full" or "heuristic"
    steps: list[RoutedStep]
    rules: list[str]  # the heuristic rules that fired
    widened: str  # why the plan became the full one ("" when it did not)
    cost_units: float  # the plan's estimated cost
    full_cost_units: float  # the full plan's
    features: QueryFeatures

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
    ) -> None:
        """`shadow` runs a query's full plan (the engine's, unrouted); `seed` fixes which
        decisions are explored."""
        self._s = settings
        self._sink = sink
        self._shadow = shadow
        self._rng = random.Random(seed)
        # One shadow run at a time, off the request path; one more waits, the rest are skipped.
        self._shadows = ThreadPoolExecutor(1, thread_name_prefix="pocketd-shadow")
        self._waiting = threading.BoundedSemaphore(2)
        self._depth = memory.hybrid_search.candidates_per_channel
        self._top_k = memory.hybrid_search.top_k
        self._costs = CostModel(memory.pockets, memory.hybrid_search.expansion_search)
        self._features = FeatureExtractor(settings, analyze)
        self._pockets = pockets
        self._term_hits = term_hits

    def decide(
        self,
        q: RecallQuery,
        vector: npt.NDArray[np.float32] | None,
        now: float,
        policy: str | None = None,
    ) -> Decision:
        """The plan for `q` under `policy` (None: the configured one)."""
        chosen = policy or self._s.policy
        f = self._features.extract(q.text, vector, q.image_query)
        pockets = list(self._pockets(q.namespace, q.filter))
        top_k = q.top_k or self._top_k
        everything = [Scored(p, 1.0) for p in pockets]
        full = split(everything, None, self._depth, top_k, self._costs)
        full_cost = sum(s.cost_units for s in full)

        def widen(why: str, rules: list[str]) -> Decision:
            return Decision("full", full, rules, why, full_cost, full_cost, f)

        if chosen == "full" or not pockets:
            return widen("" if chosen == "full" else "no pockets", [])
        if f.safety:
            return widen(f"safety: {', '.join(f.safety)}", [])
        ref = now if q.as_of is None else q.as_of
        ev = Evidence(
            self._term_hits(q.namespace, list(f.terms)) if f.terms else {},
            window(q.text, ref) if q.text else None,
        )
        scored, rules = heuristic(f, vector, pockets, ev)
        best = max(s.probability for s in scored)
        if best < self._s.min_confidence:
            return widen(f"low confidence: {best:.2f} < {self._s.min_confidence}", rules)
        steps = split(scored, self._s.max_cost_share * full_cost, self._depth, top_k, self._costs)
        cost = sum(s.cost_units for s in steps)
        return Decision(chosen, steps, rules, "", cost, full_cost, f)

    def plan(
        self, q: RecallQuery, vector: npt.NDArray[np.float32] | None, now: float
    ) -> RoutedPlan | None:
        """The memory engine's `Planner`: the routed plan, logged once it has run; None under
        `router.policy: full` (the engine's default plan is the full one)."""
        if self._s.policy == "full":
            return None
        d = self.decide(q, vector, now)
        explore = self._shadow is not None and self._rng.random() < self._s.explore_share
        original = msgspec.structs.replace(q)  # as asked: the engine fills in the plan
        return RoutedPlan(d.plan(), partial(self._done, d, original, now, explore))

    def close(self) -> None:
        self._shadows.shutdown(wait=True, cancel_futures=True)
        if self._sink is not None:
            self._sink.close()

    def _done(
        self, d: Decision, q: RecallQuery, now: float, explore: bool, res: RecallResult
    ) -> None:
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
                widened=d.widened,
                steps=steps,
                cost_units=res.cost_units,
                full_cost_units=d.full_cost_units,
                hits=len(res.hits),
                took_micros=res.took_micros,
                shadow=shadow,
            )
        )
