"""What a Step keeps: the previous round (the action, the observation, what the user said), and
as memories: the observation when it is a key event (`keyevents`), and every input the user
gives, as an episode of its session (the hot session memory), or as the user's preference, a
fact, a correction, by what the `said` head reads in it. A memory gets its id here; once the
Step has closed, the memory engine's intake keeps it durable and writes it off the call
(`MemoryEngine.acknowledge`)."""

from __future__ import annotations

import secrets

from server.core.agent.context import Summaries, Turn
from server.core.agent.keyevents import events, failed, should_commit
from server.core.agent.ports import Memory
from server.core.agent.recall import OUTCOMES
from server.core.agent.said import Reading, Said, SaidHead
from server.core.agent.step_io import Round
from server.core.memory.acknowledged import Pending
from server.core.memory.model import Kind, Record
from server.core.settings import AgentSettings
from server.core.tenancy import tenant_of

# What the user said is kept as: its `said` reading first in the memory's reasons (`why`).
USER_KINDS = {"preference": Kind.PREFERENCE, "fact": Kind.FACT}


def why(reading: Reading | None, image: bool) -> list[str]:
    """A user's input's reasons to be kept, which say its kind: `preference` or `fact` first
    (a correction is kept as the kind it corrects, and tagged so), `said` otherwise (an
    episode), with `maybe-preference` when a preference is likelier than anything else but
    below its floor; `medium` when it brings an image."""
    out = ["said"]
    if reading is not None and reading.said != Said.OTHER:
        kind = "preference" if reading.kept_as_preference() else "fact"
        out = [kind, "correction"] if reading.said == Said.CORRECTION else [kind]
    elif reading is not None and reading.likeliest == Said.PREFERENCE:
        out.append("maybe-preference")
    return out + (["medium"] if image else [])


class Keeper:
    def __init__(
        self,
        settings: AgentSettings,
        engine: Memory,
        summaries: Summaries,
        memory_tokens: int,
        said: SaidHead | None,
        max_query_chars: int,
    ) -> None:
        """`memory_tokens`: a memory's gist, which its vector is encoded from. `said`: reads
        a user's input (None: every input is kept as an episode)."""
        self._s = settings
        self._engine = engine
        self._summaries = summaries
        self._memory_tokens = memory_tokens
        self._said = said
        self._max_query = max_query_chars

    def remember(self, rd: Round, text: str, why: list[str], user: bool = False) -> str:
        """A memory for the engine's intake once the Step has closed, under an id chosen here,
        which the Step returns; "" when memory cannot store it (said in the warnings). What
        the user said (`user`) is an episode of the session, or the user's preference or a
        fact (its first reason, `why`); a tool's output saying "going forward, please …" is an
        observation. An outcome (a stage completed, an error fixed) is encoded with the task's
        goal: found later by what it did."""
        if not rd.storable:
            rd.unstored.append(text)
            return ""
        mid = f"m-{secrets.token_hex(8)}"  # 64 random bits: in a prompt, 128 cost 12 tokens more
        kind = USER_KINDS.get(why[0], Kind.EPISODE) if user and why else Kind.OBSERVATION
        rec = Record(
            memory_id=mid,
            namespace=rd.s.namespace,
            kind=kind,
            session_id=rd.s.session_id,
            text=text,
            tags=tuple(f"key:{w}" for w in why),
            importance=4,
            speaker="user" if user else "",
        )
        gist = self._summaries(text, self._memory_tokens, part=tenant_of(rd.r.task_id))
        if OUTCOMES.intersection(why):
            gist = f"{rd.s.goal} {gist}"
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
        """What the user says, kept every round (after the recall: this round's input is the
        query, not one of its answers)."""
        r, s = rd.r, rd.s
        if not (r.input and r.round not in s.inputs and s.fresh(r.round)):
            return
        s.inputs[r.round] = r.input
        reading = self._read(rd) if rd.storable else None
        mid = self.remember(rd, r.input, why(reading, r.input_has_image), user=True)
        if mid:
            rd.committed.append(mid)
            rd.cost += self._s.remember_micros

    def _read(self, rd: Round) -> Reading | None:
        """What the input says (`said`), on the vector this round's Recall encoded for it (as
        its query, cut to the query limit), or encoded here when the Recall did not run (a new
        namespace, active mode). None without a head."""
        if self._said is None:
            return None
        said = rd.r.input[: self._max_query]
        v = self._engine.cached_vector(rd.s.namespace, said)
        if v is None:
            v = self._engine.encode([said], rd.deadline)[0]
        return self._said.read(said, v)
