"""The budget ledger (server/core/ledger/ledger.py) on its real SQLite store: every limit and its
QuotaFailure subject, the emergency share, expiry, idempotency, the degrade ladder and pause,
concurrent reservations, and a reopen."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from server.adapters.sqlite_ledger import SqliteLedgerStore
from server.core.errors import FailedPreconditionError, NotFoundError, ResourceExhaustedError
from server.core.ledger.ledger import Ledger
from server.core.ledger.model import Budget, Charge, Failover, SpendKind, ToolBudget
from server.core.settings import LedgerSettings
from tests.conftest import FakeClock

M = SpendKind.MODEL_INPUT_TOKENS


def ledger(tmp: Path, clock: FakeClock) -> Ledger:
    return Ledger(SqliteLedgerStore(tmp / "ledger.sqlite3"), clock, LedgerSettings())


@pytest.fixture
def led(tmp_path: Path, clock: FakeClock) -> Ledger:
    return ledger(tmp_path, clock)


def budget(**kw: object) -> Budget:
    base: dict[str, object] = {"total_micros": 1000, "emergency_ratio": 0.2}
    base.update(kw)
    return Budget(**base)  # type: ignore[arg-type]


def refused(led: Ledger, *args: object) -> str:
    with pytest.raises(ResourceExhaustedError) as info:
        led.reserve(*args)  # type: ignore[arg-type]
    return info.value.limit


def test_an_ordinary_reservation_leaves_the_emergency_share_to_the_final_answer(
    led: Ledger,
) -> None:
    led.open_task("t", "ns", "s", budget())
    r = led.reserve("t", 1, M, 800, "", False, 60, "k1")  # the ordinary budget: 800
    assert r.status.spent == 0 and r.status.held == 800
    assert refused(led, "t", 1, M, 1, "", False, 60, "k2") == "total"
    final = led.reserve("t", 1, M, 200, "", True, 60, "k3")  # the emergency share
    assert final.amount == 200
    assert refused(led, "t", 1, M, 1, "", True, 60, "k4") == "total"


def test_round_rounds_and_tool_caps_each_name_their_limit(led: Ledger) -> None:
    tools = {"search": ToolBudget(max_calls=2, cost_per_call_micros=10)}
    led.open_task("t", "ns", "s", budget(round_micros=100, max_rounds=3, tools=tools))
    led.reserve("t", 1, M, 90, "", False, 60, "a")
    assert refused(led, "t", 1, M, 20, "", False, 60, "b") == "round"
    led.reserve("t", 2, M, 20, "", False, 60, "c")  # a new round has its own limit
    assert refused(led, "t", 4, M, 1, "", False, 60, "d") == "rounds"
    one = led.reserve("t", 2, SpendKind.TOOL_CALL, 0, "search", False, 60, "e")
    assert one.amount == 10  # the tool's price when no estimate is given
    led.commit("t", one.reservation_id, 10, "f")
    led.reserve("t", 2, SpendKind.TOOL_CALL, 0, "search", False, 60, "g")
    assert refused(led, "t", 2, SpendKind.TOOL_CALL, 0, "search", False, 60, "h") == "tool:search"
    with pytest.raises(FailedPreconditionError, match="behind"):
        led.reserve("t", 1, M, 1, "", False, 60, "i")


def test_commit_release_and_expiry(led: Ledger, clock: FakeClock) -> None:
    led.open_task("t", "ns", "s", budget())
    a = led.reserve("t", 1, M, 300, "", False, 60, "a")
    b = led.reserve("t", 1, M, 300, "", False, 60, "b")
    s = led.commit("t", a.reservation_id, 250, "c")
    assert (s.spent, s.held) == (250, 300)
    s = led.release("t", b.reservation_id, "d")
    assert (s.spent, s.held) == (250, 0)
    with pytest.raises(FailedPreconditionError, match="already released"):
        led.commit("t", b.reservation_id, 1, "e")
    c = led.reserve("t", 1, M, 500, "", False, 60, "f")
    assert refused(led, "t", 1, M, 100, "", False, 60, "g") == "total"
    clock.advance(61)  # the hold expired: it no longer counts
    assert led.status("t").held == 0
    led.reserve("t", 1, M, 500, "", False, 60, "h")
    s = led.commit("t", c.reservation_id, 10, "i")  # late, but the money was spent
    assert s.spent == 260 and any("after it expired" in w for w in s.warnings)
    with pytest.raises(NotFoundError):
        led.commit("t", "r-nope", 1, "j")


def test_a_retried_call_changes_nothing_and_a_reused_key_is_refused(led: Ledger) -> None:
    led.open_task("t", "ns", "s", budget())
    a = led.reserve("t", 1, M, 100, "", False, 60, "k")
    again = led.reserve("t", 1, M, 100, "", False, 60, "k")
    assert again.reservation_id == a.reservation_id and led.status("t").held == 100
    led.commit("t", a.reservation_id, 100, "c")
    assert led.commit("t", a.reservation_id, 100, "c").spent == 100  # not charged twice
    with pytest.raises(FailedPreconditionError, match="another request"):
        led.reserve("t", 1, M, 999, "", False, 60, "k")


def test_the_degrade_ladder_climbs_and_pause_waits_for_a_raise(led: Ledger) -> None:
    led.open_task("t", "ns", "s", budget(failover=Failover.PAUSE))  # ordinary: 800
    levels = []
    for i, amount in enumerate((640, 80, 40, 40)):  # 80 %, 90 %, 95 %, 100 % (held)
        r = led.reserve("t", 1, M, amount, "", False, 60, f"r{i}")
        levels.append(r.status.level)
    assert levels == [1, 2, 3, 3]  # held, not spent: the hold may yet be released
    assert refused(led, "t", 1, M, 1, "", False, 60, "over") == "total"  # nothing left: failover
    s = led.status("t")
    assert s.level == 4 and s.state == "paused" and s.stop_reason and len(s.warnings) == 4
    with pytest.raises(FailedPreconditionError, match="paused"):
        led.reserve("t", 1, M, 1, "", False, 60, "x")
    led.reserve("t", 1, M, 100, "", True, 60, "fin")  # the final answer still may
    s = led.raise_budget("t", 1000, "raise")
    assert s.state == "open" and s.level < 4
    led.reserve("t", 1, M, 100, "", False, 60, "y")


def test_a_refused_ordinary_reservation_is_the_failover_once_the_budget_is_nearly_spent(
    led: Ledger,
) -> None:
    led.open_task("t", "ns", "s", budget(failover=Failover.ESCALATE_HUMAN))  # ordinary: 800
    assert refused(led, "t", 1, M, 900, "", False, 60, "a") == "total"
    assert led.status("t").level == 0  # one estimate too large, with room left: only refused
    led.reserve("t", 1, M, 770, "", False, 60, "b")  # 96 %
    assert refused(led, "t", 1, M, 50, "", False, 60, "c") == "total"
    s = led.status("t")
    assert s.level == 4 and s.failover == Failover.ESCALATE_HUMAN and s.state == "open"


def test_releasing_an_expired_hold_leaves_nothing_held(led: Ledger, clock: FakeClock) -> None:
    led.open_task("t", "ns", "s", budget())
    a = led.reserve("t", 1, M, 500, "", False, 10, "a")
    clock.advance(11)
    assert led.release("t", a.reservation_id, "b").held == 0
    assert led.status("t").held == 0  # not counted again by a later call
    led.reserve("t", 1, M, 700, "", False, 10, "c")


def test_amounts_beyond_the_cap_are_refused(led: Ledger) -> None:
    led.open_task("t", "ns", "s", budget(total_micros=10**15 - 1))
    with pytest.raises(FailedPreconditionError, match="would pass"):
        led.raise_budget("t", 2, "r")


def test_concurrent_reservations_never_overspend(led: Ledger) -> None:
    led.open_task("t", "ns", "s", budget(total_micros=100_000))  # ordinary: 80,000
    granted: list[int] = []
    lock = threading.Lock()

    def worker(w: int) -> None:
        for i in range(60):
            try:
                r = led.reserve("t", 1, M, 97, "", False, 600, f"{w}-{i}")
            except ResourceExhaustedError:
                continue
            with lock:
                granted.append(r.amount)

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(granted) == led.status("t").held <= 80_000
    assert sum(granted) > 80_000 - 97  # refused only once it was full


def test_close_bills_by_kind_and_the_ledger_survives_a_reopen(
    tmp_path: Path, clock: FakeClock
) -> None:
    led = ledger(tmp_path, clock)
    led.open_task("t", "ns", "s", budget(tools={"calc": ToolBudget()}))
    a = led.reserve("t", 1, M, 100, "", False, 60, "a")
    led.commit("t", a.reservation_id, 90, "b")
    t = led.reserve("t", 1, SpendKind.TOOL_CALL, 5, "calc", False, 60, "c")
    led.commit("t", t.reservation_id, 5, "d")
    led.reserve("t", 1, M, 100, "", False, 60, "e")  # held at the close: released
    again = ledger(tmp_path, clock)  # a new process on the same file
    assert again.status("t").spent == 95 and again.status("t").held == 100
    bill = again.close_task("t", "close")
    assert [(k.kind, k.spent, k.commits) for k in bill.by_kind] == [
        (M, 90, 1),
        (SpendKind.TOOL_CALL, 5, 1),
    ]
    assert bill.by_tool["calc"].spent == 5 and bill.status.state == "closed"
    assert bill.status.held == 0
    assert again.close_task("t", "close") == bill  # idempotent
    with pytest.raises(FailedPreconditionError, match="closed"):
        again.reserve("t", 1, M, 1, "", False, 60, "f")


def test_charges_book_in_one_transaction_once_per_key(led: Ledger, clock: FakeClock) -> None:
    led.open_task("t", "ns", "s", budget(tools={"calc": ToolBudget(max_calls=1)}))
    hold = led.reserve("t", 1, M, 100, "", False, 60, "r")
    batch = [Charge(M, 300, "", "a"), Charge(SpendKind.TOOL_CALL, 50, "calc", "b")]
    got = led.open_round("t", 2, batch)()
    assert (got.namespace, got.session_id, got.budget.total_micros) == ("ns", "s", 1000)
    assert (got.status.spent, got.status.held, got.status.round) == (350, 100, 2)
    again = led.open_round("t", 2, [*batch, Charge(M, 10, "", "c")])()  # a retry, and one new
    assert again.status.spent == 360
    calc = next(x for x in again.status.limits if x.limit == "tool:calc")
    assert calc.spent == 1  # the tool's call counted once
    with pytest.raises(FailedPreconditionError, match="another request"):
        led.open_round("t", 2, [Charge(M, 5, "", "d"), Charge(M, 999, "", "a")])()
    assert led.status("t").spent == 360  # the whole batch undone, "d" too
    assert led.open_round("t", 2, [Charge(M, 700, "", "e")])().status.level == 4  # charges climb
    clock.advance(61)
    assert led.open_round("t", 2, ())().status.held == 0  # a read drops the expired hold
    assert hold.amount == 100
    led.close_task("t", "close")
    with pytest.raises(FailedPreconditionError, match="closed"):
        led.open_round("t", 3, ())()
    with pytest.raises(NotFoundError):
        led.open_round("nope", 1, ())()


def test_a_final_hold_uses_the_emergency_share_not_the_ordinary_budget(led: Ledger) -> None:
    led.open_task("t", "ns", "s", budget())  # total 1000, ordinary 800
    led.reserve("t", 1, M, 200, "", True, 60, "fin")
    led.reserve("t", 1, M, 800, "", False, 60, "ord")  # still fits: 200 + 800 ≤ 1000
    assert refused(led, "t", 1, M, 1, "", True, 60, "more") == "total"


def test_the_ladder_keeps_its_order_whatever_the_warning_threshold(led: Ledger) -> None:
    led.open_task("t", "ns", "s", budget(warn_at_percent=95))  # cheaper tier from 90 by default
    assert led.reserve("t", 1, M, 736, "", False, 60, "a").status.level == 0  # 92 %
    assert led.reserve("t", 1, M, 24, "", False, 60, "b").status.level == 3  # 95 %: all three


def test_charges_past_the_round_limits_warn_and_fail_over(led: Ledger) -> None:
    led.open_task("t", "ns", "s", budget(max_rounds=3, round_micros=100, total_micros=10_000))
    s = led.open_round("t", 2, [Charge(M, 150, "", "a")])().status
    assert s.level < 4 and any(w.startswith("round 2 spent 150 of its 100") for w in s.warnings)
    s = led.open_round("t", 2, [Charge(M, 10, "", "b")])().status
    assert sum(w.startswith("round 2 spent") for w in s.warnings) == 1  # once per round
    s = led.open_round("t", 4, [Charge(M, 10, "", "c")])().status
    assert s.level == 4 and "beyond the task's 3 rounds" in s.warnings[-1]


def test_unkeyed_charges_are_new_work_each_time_and_money_is_integer(led: Ledger) -> None:
    led.open_task("t", "ns", "s", budget())
    led.open_round("t", 1, [Charge(M, 10, "", "own", keyed=False)])()
    assert led.open_round("t", 1, [Charge(M, 10, "", "own", keyed=False)])().status.spent == 20
    big = Budget(total_micros=10**15 - 1, emergency_ratio=0.1)
    assert big.ordinary_micros == 10**15 - 1 - (10**15 - 1) // 10  # no float rounding


def test_a_refusal_fails_over_only_from_the_tasks_own_tools_off_step(led: Ledger) -> None:
    led.open_task("t", "ns", "s", budget(warn_at_percent=99))  # ordinary 800: steps at 99 %
    led.reserve("t", 1, M, 768, "", False, 60, "a")  # 96 %
    assert refused(led, "t", 1, M, 100, "", False, 60, "b") == "total"
    assert led.status("t").level == 0  # refused, not failed over: 96 % is below its steps


def test_a_batch_retried_as_a_whole_books_nothing_again_even_at_other_prices(led: Ledger) -> None:
    led.open_task("t", "ns", "s", budget())
    whole = ("step:1:k", ("step", 1, (("m", 1000, 0),)))
    led.open_round("t", 1, [Charge(M, 100, "", "k:0")], whole=whole)()
    again = led.open_round(
        "t", 1, [Charge(M, 120, "", "k:0")], whole=whole
    )()  # prices changed since
    assert again.status.spent == 100
    other = ("step:1:k", ("step", 1, (("m", 2000, 0),)))
    with pytest.raises(FailedPreconditionError, match="another request"):
        led.open_round("t", 1, [Charge(M, 200, "", "k:0")], whole=other)()


def test_a_round_opens_with_its_tools_priced_and_closes_once_per_key(led: Ledger) -> None:
    led.open_task("t", "ns", "s", budget(tools={"calc": ToolBudget(cost_per_call_micros=7)}))
    opened = led.open_round("t", 1, [Charge(M, 100, "", "", keyed=False)], ["calc", "calc"])()
    assert opened.status.spent == 114  # the tool calls at the task's own price

    led.close_round("t", 0, 0, ("looping", "#step:0:loop"))  # the key of round 0's loop
    with pytest.raises(FailedPreconditionError, match="another request"):
        led.close_round("t", 1, 50, ("another loop", "#step:0:loop"))
    s = led.status("t")
    assert (s.spent, s.level) == (114, 1)  # refused: nothing of it booked, the work neither
    s = led.close_round("t", 1, 50, ("looping", "#step:1:loop"))
    assert (s.spent, s.level) == (164, 2) and s.warnings[-1] == "cheaper model tier: looping"
    s = led.close_round("t", 1, 50, ("looping", "#step:1:loop"))  # a retried Step
    assert (s.spent, s.level) == (214, 2)  # its work charged again (it ran again), no step down
