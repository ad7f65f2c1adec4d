"""Explain: the plan each routing policy would choose for a Recall, and why, without searching
(so a router can be evaluated offline, on queries alone); with `run`, each plan's result too.
The router sees what it would see in that Recall (`MemoryEngine.routing_vector`): the query's
vector, encoded first for a text query.

The route features and the heuristic are computed once (`Router.context`) and every policy
decides on the same view, so the explanations differ only by policy. A run is a shadow Recall
(`MemoryEngine.recall(shadow=True)`): it neither counts as an access nor is logged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import msgspec

from server.core.deadline import Deadline
from server.core.engine import MemoryEngine
from server.core.memory.model import RecallQuery, RecallResult
from server.core.routing.policies import POLICIES
from server.core.routing.router import Context, Decision, Router


@dataclass(frozen=True)
class Explained:
    decision: Decision
    result: RecallResult | None  # with run
    searched_steps: int  # with run: steps searched before the early stop ended the plan


class Explainer:
    def __init__(self, router: Router, engine: MemoryEngine) -> None:
        self._router = router
        self._engine = engine

    def explain(
        self, q: RecallQuery, policies: Sequence[str], run: bool, deadline: Deadline
    ) -> tuple[Context, list[Explained]]:
        """`policies` empty: all four, in their order."""
        vector = self._engine.routing_vector(q, deadline)  # what Recall would route with
        ctx = self._router.context(q, vector, self._engine.now())
        out = []
        for policy in policies or POLICIES:
            d = self._router.choose(ctx, q.namespace, policy)
            result, searched = None, 0
            if run:
                deadline.check("running the explained plans")
                asked = msgspec.structs.replace(
                    q,
                    plan=None if d.policy == "full" else d.plan(),
                    early_stop=d.policy != "full",
                )
                result = self._engine.recall(asked, deadline, shadow=True)
                searched = result.pockets_searched
            out.append(Explained(d, result, searched))
        return ctx, out
