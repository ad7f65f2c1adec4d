"""The Step's context: the prompt payload of the round within the route's token budget
(`context.ContextBuilder`); a long observation is stored once, as a memory the Step keeps."""

from __future__ import annotations

from functools import partial

from server.core.agent.context import ContextBuilder, ContextSettings, Summaries
from server.core.agent.keep import Keeper
from server.core.agent.ports import TokenCount
from server.core.agent.step_io import Round, StepOut
from server.core.settings import AgentSettings
from server.core.tenancy import tenant_of


class Composer:
    def __init__(
        self,
        settings: AgentSettings,
        count: TokenCount,
        keeper: Keeper,
        context: ContextSettings,
        summaries: Summaries,
    ) -> None:
        self._s = settings
        self._count = count
        self._keeper = keeper
        self._context = context
        self._summaries = summaries

    def build(self, rd: Round, out: StepOut) -> None:
        """The context into `out`, with the memories it recalled (`out.memories`) and the
        outcomes of the user's earlier tasks (`Recaller.outcomes`) and what the user said in
        this task that the profile reads (`Session.said`: shown whether or not memory has
        written it yet)."""
        r, s = rd.r, rd.s
        rd.deadline.check("the Step (building the context)")
        part = tenant_of(r.task_id)
        built = ContextBuilder(
            partial(self._count, part=part),
            lambda t: self._keeper.remember(rd, t.observation, ["long"]),
            self._context,
            self._summaries,
            part,
        ).build(
            s.goal,
            s.turns,
            [*out.memories, *(s.outcomes or ()), *(m for m, _ in s.said)],
            out.route.route.token_budget_round,
            known=s.stored,
            current=r.input,
        )
        for rnd, mid in built.stored.items():
            if mid and rnd not in s.stored:
                s.stored[rnd] = mid
                out.committed.append(mid)
                rd.cost += self._s.remember_micros
        out.context, out.context_tokens = built.text(), built.tokens
        out.context_dropped = built.dropped
