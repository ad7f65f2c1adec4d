"""The ledger's domain: budgets, holds and task state, in integer micro-units."""

from __future__ import annotations

import enum

import msgspec


class SpendKind(enum.IntEnum):
    UNSPECIFIED = 0
    MODEL_INPUT_TOKENS = 1
    MODEL_OUTPUT_TOKENS = 2
    TOOL_CALL = 3
    MEMORY = 4  # embedding, retrieval and storage: pocketd's own work


class Failover(enum.IntEnum):
    UNSPECIFIED = 0
    ESCALATE_HUMAN = 1
    BEST_MEMORY_ANSWER = 2
    SOFT_STOP = 3
    PAUSE = 4


class ToolBudget(msgspec.Struct, frozen=True):
    max_calls: int = 0  # 0: no cap
    cost_per_call_micros: int = 0
    cache_ttl_seconds: int = 0  # 0: its results are not cached
    idempotent: bool = False  # its results may be cached
    optional: bool = False  # turned off at degrade level 3


class Budget(msgspec.Struct, frozen=True):
    total_micros: int
    round_micros: int = 0  # 0: no per-round limit
    max_rounds: int = 0  # 0: no limit
    emergency_ratio: float = 0.2
    warn_at_percent: int = 80
    failover: Failover = Failover.SOFT_STOP
    tools: dict[str, ToolBudget] = msgspec.field(default_factory=dict)

    @property
    def ordinary_micros(self) -> int:
        """What ordinary reservations may use: the total less the emergency share, in integer
        arithmetic (the ratio in parts per million, which is all the API keeps)."""
        ppm = round(self.emergency_ratio * 1_000_000)
        return self.total_micros - self.total_micros * ppm // 1_000_000


class Hold(msgspec.Struct):
    reservation_id: str
    task_id: str
    round: int
    kind: SpendKind
    tool: str
    amount: int
    final: bool
    created_at: float
    expires_at: float
    state: str = "held"  # "held", "committed", "released", "expired"
    actual: int = 0


class HeldSum(msgspec.Struct, frozen=True):
    """The live (held, unexpired) holds of a task, grouped."""

    round: int
    tool: str
    final: bool
    amount: int
    count: int


class Task(msgspec.Struct):
    """A task's durable state; the holds are kept beside it."""

    task_id: str
    namespace: str
    session_id: str
    budget: Budget
    opened_at: float
    state: str = "open"  # "open", "paused", "closed"
    round: int = 0
    spent_by_kind: dict[int, int] = msgspec.field(default_factory=dict)
    commits_by_kind: dict[int, int] = msgspec.field(default_factory=dict)
    spent_by_round: dict[int, int] = msgspec.field(default_factory=dict)
    calls_by_tool: dict[str, int] = msgspec.field(default_factory=dict)
    spent_by_tool: dict[str, int] = msgspec.field(default_factory=dict)
    level: int = 0  # the degrade level reached (it never goes back down by itself)
    # The live holds, summed by "round/tool/final": [amount, count] (kept in step with the
    # hold rows, so a Reserve costs the same however many holds are live).
    held: dict[str, list[int]] = msgspec.field(default_factory=dict)
    warnings: list[str] = msgspec.field(default_factory=list)
    stop_reason: str = ""
    closed_at: float | None = None

    @property
    def spent(self) -> int:
        return sum(self.spent_by_kind.values())

    def live(self) -> list[HeldSum]:
        out = []
        for key, (amount, count) in self.held.items():
            rnd, tool, final = key.split("/", 2)
            out.append(HeldSum(int(rnd), tool, final == "1", amount, count))
        return out

    def add_hold(self, h: Hold, sign: int = 1) -> None:
        """Count a new live hold in `held` (`sign` -1: take one out)."""
        key = f"{h.round}/{h.tool}/{int(h.final)}"
        amount, count = self.held.get(key, (0, 0))
        amount, count = amount + sign * h.amount, count + sign
        if count:
            self.held[key] = [amount, count]
        else:
            self.held.pop(key, None)


class LimitState(msgspec.Struct, frozen=True):
    limit: str  # "total", "ordinary", "round", "rounds", "tool:NAME"
    value: int
    spent: int
    held: int

    @property
    def remaining(self) -> int:
        return max(self.value - self.spent - self.held, 0)


class Status(msgspec.Struct, frozen=True):
    task_id: str
    state: str
    round: int
    limits: list[LimitState]
    level: int
    failover: Failover
    warnings: list[str]
    stop_reason: str
    spent: int
    held: int


class Charge(msgspec.Struct, frozen=True):
    """A spend that already happened, booked under its idempotency key."""

    kind: SpendKind
    amount: int
    tool: str
    key: str
    # Booked once per key (a retry skips it). False: nothing is recorded under the key: new
    # work each time it is charged (pocketd's own), or one entry of a batch keyed as a whole
    # (a Step's reports, `Ledger.open_round(whole=...)`).
    keyed: bool = True


class Charged(msgspec.Struct, frozen=True):
    """The task after a batch of charges: where it lives, its budget and its status."""

    namespace: str
    session_id: str
    budget: Budget
    status: Status


class Reservation(msgspec.Struct, frozen=True):
    reservation_id: str
    amount: int
    expires_at: float
    status: Status


class KindBill(msgspec.Struct, frozen=True):
    kind: SpendKind
    spent: int
    commits: int


class Bill(msgspec.Struct, frozen=True):
    status: Status
    by_kind: list[KindBill]
    by_tool: dict[str, KindBill]
