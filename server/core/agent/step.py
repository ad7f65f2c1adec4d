"""One round of the agent loop (seed 001 §4.2): `AgentLoop.step` composes the ledger, the tier
router, the tool-result cache, memory and the context builder.

A round, in order:
1. charge what the agent reports: each model call's usage at its model's price, each tool call
   at its budget's price (and cache the result of an idempotent tool), in one ledger
   transaction, recorded as one request under the Step's idempotency key, so a retried Step
   never charges them twice (pocketd's own work, a Recall run again, is charged each time it
   runs);
2. recall (RECALL_MODE_AUTO) for this round's input, or the observation, or the goal, while
   that transaction commits; in RECALL_MODE_ACTIVE only when the action calls search_memory;
3. note the previous action and observation; commit the observation to memory when it is a key
   event (`keyevents`), and the input when it states a need or a preference; memories are
   written off the call (on a niced thread), under ids chosen at once;
4. route the model tier (sticky, with the ladder's level);
5. list the tools allowed: an optional one is off from level 3, one at its call cap is left out;
6. parse the raw model output as the action: one retry per round; three identical actions in a
   row are a loop, a warning and one step down the ladder; a call of an idempotent tool with
   arguments seen before is answered from the cache;
7. build the context within the route's token budget (a long observation is stored once), and
   charge pocketd's own work (the Recall's cost units, the storage) in a second transaction;
8. at degrade level 4, the failover plan (`failover`).
A Step that brings only the raw model output (the round's second call, once the model has
answered on the first call's context) only parses it: no recall and no context again.

The loop's own state (goal, rounds, tools, stored observations) is kept in memory per task,
`agent.sessions` of them; the money is in the durable ledger. After a restart a task goes on
with what its next Steps report.
"""

from __future__ import annotations

import json
import logging
import math
import secrets
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from server.core.agent.action import Action, ActionError, looping, parse
from server.core.agent.context import ContextBuilder, ContextSettings, Recalled, Summaries, Turn
from server.core.agent.failover import FailoverPlan, best, partial_result
from server.core.agent.keyevents import WEIGHTS, Event, events, failed, should_commit
from server.core.agent.memory_writer import MemoryWriter, Pending, PendingWrites
from server.core.agent.needs import NeedDetector
from server.core.agent.ports import TokenCount
from server.core.agent.tiers import Route, Routed, TierRouter, TierSettings
from server.core.agent.toolcache import ToolCache, canonical
from server.core.agent.tools import ToolSchemaError, compact
from server.core.deadline import Deadline
from server.core.engine import MemoryEngine
from server.core.errors import (
    FailedPreconditionError,
    FieldViolation,
    InvalidArgumentError,
    Location,
)
from server.core.ledger.ledger import Ledger
from server.core.ledger.model import Charge, Failover, SpendKind, Status, ToolBudget
from server.core.memo import PartitionedLRU
from server.core.memory.model import (
    Kind,
    MemoryFilter,
    RecallQuery,
    Record,
)
from server.core.settings import AgentSettings
from server.core.tenancy import tenant_of

log = logging.getLogger(__name__)
CLOSE_SECONDS = 30.0
MAX_REPLAYS = 3  # start-ups that try a kept memory again before it is given up (logged)
MAX_PENDING_WRITES = 256  # beyond this many queued memory writes, a Step writes its own
SEARCH_MEMORY = "search_memory"
# The prefix of the idempotency keys a Step makes itself: no client key can start with it (a
# client's key is [A-Za-z0-9_.:-]), so a client's Reserve never replays a Step's charges.
OWN_KEY = "#"
SEARCH_MEMORY_TOOL = {
    "name": SEARCH_MEMORY,
    "description": "Search the user's long-term memory. Returns the most relevant memories.",
    "parameters": {
        "type": "object",
        "properties": {"query": {"type": "string", "description": "What to look for"}},
        "required": ["query"],
    },
}


@dataclass(frozen=True)
class Usage:
    model: str
    input_tokens: int
    output_tokens: int


@dataclass(frozen=True)
class ToolRun:
    tool: str
    params: dict[str, Any]
    result: str


@dataclass(frozen=True)
class StepIn:
    task_id: str
    round: int
    goal: str = ""
    input: str = ""
    input_has_image: bool = False
    previous_action: str = ""
    observation: str = ""
    observation_has_media: bool = False
    usage: tuple[Usage, ...] = ()
    tool_results: tuple[ToolRun, ...] = ()
    raw_model_output: str = ""
    key: str = ""  # the Step's idempotency key: its reported charges are keyed by it
    tools: tuple[dict[str, Any], ...] | None = None  # None: as before
    active_recall: bool | None = None  # None: as the task's earlier Steps said (auto at first)


@dataclass
class StepOut:
    status: Status
    route: Routed
    tools: list[tuple[str, str]]  # (name, compact description)
    context: str
    context_tokens: int
    context_dropped: list[str]
    memories: list[Recalled]
    action: Action | None = None
    cached_result: str | None = None
    action_error: str = ""
    retry_action: bool = False
    committed: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    search_memory_tool: str = ""
    step_cost: int = 0
    failover: FailoverPlan | None = None  # at degrade level 4
    route_micros: int = 0  # the tier router's own time
    namespace: str = ""  # the task's namespace, as the core keeps it (for the call log)


@dataclass
class _Opening:
    """A task whose first Step is between its ledger read and keeping its state: how many
    such Steps, and how many times the task was closed meanwhile."""

    steps: int = 0
    closes: int = 0


@dataclass
class _Session:
    goal: str
    namespace: str
    session_id: str
    tool_budgets: dict[str, ToolBudget]
    turns: list[Turn] = field(default_factory=list)
    stored: dict[int, str] = field(default_factory=dict)
    tools: list[tuple[str, str]] = field(default_factory=list)  # (name, compact description)
    actions: dict[int, Action] = field(default_factory=dict)  # round → its action
    noted: set[int] = field(default_factory=set)  # rounds whose observation is noted
    refused: dict[int, list[str]] = field(default_factory=dict)  # round → refused raw outputs
    previous_failed: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)
    active_recall: bool = False
    inputs: dict[int, str] = field(default_factory=dict)  # round → what the user said
    state: str = "open"  # the task's state at the last Step ("paused": no recall is started)
    floor: int = 0  # the oldest round kept: older ones are gone (`trim`), as if noted

    def trim(self, round_: int, window: int) -> None:
        """Keep the last `window` rounds before `round_`: the state stays bounded however long
        the task runs (a Step of an older round notes and commits nothing)."""
        floor = round_ - window
        if floor <= self.floor:
            return
        self.floor = floor
        self.turns = [t for t in self.turns if t.round >= floor]
        for d in (self.stored, self.actions, self.refused, self.inputs):
            for k in [k for k in d if k < floor]:
                del d[k]
        self.noted = {n for n in self.noted if n >= floor}

    def fresh(self, round_: int) -> bool:
        """Whether `round_` is within the kept window."""
        return round_ >= self.floor

    def mark(self) -> tuple[Any, ...]:
        """What a Step changes, to put back if it fails (so its retry notes the round again,
        and commits its key events again)."""
        return (
            len(self.turns), set(self.noted), dict(self.inputs), dict(self.stored),
            dict(self.actions), self.previous_failed,
        )  # fmt: skip

    def restore(self, m: tuple[Any, ...]) -> None:
        n, self.noted, self.inputs, self.stored, self.actions, self.previous_failed = m
        del self.turns[n:]


def _compacted(schemas: Sequence[dict[str, Any]]) -> list[tuple[str, str]]:
    out = []
    for i, schema in enumerate(schemas):
        try:
            out.append((str(schema.get("name", "")), compact(schema, i)))
        except ToolSchemaError as e:
            raise InvalidArgumentError([FieldViolation(f"tools_json[{i}]", str(e))]) from e
    return out


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
        engine: MemoryEngine,
        tiers: TierRouter,
        cache: ToolCache,
        count_tokens: TokenCount,
        background_nice: int = 0,
        pending: PendingWrites | None = None,
        needs: NeedDetector | None = None,
        max_query_chars: int = 4096,
    ) -> None:
        """`background_nice`: the niceness of the thread that writes the loop's memories (so a
        Step's Recall gets the cores first). `pending`: where acknowledged memories are kept
        until written (None: they are not, and a crash may lose them). `max_query_chars`: a
        Recall's query limit (`limits.max_query_chars`): the Step's queries are cut to it."""
        self._max_query = max_query_chars
        self._pending = pending
        self._needs = needs  # a stated need by meaning, beside the rules (None: the rules)
        self._s = settings
        self._ledger = ledger
        self._engine = engine
        self._tiers = tiers
        self._cache = cache
        self._count = count_tokens
        self._summaries = Summaries(count_tokens)
        # Per tenant, so one tenant's tasks never evict another's sessions.
        self._sessions: PartitionedLRU[str, _Session] = PartitionedLRU(max(settings.sessions, 1))
        self._lock = threading.Lock()
        # Tasks whose first Step is reading the ledger: a close meanwhile is counted there.
        self._opening: dict[str, _Opening] = {}
        self._writer = MemoryWriter(
            engine, background_nice, MAX_PENDING_WRITES, None if pending is None else pending.done
        )
        self._s_context = ContextSettings()

    def step(self, r: StepIn, deadline: Deadline) -> StepOut:
        """One round; two Steps of one task run one at a time (a client may retry while its
        first attempt still runs)."""
        s = self._session(r)
        with s.lock:
            if r.tools is not None:
                s.tools = _compacted(r.tools)  # once, not every round
            if r.active_recall is not None:
                s.active_recall = r.active_recall
            mark = s.mark()
            try:
                out = self._step(r, s, deadline)
            except BaseException:
                s.restore(mark)
                raise
            s.trim(r.round, self._s.session_rounds)
            return out

    def _step(self, r: StepIn, s: _Session, deadline: Deadline) -> StepOut:
        out_cost = 0
        warnings: list[str] = []
        writes: list[Pending] = []  # this Step's memories: kept with its last charge, then written
        storable = self._engine.can_encode()  # without an encoder, a text cannot be stored
        unstored: list[str] = []

        def remember(text: str, why: list[str], user: bool = False) -> str:
            """A memory's id, or "" when memory cannot store it (said in the warnings)."""
            if not storable:
                unstored.append(text)
                return ""
            return self._remember(s, r, text, why, writes, user)

        ns, tool_budgets = s.namespace, s.tool_budgets
        # 1. what the agent reports, charged in one ledger transaction
        charges: list[Charge] = []
        for u in r.usage:
            price = self._s.prices.get(u.model)
            if price is None:
                price = self._s.default_price
                warnings.append(f"model {u.model!r} has no price in agent.prices: default used")
            for kind, tokens, per_1k in (
                (SpendKind.MODEL_INPUT_TOKENS, u.input_tokens, price.input_per_1k_micros),
                (SpendKind.MODEL_OUTPUT_TOKENS, u.output_tokens, price.output_per_1k_micros),
            ):
                if tokens:
                    amount = -(-tokens * per_1k // 1000)
                    charges.append(Charge(kind, amount, "", "", keyed=False))
        for t in r.tool_results:
            tb = tool_budgets.get(t.tool)
            call_price = 0 if tb is None else tb.cost_per_call_micros
            charges.append(Charge(SpendKind.TOOL_CALL, call_price, t.tool, "", keyed=False))
        # The reports are one request under the Step's key: a retry books none of them again.
        whole = None
        if charges:
            if not r.key:
                raise InvalidArgumentError(
                    [FieldViolation("idempotency_key", "is required with usage or tool_results")]
                )
            reports = (
                tuple((u.model, u.input_tokens, u.output_tokens) for u in r.usage),
                tuple((t.tool, canonical(t.params)) for t in r.tool_results),
            )
            whole = (f"{OWN_KEY}step:{r.round}:{r.key}", ("step", r.round, reports))
        waiting = self._ledger.charge_soon(r.task_id, r.round, charges, whole=whole)
        # A Step that brings only the model's output is the round's second call (the action,
        # parsed): no recall and no context again. A paused task does no more work until its
        # budget is raised: what was spent is charged, and the failover says where it stopped.
        parse_only = bool(r.raw_model_output) and not (
            r.observation or r.previous_action or r.input or r.tools
        )
        # 2. recall, while the charges commit (a paused task's recall is dropped)
        memories: list[Recalled] = []
        recall_cost = 0
        query = r.input or r.observation or s.goal
        wanted = not s.active_recall and bool(query) and not parse_only
        was_paused = s.state == "paused"
        if wanted and not was_paused:
            memories, recall_cost = self._recall(ns, query, deadline)
        status = waiting().status
        s.state = status.state
        for t in r.tool_results:  # charged: the results of idempotent tools are cached
            tb = tool_budgets.get(t.tool)
            if tb is not None:
                self._cache.put(ns, t.tool, t.params, t.result, tb.cache_ttl_seconds, tb.idempotent)
        paused = status.state == "paused"
        if wanted and was_paused and not paused:  # resumed by RaiseBudget since the last Step
            memories, recall_cost = self._recall(ns, query, deadline)
        quiet = parse_only or paused
        if paused:
            memories, recall_cost = [], 0
        out_cost += recall_cost
        # 3. the previous round, and its key events
        committed: list[str] = []
        old = not s.fresh(r.round - 1)
        if (r.previous_action or r.observation) and r.round - 1 not in s.noted and not old:
            s.noted.add(r.round - 1)
            user = s.inputs.get(r.round - 1, "")
            s.turns.append(Turn(r.round - 1, r.previous_action, r.observation, user))
            found = events(r.observation, r.observation_has_media, s.previous_failed)
            if should_commit(found, self._s.commit_threshold):
                mid = remember(r.observation, [e.kind for e in found])
                if mid:
                    committed.append(mid)
                    s.stored[r.round - 1] = mid  # its full text, if the context shortens it
                    out_cost += self._s.remember_micros
            s.previous_failed = failed(r.observation)
        # what the user says: a stated need or preference is a key event too
        # (after the recall: this round's input is the query, not one of its answers)
        if r.input and r.round not in s.inputs and s.fresh(r.round):
            s.inputs[r.round] = r.input
            stated = events(r.input, r.input_has_image, False)
            by_meaning = storable and self._needs is not None
            if by_meaning and not any(e.kind == "preference" for e in stated):
                assert self._needs is not None
                # This round's Recall encoded it (as its query, cut to the query limit),
                # unless it had nothing to search (a new namespace) or ran in active mode:
                # then it is encoded here. A standing preference by meaning outranks a request
                # by wording ("I want all updates by SMS").
                said = r.input[: self._max_query]
                v = self._engine.cached_vector(ns, said)
                if v is None:
                    v = self._engine.encode([said], deadline)[0]
                if self._needs.stated(v):
                    stated = [e for e in stated if e.kind != "request"]
                    stated.append(Event("preference", WEIGHTS["preference"]))
            if should_commit(stated, self._s.commit_threshold):
                mid = remember(r.input, [e.kind for e in stated], user=True)
                if mid:
                    committed.append(mid)
                    out_cost += self._s.remember_micros
        # 4. the tier
        deadline.check("the Step (routing the tier)")
        t0 = time.perf_counter()
        routed = self._tiers.route(
            r.task_id, r.round, s.goal, r.input or r.observation, r.input_has_image, status.level
        )
        route_micros = int((time.perf_counter() - t0) * 1e6)
        # 5. the tools allowed
        capped = {
            x.limit[5:] for x in status.limits if x.limit.startswith("tool:") and not x.remaining
        }
        tools = []
        for name, line in s.tools:
            tb = tool_budgets.get(name)
            if name in capped or (status.level >= 3 and tb is not None and tb.optional):
                continue
            tools.append((name, line))
        names = {n for n, _ in tools} | ({SEARCH_MEMORY} if s.active_recall else set())
        # 6./7. the action, then the context (an active recall's results go into it)
        out = StepOut(status, routed, tools, "", 0, [], memories, committed=committed)
        out.route_micros, out.namespace = route_micros, ns
        if r.raw_model_output and not paused:
            deadline.check("the Step (parsing the action)")
            self._act(r, s, ns, names, out, deadline)
            out_cost += out.step_cost
        if not quiet:
            deadline.check("the Step (building the context)")
            part = tenant_of(r.task_id)
            built = ContextBuilder(
                partial(self._count, part=part),
                lambda t: remember(t.observation, ["long"]),
                self._s_context,
                self._summaries,
                part,
            ).build(
                s.goal,
                s.turns,
                out.memories,
                routed.route.token_budget_round,
                known=s.stored,
                current=r.input,
            )
            for rnd, mid in built.stored.items():
                if mid and rnd not in s.stored:
                    s.stored[rnd] = mid
                    out.committed.append(mid)
                    out_cost += self._s.remember_micros
            out.context, out.context_tokens = built.text(), built.tokens
            out.context_dropped = built.dropped
        if out_cost or writes:
            out.status = self._charge_memory(r, out_cost, writes)
            for p in writes:  # durable now: written off the call
                self._writer.submit(p)
        if not storable:
            warnings.append(
                "memory was not searched: it has no text encoder (encoder.text: none), and a"
                " query needs a vector"
            )
        if unstored:
            warnings.append(
                f"{len(unstored)} memories were not stored: memory has no text encoder"
                " (encoder.text: none), so a memory needs a vector, which a Step has not"
            )
        out.warnings = warnings + out.warnings
        out.step_cost = out_cost
        s.state = out.status.state
        if out.status.level >= 4:
            goal_recalled = query == s.goal and not s.active_recall and not quiet
            self._failover(r, s, ns, out, memories if goal_recalled else None, deadline)
        if s.active_recall:
            out.search_memory_tool = json.dumps(SEARCH_MEMORY_TOOL)
        return out

    # -- parts

    def _failover(
        self,
        r: StepIn,
        s: _Session,
        ns: str,
        out: StepOut,
        for_goal: list[Recalled] | None,
        deadline: Deadline,
    ) -> None:
        """The ladder's last step: what to do instead of another round. `best_memory_answer`
        recalls for the goal (unless this round's recall was for the goal) and charges it."""
        best_memory = None
        if out.status.failover == Failover.BEST_MEMORY_ANSWER:
            if for_goal is None:
                for_goal, cost = self._recall(ns, s.goal, deadline)
                if cost:
                    out.status = self._charge_memory(r, cost)
                    out.step_cost += cost
            best_memory = best(for_goal)
        out.failover = FailoverPlan(
            out.status.failover,
            out.status.stop_reason or (out.status.warnings[-1] if out.status.warnings else ""),
            partial_result(s.goal, s.turns, partial(self._count, part=tenant_of(r.task_id))),
            best_memory,
        )

    def _session(self, r: StepIn) -> _Session:
        """The task's loop state; the first Step of a task (or the first after a restart) reads
        the task from the ledger: NOT_FOUND, closed, or where it lives and its tools' budgets
        (which never change). It keeps the state only if the task was not closed since that
        read (`closed` ran before the state was kept, and a closed task's state would stay
        until `agent.sessions` newer tasks push it out); otherwise it reads the ledger again,
        which refuses the closed task."""
        part, tid = tenant_of(r.task_id), r.task_id
        with self._lock:
            s = self._sessions.get(part, tid)
            if s is not None:
                return s
            opening = self._opening.setdefault(tid, _Opening())
            opening.steps += 1
        try:
            seen = 0
            task = self._ledger.charge(tid, r.round, ())  # NOT_FOUND, or closed: refused
            if not r.goal:
                raise FailedPreconditionError(
                    f"the first Step of task {tid!r} needs its goal",
                    "GOAL_REQUIRED",
                    Location("goal"),
                )
            s = _Session(r.goal, task.namespace, task.session_id, task.budget.tools)
            while True:
                with self._lock:  # (another first Step of the task may have made one meanwhile)
                    held = self._sessions.get(part, tid)
                    if held is not None:
                        return held
                    if opening.closes == seen:
                        self._sessions.put(part, tid, s)
                        return s
                    seen = opening.closes
                self._ledger.charge(tid, r.round, ())
        finally:
            with self._lock:
                opening.steps -= 1
                if opening.steps == 0:
                    del self._opening[tid]

    def _charge_memory(self, r: StepIn, amount: int, writes: Sequence[Pending] = ()) -> Status:
        """pocketd's own work (new work each time it runs, so a fresh key), with the Step's
        memories kept in the same transaction."""
        c = Charge(SpendKind.MEMORY, amount, "", "", keyed=False)
        keep = None if self._pending is None else partial(self._pending.keep, batch=writes)
        return self._ledger.charge_soon(r.task_id, r.round, [c] if amount else [], keep)().status

    def replay(self) -> int:
        """Write the memories a crash left acknowledged and unwritten; how many. One the store
        already has is not written again (a Forget or an Update since stays)."""
        if self._pending is None:
            return 0
        again, there, given_up = self._pending.sort_out(
            lambda p: self._engine.known(p.record.namespace, p.record.memory_id), MAX_REPLAYS
        )
        for p in again:
            self._writer.submit(p, behind=False)
        if there or given_up:
            log.info("kept agent memories: %d already written, %d given up", there, given_up)
        return len(again)

    def _remember(
        self,
        s: _Session,
        r: StepIn,
        text: str,
        why: list[str],
        writes: list[Pending],
        user: bool = False,
    ) -> str:
        """A memory to write off the call (`MemoryWriter`) once the Step's last transaction
        keeps it, under an id chosen here, which the Step returns. Only what the user said
        (`user`) can be a preference: a tool's output saying "going forward, please …" is
        an observation."""
        mid = f"m-{secrets.token_hex(8)}"  # 64 random bits: in a prompt, 128 cost 12 tokens more
        rec = Record(
            memory_id=mid,
            namespace=s.namespace,
            kind=Kind.PREFERENCE if user and "preference" in why else Kind.OBSERVATION,
            session_id=s.session_id,
            text=text,
            tags=tuple(f"key:{w}" for w in why),
            importance=4,
        )
        gist = self._summaries(text, self._s_context.memory_tokens, part=tenant_of(r.task_id))
        writes.append(Pending(rec, gist))
        return mid

    def namespace_of(self, task_id: str) -> str | None:
        """The namespace a task was opened in (None: no such task)."""
        return self._ledger.namespace_of(task_id)

    def closed(self, task_id: str) -> None:
        """The task was closed: its loop state goes at once (a Step of a closed task is
        refused by the ledger), so memory holds the open tasks' state, not that of every task
        of the last `agent.sessions`."""
        with self._lock:
            self._sessions.pop(tenant_of(task_id), task_id)
            opening = self._opening.get(task_id)
            if opening is not None:
                opening.closes += 1

    def settle(self, namespace: str, deadline: Deadline) -> None:
        """Every memory a Step acknowledged in `namespace` is in the store once this returns
        (`MemoryWriter.settle`). (A kept copy of one a Forget then erases is never replayed:
        the store knows the id it held.)"""
        self._writer.settle(namespace, deadline)

    def close(self) -> None:
        """Finish the memory writes queued so far (before the engine closes); kept ones wait at
        most `CLOSE_SECONDS` (the next start writes the rest)."""
        self._writer.close(None if self._pending is None else CLOSE_SECONDS)
        if self._pending is not None:
            self._pending.flush()  # the copies of what was written since the last Step

    def _recall(self, ns: str, query: str, deadline: Deadline) -> tuple[list[Recalled], int]:
        """The top `recall_top_k` memories for `query`, then the user's profile: the
        `profile_top_k` most relevant preferences and needs (kind PREFERENCE) not among them,
        with no relevance floor ("reach me the usual way" shares few words with "I'd rather you
        used chat"). A stated preference is needed sessions later, when a round's own facts
        (tickets, tool outputs) outrank it; its second search is by the query's cached vector
        alone. Nothing without a text encoder (a query needs a vector; the Step says so)."""
        if not self._engine.can_encode():
            return [], 0
        query = query[: self._max_query]  # what the Recall RPC accepts as a query
        hits = self._engine.recall(
            RecallQuery(namespace=ns, text=query, top_k=self._s.recall_top_k), deadline
        )
        units = hits.cost_units
        found = list(hits.hits)
        vector = self._engine.cached_vector(ns, query) if self._s.profile_top_k else None
        if vector is None and self._s.profile_top_k and hits.hits:  # evicted meanwhile
            vector = self._engine.routing_vector(RecallQuery(namespace=ns, text=query), deadline)
        if self._s.profile_top_k and vector is not None:  # None: nothing stored yet
            # A profile, not a search: the closest by meaning, however far, on the vector the
            # Recall just encoded (no keyword channel: "reach me the usual way" shares no word
            # with "I'd rather you used chat").
            profile = self._engine.recall(
                RecallQuery(
                    namespace=ns,
                    vector=vector,
                    top_k=self._s.profile_top_k,
                    filter=MemoryFilter(kinds=(Kind.PREFERENCE,)),
                    min_score=0.0,
                ),
                deadline,
            )
            units += profile.cost_units
            seen = {h.record.memory_id for h in found}
            found += [h for h in profile.hits if h.record.memory_id not in seen]
        cost = math.ceil(units * self._s.recall_micros_per_kilounit / 1000)
        return [
            Recalled(
                h.record.memory_id,
                h.record.text,
                h.score.final,
                h.record.source_type.name.lower(),
                1.0 if h.record.source_type.name == "OFFICIAL_DOCUMENT" else 0.7,
                h.record.created_at,
            )
            for h in found
        ], cost

    def _act(
        self, r: StepIn, s: _Session, ns: str, names: set[str], out: StepOut, deadline: Deadline
    ) -> None:
        try:
            action = parse(r.raw_model_output, names)
        except ActionError as e:
            # One retry per round: the first refused output may be tried again; the same output
            # sent again (a retried Step) is answered the same.
            refused = s.refused.setdefault(r.round, [])
            if r.raw_model_output not in refused:
                refused.append(r.raw_model_output)
            out.action_error, out.retry_action = str(e), refused[0] == r.raw_model_output
            return
        out.action = action
        s.actions[r.round] = action  # a retried Step replaces its round's action
        history = [s.actions[k] for k in sorted(s.actions)]
        if looping(history, self._s.loop_repeat):
            why = f"the same action {self._s.loop_repeat} times in a row: {action.signature()[:80]}"
            out.warnings.append(why)
            out.status = self._ledger.step_down(r.task_id, why, f"{OWN_KEY}step:{r.round}:loop")
        if action.type != "tool":
            return
        if action.tool == SEARCH_MEMORY:
            query = str(action.params.get("query", ""))
            if query:
                out.memories, out.step_cost = self._recall(ns, query, deadline)
            return
        tb = s.tool_budgets.get(action.tool)  # this task must declare it cacheable itself
        if tb is None or not tb.idempotent or tb.cache_ttl_seconds <= 0:
            return
        hit = self._cache.get(ns, action.tool, action.params, tb.cache_ttl_seconds)
        out.step_cost += self._s.cache_lookup_micros  # a hit costs the lookup, not the call
        if hit is not None:
            out.cached_result = hit.result
