"""What a Step keeps: the previous round (the action, the observation, what the user said), and
as memories its key events: the observation when it is one (`keyevents`), and what the user
says when it states a need or a preference. A memory gets its id here; once the Step has closed,
the memory engine's intake keeps it durable and writes it off the call
(`MemoryEngine.acknowledge`)."""

from __future__ import annotations

import secrets

from server.core.agent.context import Summaries, Turn
from server.core.agent.keyevents import WEIGHTS, Event, events, failed, should_commit
from server.core.agent.needs import NeedDetector
from server.core.agent.ports import Memory
from server.core.agent.step_io import Round
from server.core.memory.acknowledged import Pending
from server.core.memory.model import Kind, Record
from server.core.settings import AgentSettings
from server.core.tenancy import tenant_of


class Keeper:
    def __init__(
        self,
        settings: AgentSettings,
        engine: Memory,
        summaries: Summaries,
        memory_tokens: int,
        needs: NeedDetector | None,
        max_query_chars: int,
    ) -> None:
        """`memory_tokens`: a memory's gist, which its vector is encoded from. `needs`: a stated
        need by meaning, beside the rules (None: the rules)."""
        self._s = settings
        self._engine = engine
        self._summaries = summaries
        self._memory_tokens = memory_tokens
        self._needs = needs
        self._max_query = max_query_chars

    def remember(self, rd: Round, text: str, why: list[str], user: bool = False) -> str:
        """A memory for the engine's intake once the Step has closed, under an id chosen here,
        which the Step returns; "" when memory cannot store it (said in the warnings). Only
        what the user said (`user`) can be a preference: a tool's output saying "going
        forward, please …" is an observation."""
        if not rd.storable:
            rd.unstored.append(text)
            return ""
        mid = f"m-{secrets.token_hex(8)}"  # 64 random bits: in a prompt, 128 cost 12 tokens more
        rec = Record(
            memory_id=mid,
            namespace=rd.s.namespace,
            kind=Kind.PREFERENCE if user and "preference" in why else Kind.OBSERVATION,
            session_id=rd.s.session_id,
            text=text,
            tags=tuple(f"key:{w}" for w in why),
            importance=4,
        )
        gist = self._summaries(text, self._memory_tokens, part=tenant_of(rd.r.task_id))
        rd.writes.append(Pending(rec, gist))
        return mid

    def previous(self, rd: Round) -> None:
        """Note the previous round (its action, observation and what the user said then), and
        keep its observation when it is a key event."""
        r, s = rd.r, rd.s
        old = not s.fresh(r.round - 1)
        if not (r.previous_action or r.observation) or r.round - 1 in s.noted or old:
            return
        s.noted.add(r.round - 1)
        user = s.inputs.get(r.round - 1, "")
        s.turns.append(Turn(r.round - 1, r.previous_action, r.observation, user))
        found = events(r.observation, r.observation_has_media, s.previous_failed)
        if should_commit(found, self._s.commit_threshold):
            mid = self.remember(rd, r.observation, [e.kind for e in found])
            if mid:
                rd.committed.append(mid)
                s.stored[r.round - 1] = mid  # its full text, if the context shortens it
                rd.cost += self._s.remember_micros
        s.previous_failed = failed(r.observation)

    def user_said(self, rd: Round) -> None:
        """What the user says: a stated need or preference is a key event too (after the recall:
        this round's input is the query, not one of its answers)."""
        r, s = rd.r, rd.s
        if not (r.input and r.round not in s.inputs and s.fresh(r.round)):
            return
        s.inputs[r.round] = r.input
        stated = events(r.input, r.input_has_image, False)
        by_meaning = rd.storable and self._needs is not None
        if by_meaning and not any(e.kind == "preference" for e in stated):
            assert self._needs is not None
            # This round's Recall encoded it (as its query, cut to the query limit),
            # unless it had nothing to search (a new namespace) or ran in active mode:
            # then it is encoded here. A standing preference by meaning outranks a request
            # by wording ("I want all updates by SMS").
            said = r.input[: self._max_query]
            v = self._engine.cached_vector(s.namespace, said)
            if v is None:
                v = self._engine.encode([said], rd.deadline)[0]
            if self._needs.stated(v):
                stated = [e for e in stated if e.kind != "request"]
                stated.append(Event("preference", WEIGHTS["preference"]))
        if should_commit(stated, self._s.commit_threshold):
            mid = self.remember(rd, r.input, [e.kind for e in stated], user=True)
            if mid:
                rd.committed.append(mid)
                rd.cost += self._s.remember_micros
