"""The hot tier's session memory, in the server's process: each session's raw recent turns.

A follower of the revision feed (`HotSessions`, `server.core.memory.ports`): the live records of
tier hot that belong to a session are its turns, and a session's last activity is when one of
them was last written (the clock's time, not the turn's event time: a turn sent late still
keeps its session open). Session end reads it: EndSession, or the maintenance once a session
has been idle for `memory.hot.ttl_seconds` (`idle` is how that expiry is found; nothing here
drops a turn by itself, so no turn is lost before its summary is written).

The record store stays the truth: at start-up `load` fills this from the store's live hot
records (`hot_turns`). The same rules (`turn_of`, `in_order`) serve the Redis backend
(`server.adapters.redis_sessions`), so both read a change the same way.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Sequence

from server.core.clock import Clock
from server.core.memory.changes import Applied
from server.core.memory.model import Record, Tier
from server.core.memory.ports import HotTurn

__all__ = ["HotTurn", "MemoryHotSessions", "changes_of", "hot_turns", "in_order", "turn_of"]

Session = tuple[str, str]  # (namespace, session id)


def turn_of(rec: Record | None) -> HotTurn | None:
    """The hot turn a stored record is, or None: erased, not of tier hot, or of no session."""
    if rec is None or rec.tier != Tier.HOT or not rec.session_id:
        return None
    return HotTurn(
        key=rec.key,
        memory_id=rec.memory_id,
        namespace=rec.namespace,
        session_id=rec.session_id,
        kind=int(rec.kind),
        speaker=rec.speaker,
        text=rec.text,
        at=rec.created_at,
        turn=rec.turn,
    )


def hot_turns(records: Iterable[Record]) -> Iterator[HotTurn]:
    """The hot turns among `records` (the store's live records: what `load` and a resync take)."""
    for rec in records:
        turn = turn_of(rec)
        if turn is not None:
            yield turn


def in_order(turns: Iterable[HotTurn]) -> list[HotTurn]:
    """Turns in their session's order: by position, then event time, then key (ties are rare:
    a turn's position is given by the writer)."""
    return sorted(turns, key=lambda t: (t.turn, t.at, t.key))


def changes_of(applied: Sequence[Applied]) -> Iterator[tuple[int, HotTurn | None]]:
    """Each revision as (key, its turn now or None: the key's turn goes), in order."""
    for a in applied:
        yield a.key, turn_of(a.record)


class MemoryHotSessions:
    """Sessions in dictionaries under one lock: the default backend. A restart loses them; the
    composition root loads them back from the store."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._turns: dict[Session, dict[int, HotTurn]] = {}
        self._active: dict[Session, float] = {}
        self._where: dict[int, Session] = {}  # key -> the session holding its turn

    def follow(self, applied: Sequence[Applied]) -> None:
        now = self._clock.now()
        with self._lock:
            for key, turn in changes_of(applied):
                self._remove(key)
                if turn is not None:
                    self._put(turn)
                    self._active[turn.namespace, turn.session_id] = now

    def _put(self, turn: HotTurn) -> None:
        session = (turn.namespace, turn.session_id)
        self._turns.setdefault(session, {})[turn.key] = turn
        self._where[turn.key] = session

    def _remove(self, key: int) -> None:
        session = self._where.pop(key, None)
        if session is None:
            return
        held = self._turns[session]
        del held[key]
        if not held:  # a session without turns is gone (its activity with it)
            del self._turns[session]
            self._active.pop(session, None)

    def turns(self, namespace: str, session_id: str) -> list[HotTurn]:
        with self._lock:
            return in_order(self._turns.get((namespace, session_id), {}).values())

    def idle(self, before: float) -> list[tuple[str, str]]:
        with self._lock:
            late = [(t, s) for s, t in self._active.items() if t < before]
        return [s for _, s in sorted(late)]

    def sessions(self, namespace: str) -> list[str]:
        with self._lock:
            return sorted(sid for ns, sid in self._turns if ns == namespace)

    def end(self, namespace: str, session_id: str) -> list[HotTurn]:
        session = (namespace, session_id)
        with self._lock:
            held = self._turns.pop(session, {})
            self._active.pop(session, None)
            for key in held:
                del self._where[key]
        return in_order(held.values())

    def load(self, turns: Iterable[HotTurn]) -> None:
        now = self._clock.now()
        with self._lock:
            active = self._active
            self._turns, self._active, self._where = {}, {}, {}
            for turn in turns:
                self._remove(turn.key)  # the same key twice: the last one counts
                self._put(turn)
            for session in self._turns:
                self._active[session] = active.get(session, now)

    def healthy(self) -> None:
        """In the process: always reachable."""

    def close(self) -> None:
        """Nothing to release."""
