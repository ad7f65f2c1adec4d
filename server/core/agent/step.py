"""One round of the agent loop (seed 001 §4.2): `AgentLoop.step` runs the phases of a Step, each
in its own module, over the ledger, the tier router, the tool-result cache, memory and the
context builder. A Step takes two ledger transactions, one opening and one closing.

A round, in order:
1. the opening transaction (`Ledger.open_round`): what the agent reports (`charges`), under the
   Step's idempotency key, so a retried Step never books it twice; on a task's first Step (the
   first after a restart) it is also the read of where the task lives and its tools' budgets
   (`session`), and the Step's own checks run in it before anything is booked (its goal, its
   tools' schemas, the key); the results of idempotent tools are cached once charged;
2. recall (`recall`: RECALL_MODE_AUTO) for this round's input, or the observation, or the goal,
   while the opening transaction commits; in RECALL_MODE_ACTIVE only when the action calls
   search_memory;
3. note the previous action and observation; keep the observation as a memory when it is a key
   event, and every input, as an episode of the session or as the user's preference, a fact, a
   correction, by what the `said` head reads in it (`keep`); memories are written off the call
   (on a niced thread), under ids chosen at once; on a task's first round, look up the
   outcomes of the user's earlier tasks (`recall`), shown in every round's context;
4. route the model tier (sticky, with the ladder's level);
5. list the tools allowed (`allowed`): an optional one is off from level 3, one at its call cap
   is left out;
6. parse the raw model output as the action (`act`): one retry per round; three identical
   actions in a row are a loop, a warning and one step down the ladder; a call of an idempotent
   tool with arguments seen before is answered from the cache;
7. build the context within the route's token budget (`compose`; a long observation is stored
   once);
8. the closing transaction (`Ledger.close_round`): the loop's step down, pocketd's own work
   (the Recalls' cost units, the storage: new work each time it runs) and the Step's memories,
   kept before it answers. A Step with nothing of these skips it. At degrade level 4, decided
   from the closing transaction's status, the failover plan (`failover`): when the closing can
   bring the task there (`failover.foreseen`), `best_memory_answer`'s recall for the goal runs
   before it, so its cost is charged in it too.
A Step that brings only the raw model output (the round's second call, once the model has
answered on the first call's context) only parses it: no recall and no context again.

The loop's own state (goal, rounds, tools, stored observations) is kept in memory per task
(`session`), `agent.sessions` of them; the money is in the durable ledger. After a restart a
task goes on with what its next Steps report.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from functools import partial

from server.core.agent.act import Actor
from server.core.agent.allowed import allowed
from server.core.agent.charges import Admission, Reports, cache_results, reported
from server.core.agent.compose import Composer
from server.core.agent.context import ContextSettings, Recalled, Summaries
from server.core.agent.failover import best, foreseen, plan
from server.core.agent.keep import Keeper
from server.core.agent.ports import Memory, TokenCount
from server.core.agent.recall import Recaller
from server.core.agent.said import SaidHead
from server.core.agent.session import Session, Sessions
from server.core.agent.step_io import OWN_KEY, SEARCH_MEMORY_TOOL, Round, StepIn, StepOut
from server.core.agent.tiers import Route, Routed, TierRouter, TierSettings
from server.core.agent.toolcache import ToolCache
from server.core.deadline import Deadline
from server.core.ledger.ledger import Ledger
from server.core.ledger.model import Charged, Failover, Status
from server.core.settings import AgentSettings
from server.core.tenancy import tenant_of

log = logging.getLogger(__name__)


def tier_settings(s: AgentSettings) -> TierSettings:
    return TierSettings(
        {n: Route(n, r.model, r.max_rounds, r.token_budget_round) for n, r in s.routes.items()},
        min_confidence=s.min_confidence,
        jump_confidence=s.jump_confidence,
        complex_rounds=s.complex_rounds,
        escalate_round=s.escalate_round,
        intent_ttl_s=s.intent_ttl_seconds,
    )


class AgentLoop:
    def __init__(
        self,
        settings: AgentSettings,
        ledger: Ledger,
        engine: Memory,
        tiers: TierRouter,
        cache: ToolCache,
        count_tokens: TokenCount,
        said: SaidHead | None = None,
        max_query_chars: int = 4096,
    ) -> None:
        """`said`: reads a user's input as a preference, a fact or a correction (None: every
        input is kept as an episode).
        `max_query_chars`: a Recall's query limit (`limits.max_query_chars`): the Step's
        queries are cut to it."""
        self._s = settings
        self._ledger = ledger
        self._engine = engine
        self._tiers = tiers
        self._cache = cache
        self._count = count_tokens
        self._sessions = Sessions(settings.sessions)
        summaries, context = Summaries(count_tokens), ContextSettings()
        self._recall = Recaller(engine, settings, max_query_chars, summaries)
        self._keeper = Keeper(
            settings, engine, summaries, context.memory_tokens, said, max_query_chars
        )
        self._actor = Actor(settings, cache, self._recall)
        self._composer = Composer(settings, count_tokens, self._keeper, context, summaries)

    def step(self, r: StepIn, deadline: Deadline) -> StepOut:
        """One round; two Steps of one task run one at a time (a client may retry while its
        first attempt still runs)."""
        reports = reported(r, self._s)
        s = self._sessions.get(r.task_id)
        admitted = Admission(r, reports, first=s is None)
        opened: Charged | None = None
        if s is None:  # the first Step: the opening transaction reads the task, then admits it
            s, opened = self._sessions.open(
                r.task_id, r.goal, lambda: self._open(r, reports, admitted)()
            )
        else:
            admitted()
        with s.lock:
            if admitted.tools is not None:
                s.tools = admitted.tools  # once, not every round
            if r.active_recall is not None:
                s.active_recall = r.active_recall
            mark = s.mark()
            try:
                out = self._step(r, s, reports, opened, deadline)
            except BaseException:
                s.restore(mark)
                raise
            s.trim(r.round, self._s.session_rounds)
            return out

    def _step(
        self, r: StepIn, s: Session, reports: Reports, opened: Charged | None, deadline: Deadline
    ) -> StepOut:
        rd = Round(r, s, deadline, self._engine.can_encode(), warnings=list(reports.warnings))
        waiting = self._open(r, reports) if opened is None else lambda: opened  # 1. the reports
        status = self._recall.while_opening(rd, lambda: waiting().status)  # 2. the recall
        cache_results(self._cache, rd.ns, r, s.tool_budgets)
        self._keeper.previous(rd)  # 3. the previous round, and its key events
        self._keeper.user_said(rd)  # what the user says
        self._recall.outcomes(rd)  # once a task: what happened last time
        routed, route_micros = self._route(rd, status)  # 4. the tier
        tools, names = allowed(s.tools, s.tool_budgets, status, s.active_recall)  # 5.
        out = StepOut(status, routed, tools, "", 0, [], rd.memories, committed=rd.committed)
        out.route_micros, out.namespace = route_micros, rd.ns
        if r.raw_model_output and not rd.paused:  # 6. the action
            self._actor.act(rd, names, out)
            rd.cost += out.step_cost
            if out.action is not None and out.action.type == "finish":
                self._keeper.outcome(rd, out.action.answer)  # how the task ended
        if not rd.quiet:  # 7. the context
            self._composer.build(rd, out)
        for_goal = self._for_failover(rd, status)  # 8. the failover's recall, charged at close
        self._close(rd, out)
        out.warnings = rd.warnings + _unstored(rd) + out.warnings
        out.step_cost = rd.cost
        s.state = out.status.state
        if out.status.level >= 4:  # the failover, from the closing transaction's status
            self._failover(rd, out, for_goal)
        if s.active_recall:
            out.search_memory_tool = json.dumps(SEARCH_MEMORY_TOOL)
        return out

    # -- phases

    def _open(
        self, r: StepIn, reports: Reports, admit: Callable[[], None] | None = None
    ) -> Callable[[], Charged]:
        """The Step's opening transaction, queued: the reported charges under the Step's key."""
        return self._ledger.open_round(
            r.task_id, r.round, reports.charges, reports.tools, reports.whole, admit
        )

    def _route(self, rd: Round, status: Status) -> tuple[Routed, int]:
        """The tier, and the router's own time in µs."""
        r = rd.r
        rd.deadline.check("the Step (routing the tier)")
        t0 = time.perf_counter()
        routed = self._tiers.route(
            r.task_id, r.round, rd.s.goal, r.input or r.observation, r.input_has_image, status.level
        )
        return routed, int((time.perf_counter() - t0) * 1e6)

    def _for_failover(self, rd: Round, status: Status) -> list[Recalled] | None:
        """What `best_memory_answer` picks from, recalled for the goal before the Step closes
        (so its cost is charged in the closing transaction) when that transaction can bring the
        task to level 4 (`failover.foreseen`), unless this round's recall was for the goal.
        None when not foreseen."""
        if status.failover != Failover.BEST_MEMORY_ANSWER:
            return None
        if not foreseen(status, rd.r.round, rd.cost, bool(rd.loop)):
            return None
        if rd.goal_recalled:
            return rd.memories
        for_goal, cost = self._recall(rd.ns, rd.s.goal, rd.deadline)
        rd.cost += cost
        return for_goal

    def _close(self, rd: Round, out: StepOut) -> None:
        """The Step's closing transaction: the loop's step down and pocketd's own work (skipped
        when there is neither); then the Step's memories, kept by the engine's intake before
        the Step answers and written off the call."""
        r = rd.r
        down = (rd.loop, f"{OWN_KEY}step:{r.round}:loop") if rd.loop else None
        if rd.cost or down:
            out.status = self._ledger.close_round(r.task_id, r.round, rd.cost, down)
        # The money first: a crash before the memories are kept loses none acknowledged (the
        # Step did not answer), and its retry charges the work it runs again.
        self._engine.acknowledge(rd.writes)  # durable now, written off the call

    def _failover(self, rd: Round, out: StepOut, for_goal: list[Recalled] | None) -> None:
        """The ladder's last step: what to do instead of another round. `best_memory_answer`
        takes the best of what was recalled for the goal (`_for_failover`; when level 4 came
        unforeseen, this round's recall if it was for the goal)."""
        best_memory = None
        if out.status.failover == Failover.BEST_MEMORY_ANSWER:
            best_memory = best(for_goal if for_goal is not None else rd.goal_memories)
        count = partial(self._count, part=tenant_of(rd.r.task_id))
        out.failover = plan(out.status, rd.s.goal, rd.s.turns, count, best_memory)

    # -- the task's life, and its memories

    def namespace_of(self, task_id: str) -> str | None:
        """The namespace a task was opened in (None: no such task)."""
        return self._ledger.namespace_of(task_id)

    def closed(self, task_id: str) -> None:
        """The task was closed: its loop state goes at once (a Step of a closed task is
        refused by the ledger), so memory holds the open tasks' state, not that of every task
        of the last `agent.sessions`."""
        self._sessions.closed(task_id)


def _unstored(rd: Round) -> list[str]:
    """What the Step says when memory has no text encoder."""
    out = []
    if not rd.storable:
        out.append(
            "memory was not searched: it has no text encoder (encoder.text: none), and a"
            " query needs a vector"
        )
    if rd.unstored:
        out.append(
            f"{len(rd.unstored)} memories were not stored: memory has no text encoder"
            " (encoder.text: none), so a memory needs a vector, which a Step has not"
        )
    return out
