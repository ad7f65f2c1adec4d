"""Fakes to run `AgentLoop.step` without a server: a ledger store in memory that counts its
transactions, a memory engine over a list of records, and a token counter by words."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import msgspec
import numpy as np

from server.core.agent.said import Said, SaidHead, features, fit
from server.core.agent.step import AgentLoop, tier_settings
from server.core.agent.tiers import TierRouter
from server.core.agent.toolcache import ToolCache
from server.core.deadline import Deadline
from server.core.errors import UnavailableError
from server.core.ledger.ledger import Ledger
from server.core.ledger.model import Budget, Hold, Task
from server.core.memory.acknowledged import Pending
from server.core.memory.model import Hit, RecallQuery, RecallResult, Record, Score, Vector
from server.core.settings import AgentSettings, LedgerSettings
from tests.conftest import FakeClock

T = TypeVar("T")
_task = msgspec.msgpack.Decoder(Task)
_hold = msgspec.msgpack.Decoder(Hold)


@dataclass
class _Tables:
    tasks: dict[str, bytes] = field(default_factory=dict)
    holds: dict[str, bytes] = field(default_factory=dict)
    replies: dict[str, tuple[str, bytes]] = field(default_factory=dict)

    def copy(self) -> _Tables:
        return _Tables(dict(self.tasks), dict(self.holds), dict(self.replies))


class _Tx:
    """A `LedgerTx` over the tables (values are encoded: what a work changes is only what it
    puts back)."""

    def __init__(self, t: _Tables) -> None:
        self._t = t

    def task(self, task_id: str) -> Task | None:
        body = self._t.tasks.get(task_id)
        return None if body is None else _task.decode(body)

    def put_task(self, task: Task) -> None:
        self._t.tasks[task.task_id] = msgspec.msgpack.encode(task)

    def hold(self, reservation_id: str) -> Hold | None:
        body = self._t.holds.get(reservation_id)
        return None if body is None else _hold.decode(body)

    def put_hold(self, hold: Hold) -> None:
        self._t.holds[hold.reservation_id] = msgspec.msgpack.encode(hold)

    def expire(self, task_id: str, now: float) -> list[Hold]:
        gone = []
        for body in list(self._t.holds.values()):
            h = _hold.decode(body)
            if h.task_id == task_id and h.state == "held" and h.expires_at <= now:
                gone.append(h)
                self.put_hold(msgspec.structs.replace(h, state="expired"))
        return gone

    def release_all(self, task_id: str) -> int:
        n = 0
        for body in list(self._t.holds.values()):
            h = _hold.decode(body)
            if h.task_id == task_id and h.state == "held":
                self.put_hold(msgspec.structs.replace(h, state="released"))
                n += 1
        return n

    def reply(self, key: str) -> tuple[str, bytes] | None:
        return self._t.replies.get(key)

    def put_reply(self, key: str, fingerprint: str, answer: bytes) -> None:
        self._t.replies[key] = (fingerprint, answer)


class CountingLedgerStore:
    """A `LedgerStore` in memory, each work atomic (undone if it raises), that counts the
    transactions run (`run` and `start` alike)."""

    def __init__(self) -> None:
        self.tables = _Tables()
        self.transactions = 0

    def run(self, work: Callable[[_Tx], T]) -> T:
        self.transactions += 1
        before = self.tables.copy()
        try:
            return work(_Tx(self.tables))
        except BaseException:
            self.tables = before
            raise

    def start(self, work: Callable[[_Tx], T]) -> Callable[[], T]:
        try:
            out = self.run(work)
        except Exception as e:
            err = e

            def fail() -> T:
                raise err

            return fail
        return lambda: out

    def close(self) -> None:
        pass


class FakeMemory:
    """The memory engine as the loop uses it: a Recall finds the records that share a word with
    its text (or, by vector, every record), of its filter's kinds and with one of its tags, at
    `units` cost units each search. A Recall that settles the namespace first is counted
    (`settled`), and fails UNAVAILABLE while `unavailable` is above 0 (a write failing)."""

    def __init__(self, units: float = 3000.0) -> None:
        self.records: dict[str, list[Record]] = {}
        self.units = units
        self.recalls: list[str] = []  # the query of each Recall by text
        self.acknowledged: list[str] = []  # the ids acknowledged, in order
        self.settled = 0
        self.unavailable = 0
        self.clock = 1_000_000.0  # moves a second at every read, as the engine's would

    def can_encode(self) -> bool:
        return True

    def now(self) -> float:
        self.clock += 1.0
        return self.clock

    def recall(
        self, q: RecallQuery, deadline: Deadline | None = None, *, settle: bool = True
    ) -> RecallResult:
        if settle:
            self.settled += 1
            if self.unavailable:
                self.unavailable -= 1
                raise UnavailableError("a write of this namespace failed")
        held = self.records.get(q.namespace, [])
        kinds, tags = q.filter.kinds, set(q.filter.tags)
        held = [r for r in held if (not kinds or r.kind in kinds)]
        held = [r for r in held if not tags or tags & set(r.tags)]
        if q.vector is not None:
            found = held
        else:
            self.recalls.append(q.text)
            words = set(q.text.lower().split())
            found = [r for r in held if words & set(r.text.lower().split())]
        hits = [Hit(r, Score(0.5, 0.0, 0.5, 1.0, 0.5, True, False)) for r in found[: q.top_k]]
        return RecallResult(hits, 1.0, 0.0, len(hits), 0, 0, cost_units=self.units)

    def cached_vector(self, namespace: str, text: str) -> Vector | None:
        return np.full(4, 0.5, dtype=np.float32)

    def routing_vector(self, q: RecallQuery, deadline: Deadline | None = None) -> Vector | None:
        return np.full(4, 0.5, dtype=np.float32)

    def query_vectors(
        self, namespace: str, texts: list[str], deadline: Deadline | None = None
    ) -> list[Vector]:
        return [np.full(4, 0.5, dtype=np.float32) for _ in texts]

    def acknowledge(self, batch: Sequence[Pending]) -> None:
        """Written at once (the engine's intake is tested on its own)."""
        for p in batch:
            rec = p.record
            if not rec.created_at:  # the writer's clock, as the engine's would
                rec = msgspec.structs.replace(rec, created_at=self.now())
            self.records.setdefault(rec.namespace, []).append(rec)
            self.acknowledged.append(p.record.memory_id)


def words(text: str, part: str = "") -> int:
    """Tokens as words (at least one per text)."""
    return max(len(text.split()), 1)


def recall_cost(units: float, settings: AgentSettings, searches: int = 2) -> int:
    """What one recall is charged (`Recaller`): two searches of `units` cost units each, the
    query's and the user's profile (the fake always has the query's vector); one for the
    earlier tasks' outcomes (`searches=1`)."""
    return math.ceil(searches * units * settings.recall_micros_per_kilounit / 1000)


def said_head() -> SaidHead:
    """A head that reads by words alone (the fake's vectors are all alike): "prefer" and
    "always" are preferences, "my … is" a fact."""
    texts = [
        "I prefer email only", "always call me", "I prefer chat", "always use SMS please",
        "my birthday is in May", "my dog is called Rex", "my office is in Berlin",
        "what is the weather", "help me", "ship the parcel", "thanks a lot", "it is broken",
    ]  # fmt: skip
    labels = [Said.PREFERENCE] * 4 + [Said.FACT] * 3 + [Said.OTHER] * 5
    vectors = np.full((len(texts), 4), 0.5, dtype=np.float32)
    return fit(features(texts, vectors), labels, "fake")


@dataclass
class Rig:
    store: CountingLedgerStore
    ledger: Ledger
    memory: FakeMemory
    loop: AgentLoop
    settings: AgentSettings

    def fail_first_close(self) -> None:
        """The ledger's next closing transaction fails UNAVAILABLE (once); later ones commit."""
        real = self.ledger.close_round
        calls: list[int] = []

        def once(*args: object) -> object:
            calls.append(1)
            if len(calls) == 1:
                raise UnavailableError("the ledger did not answer")
            return real(*args)  # type: ignore[arg-type]

        self.ledger.close_round = once  # type: ignore[method-assign,assignment]

    def counted(self, step: Callable[[], T]) -> tuple[T, int]:
        """What `step` returns, and how many ledger transactions it ran."""
        before = self.store.transactions
        out = step()
        return out, self.store.transactions - before


def rig(
    budget: Budget | None = None,
    settings: AgentSettings | None = None,
    memory: FakeMemory | None = None,
) -> Rig:
    """An agent loop on fakes, with task "t" open in namespace "ns" under `budget` (None: a
    million micros)."""
    a = settings or AgentSettings()
    clock = FakeClock()
    store = CountingLedgerStore()
    ledger = Ledger(store, clock, LedgerSettings())
    mem = memory or FakeMemory()
    loop = AgentLoop(
        a,
        ledger,
        mem,
        TierRouter(tier_settings(a), clock),
        ToolCache(clock),
        words,
        said_head(),
    )
    ledger.open_task("t", "ns", "s", budget or Budget(total_micros=1_000_000))
    return Rig(store, ledger, mem, loop, a)
