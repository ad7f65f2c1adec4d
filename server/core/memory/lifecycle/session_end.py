"""A session's end (seed 001 §4.1): its turns are summarised into warm candidates and leave the
hot tier.

A session ends by `EndSession`, or `memory.hot.ttl_seconds` after its last turn (the hot tier's
session memory, `HotSessions`, says which are idle). The summariser (extractive over the built-in
encoder by default, or an OpenAI-compatible endpoint) picks the sentences that carry facts; each
becomes a warm summary candidate that passes the write gate like any write, with `derived_from`
naming the turns it came from, and the session's hot turns move to warm in the same change (a
crash, even `kill -9`, leaves both or neither: the session then stays hot and ends again). The
record store is what is summarised (every current turn of the session, those already moved to warm
by the hot tier's cap too), so nothing the hot session memory lost is missed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import msgspec

from server.core.clock import Clock
from server.core.deadline import Deadline
from server.core.errors import Location, NotFoundError
from server.core.memory.changes import Cause, Op, Put
from server.core.memory.model import Kind, NewMemory, Record, Tier, Vector, WriteResult
from server.core.memory.ports import HotSessions, MetadataColumns, RecordStore
from server.core.memory.summarise import Passage, Summariser
from server.core.memory.write.writer import Writer
from server.core.settings import MemorySettings

Encode = Callable[[Sequence[str]], Vector]


@dataclass(frozen=True)
class SessionEndResult:
    summaries: list[WriteResult]
    moved: int


class SessionEnder:
    def __init__(
        self,
        settings: MemorySettings,
        sessions: HotSessions,
        summariser: Summariser | None,
        writer: Writer,
        store: RecordStore,
        columns: MetadataColumns,
        clock: Clock,
        encode: Encode | None,
    ) -> None:
        self._s = settings
        self._sessions = sessions
        self._summariser = summariser
        self._writer = writer
        self._store = store
        self._cols = columns
        self._clock = clock
        self._encode = encode
        # One session end at a time (EndSession, the TTL tick and a maintenance run may meet).
        self._lock = threading.Lock()

    def end(self, namespace: str, session_id: str, deadline: Deadline) -> SessionEndResult:
        """End one session. NOT_FOUND when the namespace holds no turn of it."""
        with self._lock:
            return self._end(namespace, session_id, deadline)

    def _end(self, namespace: str, session_id: str, deadline: Deadline) -> SessionEndResult:
        ns_id = self._cols.ns_id(namespace)
        keys: list[int] = self._cols.session_keys(ns_id, session_id).tolist() if ns_id >= 0 else []
        records = [r for r in self._store.get(keys).values()]
        if not records:
            raise NotFoundError("session", session_id, where=Location("session_id"))
        records.sort(key=lambda r: (r.turn, r.created_at, r.key))
        items = self._summarise(namespace, session_id, records, deadline)
        moves: list[Op] = []

        def move() -> list[Op]:
            moves.extend(self._moves(namespace, session_id))
            return moves

        # One change: the summaries and the moves (a crash leaves both or neither).
        if items:
            summaries = self._writer.write(items, deadline, also=move)
        else:
            summaries = []
            self._writer.change(move, deadline, "the session's tier move")
        return SessionEndResult(summaries, len(moves))

    def expire(self, deadline: Deadline, only: str = "") -> tuple[int, int, int]:
        """End every session idle for `hot.ttl_seconds` (of namespace `only`, when given);
        return (sessions, turns moved, memories their summaries superseded)."""
        before = self._clock.now() - self._s.hot.ttl_seconds
        ended = moved = superseded = 0
        for namespace, session_id in self._sessions.idle(before):
            if only and namespace != only:
                continue
            deadline.check("ending idle sessions")
            try:
                got = self.end(namespace, session_id, deadline)
            except NotFoundError:  # forgotten meanwhile: nothing left to end
                self._sessions.end(namespace, session_id)
                continue
            ended += 1
            moved += got.moved
            superseded += sum(len(r.superseded) for r in got.summaries)
        return ended, moved, superseded

    def _moves(self, namespace: str, session_id: str) -> list[Op]:
        """The session's turns still hot, moved to warm (read under the writer's lock)."""
        ns_id = self._cols.ns_id(namespace)
        keys: list[int] = self._cols.session_keys(ns_id, session_id).tolist() if ns_id >= 0 else []
        now = self._clock.now()
        return [
            Put(msgspec.structs.replace(r, tier=Tier.WARM, updated_at=now), None, Cause.TIER_MOVE)
            for r in self._store.get(keys).values()
            if r.tier == Tier.HOT
        ]

    def _summarise(
        self, namespace: str, session_id: str, records: list[Record], deadline: Deadline
    ) -> list[NewMemory]:
        """The session's summary candidates as writes (encoded), before the gate: of its turns
        that no earlier summary of the session was made from (a session that resumes after its
        end is summarised for what it added)."""
        done = {m for r in records if r.kind == Kind.SUMMARY for m in r.derived_from}
        turns = [
            r
            for r in records
            if not r.obsolete
            and r.text.strip()
            and r.kind != Kind.SUMMARY
            and r.memory_id not in done
        ]
        if not turns or self._encode is None or self._summariser is None:
            return []
        ids = {r.key: r.memory_id for r in turns}
        cands = self._summariser.summarise(
            [Passage(r.key, r.text, r.speaker, r.created_at) for r in turns],
            self._s.lifecycle.session_end.sentences,
            "session",
        )
        if not cands:
            return []
        deadline.check("the session's summary")
        vectors = self._encode([c.text for c in cands])
        at = {r.key: r.created_at for r in turns}
        items = [
            NewMemory(
                record=Record(
                    memory_id="",
                    namespace=namespace,
                    kind=Kind.SUMMARY,
                    session_id=session_id,
                    text=c.text,
                    derived_from=tuple(ids[k] for k in c.derived_from if k in ids),
                ),
                vector=v,
                created_at=max((at[k] for k in c.derived_from if k in at), default=None),
            )
            for c, v in zip(cands, vectors, strict=True)
        ]
        return items
