"""The ledger as a state machine against a plain reference model, with restarts: any sequence of
reserves (ordinary and final, rounds, tools), commits, releases, batches of charges (some of them
retries), expiries, raises and reopens of the SQLite file keeps spent, held and the refusals
exactly as the model says."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import hypothesis.strategies as st
from hypothesis import settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from server.adapters.sqlite_ledger import SqliteLedgerStore
from server.core.errors import FailedPreconditionError, ResourceExhaustedError
from server.core.ledger.ledger import Ledger
from server.core.ledger.model import Budget, Charge, SpendKind, ToolBudget
from server.core.settings import LedgerSettings
from tests.conftest import FakeClock

TOTAL, ROUND, ROUNDS, CALLS, TTL = 800, 400, 8, 2, 50.0


@dataclass
class RefHold:
    round: int
    tool: str
    amount: int
    final: bool
    expires: float
    state: str = "held"


@dataclass
class Ref:
    total: int = TOTAL
    spent: int = 0
    round: int = 0
    by_round: dict[int, int] = field(default_factory=dict)
    calls: int = 0
    holds: dict[str, RefHold] = field(default_factory=dict)

    def live(self, now: float) -> list[RefHold]:
        return [h for h in self.holds.values() if h.state == "held" and h.expires > now]

    def refusal(self, now: float, rnd: int, tool: str, amount: int, final: bool) -> str | None:
        live = self.live(now)
        held = sum(h.amount for h in live)
        if rnd > ROUNDS:
            return "rounds"
        if self.spent + held + amount > self.total:
            return "total"
        ordinary_held = sum(h.amount for h in live if not h.final)
        if (
            not final
            and self.spent + ordinary_held + amount > self.total - self.total * 200_000 // 1_000_000
        ):
            return "total"
        if (
            self.by_round.get(rnd, 0) + sum(h.amount for h in live if h.round == rnd) + amount
            > ROUND
        ):
            return "round"
        if tool and self.calls + sum(1 for h in live if h.tool == tool) + 1 > CALLS:
            return "tool:calc"
        if final and any(h.final for h in live):  # ledger.max_final_holds: 1
            return "final"
        return None


class LedgerMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="ledger-machine-"))
        self.clock = FakeClock()
        self.store = SqliteLedgerStore(self.dir / "ledger.sqlite3")
        self.led = Ledger(self.store, self.clock, LedgerSettings())
        budget = Budget(TOTAL, ROUND, ROUNDS, 0.2, 80, tools={"calc": ToolBudget(max_calls=CALLS)})
        self.led.open_task("t", "ns", "s", budget)
        self.ref = Ref()
        self.n = 0
        self.charged: set[str] = set()

    def key(self) -> str:
        self.n += 1
        return f"k{self.n}"

    @rule(
        forward=st.sampled_from([0, 0, 0, 0, 1, 2]),
        amount=st.integers(1, 300),
        tool=st.booleans(),
        final=st.booleans(),
    )
    def reserve(self, forward: int, amount: int, tool: bool, final: bool) -> None:
        rnd = max(self.ref.round, 1) + forward
        name = "calc" if tool else ""
        kind = SpendKind.TOOL_CALL if tool else SpendKind.MODEL_INPUT_TOKENS
        want = self.ref.refusal(self.clock.now(), rnd, name, amount, final)
        try:
            r = self.led.reserve("t", rnd, kind, amount, name, final, TTL, self.key())
        except ResourceExhaustedError as e:
            assert want == e.limit, (want, e.limit)
            return
        except FailedPreconditionError as e:  # paused by the failover (soft_stop: never)
            raise AssertionError(e) from e
        assert want is None, want
        self.ref.holds[r.reservation_id] = RefHold(rnd, name, amount, final, self.clock.now() + TTL)
        self.ref.round = max(self.ref.round, rnd)

    @precondition(lambda self: any(h.state == "held" for h in self.ref.holds.values()))
    @rule(pick=st.integers(0, 1 << 16), commit=st.booleans(), actual=st.integers(0, 500))
    def settle(self, pick: int, commit: bool, actual: int) -> None:
        # By creation order: the ids are random, so sorting them would not replay.
        held = [k for k, h in self.ref.holds.items() if h.state == "held"]
        rid = held[pick % len(held)]
        h = self.ref.holds[rid]
        if commit:
            self.led.commit("t", rid, actual, self.key())
            h.state = "committed"
            self.ref.spent += actual
            self.ref.by_round[h.round] = self.ref.by_round.get(h.round, 0) + actual
            self.ref.calls += 1 if h.tool else 0
        else:
            self.led.release("t", rid, self.key())
            h.state = "released"

    @rule(
        batch=st.lists(
            st.tuples(st.integers(0, 200), st.booleans(), st.integers(0, 12), st.booleans()),
            max_size=3,
        ),
        forward=st.sampled_from([0, 0, 1]),
    )
    def open_round(self, batch: list[tuple[int, bool, int, bool]], forward: int) -> None:
        """A Step's opening transaction: spends that happened, booked once per key: a key seen
        before (a retried Step) is skipped; an unkeyed charge is booked each time. A key is one
        amount and tool here (the same key for another request is a refusal, tested apart)."""
        rnd = max(self.ref.round, 1) + forward
        items = []
        for amount, tool, key, keyed in batch:
            k = f"c{key}:{amount}:{tool}:{rnd}"
            kind = SpendKind.TOOL_CALL
            items.append(Charge(kind, amount, "calc" if tool else "", k, keyed=keyed))
        self.led.open_round("t", rnd, items)()
        booked = False
        for c in items:
            if c.keyed and c.key in self.charged:
                continue
            if c.keyed:
                self.charged.add(c.key)
            booked = True
            self.ref.spent += c.amount
            self.ref.by_round[rnd] = self.ref.by_round.get(rnd, 0) + c.amount
            self.ref.calls += 1 if c.tool else 0
        if booked:  # the task's round moves with what is booked
            self.ref.round = max(self.ref.round, rnd)

    @rule(own=st.integers(0, 200), loop=st.booleans(), forward=st.sampled_from([0, 0, 1]))
    def close_round(self, own: int, loop: bool, forward: int) -> None:
        """A Step's closing transaction: pocketd's own work, booked each time it runs (a retried
        Step ran it again), and a loop's step down, once per round's key: neither is refused,
        and a step down moves only the ladder (under soft_stop, no refusal follows from it)."""
        rnd = max(self.ref.round, 1) + forward
        down = ("the same action 3 times in a row", f"#step:{rnd}:loop") if loop else None
        before = self.led.status("t").level
        s = self.led.close_round("t", rnd, own, down)
        assert s.level >= before
        if down is not None and before < 4 and down[1] not in self.charged:
            assert s.level >= before + 1  # stepped down (and perhaps climbed too)
        if down is not None:
            self.charged.add(down[1])
        if own:
            self.ref.spent += own
            self.ref.by_round[rnd] = self.ref.by_round.get(rnd, 0) + own
            self.ref.round = max(self.ref.round, rnd)

    @rule(seconds=st.sampled_from([1.0, 30.0, 60.0]))
    def time_passes(self, seconds: float) -> None:
        self.clock.advance(seconds)

    @rule(add=st.integers(1, 500))
    def raise_budget(self, add: int) -> None:
        self.led.raise_budget("t", add, self.key())
        self.ref.total += add

    @rule()
    def restart(self) -> None:
        self.store.close()
        self.store = SqliteLedgerStore(self.dir / "ledger.sqlite3")
        self.led = Ledger(self.store, self.clock, LedgerSettings())

    @invariant()
    def balances_agree(self) -> None:
        s = self.led.status("t")
        now = self.clock.now()
        assert s.spent == self.ref.spent
        assert s.round == self.ref.round
        assert s.held == sum(h.amount for h in self.ref.live(now))
        ordinary = next(x for x in s.limits if x.limit == "ordinary")
        held_ordinary = sum(h.amount for h in self.ref.live(now) if not h.final)
        assert ordinary.held == held_ordinary

    def teardown(self) -> None:
        try:
            self.store.close()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


LedgerMachine.TestCase.settings = settings(max_examples=100, stateful_step_count=40)
TestLedgerMachine = LedgerMachine.TestCase
