"""The Step's recall and the user's profile (RECALL_MODE_AUTO: for this round's input, or the
observation, or the goal; in RECALL_MODE_ACTIVE only when the action calls search_memory), and
once a task, the outcomes of the user's earlier tasks."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from server.core.agent.context import Recalled, Summaries, focus_words
from server.core.agent.ports import Memory
from server.core.agent.step_io import Round
from server.core.deadline import Deadline
from server.core.errors import DeadlineExceededError, UnavailableError
from server.core.ledger.model import Status
from server.core.memory.model import Hit, Kind, MemoryFilter, RecallQuery
from server.core.settings import AgentSettings
from server.core.tenancy import tenant_of

# The user's profile: their preferences, and what they said that may be one (`said` read it as
# one, or as likelier one than anything else though below its floor: the safety net for a
# statement in words the head has not learnt).
PROFILE = MemoryFilter(
    kinds=(Kind.PREFERENCE, Kind.EPISODE), tags=("key:preference", "key:maybe-preference")
)
# The profile's candidates, per preference shown: the nearest, of which the newest are shown.
PROFILE_CANDIDATES = 2
# A finished task's outcome (`Keeper.outcome`): the earlier tasks' are read by it, and, for a
# task that kept none (closed without a finish, or written before outcomes were kept), its
# newest milestone (a stage completed, an error fixed).
OUTCOME = "outcome"
MILESTONES = frozenset({"stage", "fixed"})
OUTCOME_CANDIDATES = 16  # the earlier outcomes and milestones nearest a goal
# A round without input recalls for its observation's summary of this many tokens at most.
QUERY_TOKENS = 64


class Recaller:
    def __init__(
        self,
        engine: Memory,
        settings: AgentSettings,
        max_query_chars: int,
        summaries: Summaries,
    ) -> None:
        """`max_query_chars`: a Recall's query limit (`limits.max_query_chars`): the Step's
        queries are cut to it. `summaries`: the context builder's (an observation is parsed
        once for both)."""
        self._engine = engine
        self._s = settings
        self._max_query = max_query_chars
        self._summaries = summaries

    def __call__(self, ns: str, query: str, deadline: Deadline) -> tuple[list[Recalled], int]:
        """The top `recall_top_k` memories for `query`, then the user's profile: the newest
        `profile_top_k` of the `PROFILE_CANDIDATES` × as many most relevant of their
        preferences and the inputs likelier one (`PROFILE`) not among them (the newer of two
        values of one preference is the one that holds), with no relevance floor ("reach me
        the usual way" shares few words with "I'd rather you used chat"), and its cost in
        micros. A stated preference is needed sessions later, when a round's own facts
        (tickets, tool outputs) outrank it; its second search is by the query's cached vector
        alone. Nothing without a
        text encoder (a query needs a vector; the Step says so)."""
        if not self._engine.can_encode():
            return [], 0
        query = query[: self._max_query]  # what the Recall RPC accepts as a query
        # The Step's Recall does not wait for the loop's own memories still being written.
        hits = self._engine.recall(
            RecallQuery(namespace=ns, text=query, top_k=self._s.recall_top_k),
            deadline,
            settle=False,
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
                    top_k=PROFILE_CANDIDATES * self._s.profile_top_k,
                    filter=PROFILE,
                    min_score=0.0,
                ),
                deadline,
                settle=False,
            )
            units += profile.cost_units
            seen = {h.record.memory_id for h in found}
            fresh = [h for h in profile.hits if h.record.memory_id not in seen]
            fresh.sort(key=lambda h: -h.record.created_at)  # a newer preference says what holds
            found += fresh[: self._s.profile_top_k]
        cost = math.ceil(units * self._s.recall_micros_per_kilounit / 1000)
        return [_recalled(h) for h in found], cost

    def outcomes(self, rd: Round) -> None:
        """Once a task, how the user's latest earlier tasks ended: among the
        `OUTCOME_CANDIDATES` outcomes and milestones nearest the task's goal, each earlier
        task's outcome (`Keeper.outcome`; its newest, when it finished twice), or, for a
        session with no outcome, its newest milestone; those of the newest
        `earlier_outcomes` tasks, kept in the task's state and shown every round. Unlike the
        round's recall, this one waits for what the namespace acknowledged (the task before
        may have closed a moment ago). When memory cannot answer (a write failing, the
        deadline), the Step goes on without them, says so, and the next round looks again."""
        s = rd.s
        if s.outcomes is not None or rd.quiet or not rd.storable:
            return
        if not self._s.earlier_outcomes:
            s.outcomes = []
            return
        tags = tuple(f"key:{w}" for w in sorted({OUTCOME, *MILESTONES}))
        try:
            hits = self._engine.recall(
                RecallQuery(
                    namespace=s.namespace,
                    text=s.goal[: self._max_query],
                    top_k=OUTCOME_CANDIDATES,
                    filter=MemoryFilter(tags=tags),
                    min_score=0.0,
                ),
                rd.deadline,
            )
        except (UnavailableError, DeadlineExceededError) as e:
            rd.warnings.append(f"the earlier tasks' outcomes were not looked up: {e}")
            return
        latest = ended(hits.hits, rd.r.task_id, s.session_id)
        s.outcomes = [_recalled(h) for h in latest[: self._s.earlier_outcomes]]
        rd.cost += math.ceil(hits.cost_units * self._s.recall_micros_per_kilounit / 1000)

    def while_opening(self, rd: Round, opened: Callable[[], Status]) -> Status:
        """The round's recall, run while the Step's opening transaction commits; the status
        after it (`opened`). A paused task's recall is dropped (a paused task does no more work
        until its budget is raised); one resumed since the last Step recalls once it knows."""
        r, s = rd.r, rd.s
        rd.query = self.query(rd)
        wanted = not s.active_recall and bool(rd.query) and not r.parse_only
        was_paused = s.state == "paused"
        cost = 0
        if wanted and not was_paused:
            rd.memories, cost = self(s.namespace, rd.query, rd.deadline)
        status = opened()
        s.state = status.state
        rd.paused = status.state == "paused"
        if wanted and was_paused and not rd.paused:  # resumed by RaiseBudget since the last Step
            rd.memories, cost = self(s.namespace, rd.query, rd.deadline)
        rd.quiet = r.parse_only or rd.paused
        if rd.paused:
            rd.memories, cost = [], 0
        rd.cost += cost
        return status

    def query(self, rd: Round) -> str:
        """What the round recalls for: the user's input; else the observation, as its summary
        of `QUERY_TOKENS` by the goal and the action (its sentences that name what the task is
        about: an encoder reads only a text's head, the built-in one 2,048 characters, MiniLM
        256 tokens, and a 1,500-token log's head is its least telling part; a short one is its
        own summary); else the goal."""
        r, s = rd.r, rd.s
        if r.input:
            return r.input
        focus = focus_words(s.goal, r.previous_action)
        said = self._summaries(r.observation, QUERY_TOKENS, focus, tenant_of(r.task_id))
        return said.strip() or s.goal


def ended(hits: Sequence[Hit], task_id: str, session_id: str) -> list[Hit]:
    """How each earlier task ended, newest first: a task's newest outcome (by its task id), or,
    for a session none of whose tasks kept one, the session's newest milestone. This task's
    own are left out (its outcome by task, its milestones by session)."""
    outcome: dict[str, Hit] = {}
    milestone: dict[str, Hit] = {}
    for h in hits:
        rec = h.record
        if f"key:{OUTCOME}" in rec.tags:
            key, into = rec.source.task_id or rec.session_id, outcome
            if rec.source.task_id == task_id:
                continue
        else:
            key, into = rec.session_id, milestone
            if key == session_id:
                continue
        last = into.get(key)
        if last is None or rec.created_at > last.record.created_at:
            into[key] = h
    sessions = {h.record.session_id for h in outcome.values()}
    out = [*outcome.values(), *(h for k, h in milestone.items() if k not in sessions)]
    return sorted(out, key=lambda h: -h.record.created_at)


def _recalled(h: Hit) -> Recalled:
    return Recalled(
        h.record.memory_id,
        h.record.text,
        h.score.final,
        h.record.source_type.name.lower(),
        1.0 if h.record.source_type.name == "OFFICIAL_DOCUMENT" else 0.7,
        h.record.created_at,
    )
