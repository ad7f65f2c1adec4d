"""The ledger stays bounded (issue 17): a task's warnings and so every stored reply, the
replies table (pruned past `ledger.reply_ttl_seconds`), the sums that charges which cannot be
refused keep adding to, and the final answer's reservations."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from server.adapters.sqlite_ledger import SqliteLedgerStore
from server.core.errors import ResourceExhaustedError
from server.core.ledger.ledger import MAX_MICROS, MAX_WARNINGS, Ledger
from server.core.ledger.model import Budget, Charge, SpendKind
from server.core.settings import LedgerSettings
from tests.conftest import FakeClock

M = SpendKind.MODEL_INPUT_TOKENS


def open_ledger(tmp: Path, clock: FakeClock, ttl: float = 86_400.0) -> Ledger:
    return Ledger(SqliteLedgerStore(tmp / "ledger.sqlite3", ttl), clock, LedgerSettings())


def test_warnings_and_replies_stay_small_however_many_overruns(
    tmp_path: Path, clock: FakeClock
) -> None:
    led = open_ledger(tmp_path, clock)
    led.open_task("t", "ns", "s", Budget(total_micros=10**12, emergency_ratio=0.0))
    for i in range(300):  # every commit costs more than it held: one warning each
        r = led.reserve("t", 1, M, 1, "", False, 60, f"r{i}")
        s = led.commit("t", r.reservation_id, 5, f"c{i}")
    assert len(s.warnings) == MAX_WARNINGS
    assert s.warnings[-1].endswith("4 more than it held")
    db = sqlite3.connect(tmp_path / "ledger.sqlite3")
    biggest = db.execute("SELECT max(length(answer)) FROM replies").fetchone()[0]
    assert biggest < 4096  # each reply holds at most MAX_WARNINGS warnings, not all of them


def test_replies_older_than_their_ttl_are_pruned(
    tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    led = open_ledger(tmp_path, clock, ttl=60.0)
    led.open_task("t", "ns", "s", Budget(total_micros=10**6))
    led.reserve("t", 1, M, 1, "", False, 60, "old")
    import server.adapters.sqlite_ledger as sl

    later = sl.time.time() + 3600.0
    monkeypatch.setattr(sl.time, "time", lambda: later)
    led._store._pruned = 0.0  # type: ignore[attr-defined]  # due for its prune
    led.reserve("t", 1, M, 1, "", False, 60, "new")
    db = sqlite3.connect(tmp_path / "ledger.sqlite3")
    keys = {k.split("\0")[1] for (k,) in db.execute("SELECT key FROM replies")}
    assert keys == {"new"}


def test_charges_past_a_64_bit_integer_saturate(tmp_path: Path, clock: FakeClock) -> None:
    led = open_ledger(tmp_path, clock)
    led.open_task("t", "ns", "s", Budget(total_micros=10**6))
    charges = [Charge(M, MAX_MICROS, "", "", keyed=False)] * 20_000  # 2e19 micros in all
    led.open_round("t", 1, charges)()
    status = led.open_round("t", 1, [Charge(M, 1, "", "", keyed=False)])().status  # still writable
    assert status.spent < 2**63 and status.level == 4


def test_one_final_answer_holds_the_emergency_share(tmp_path: Path, clock: FakeClock) -> None:
    led = open_ledger(tmp_path, clock)
    led.open_task("t", "ns", "s", Budget(total_micros=1000, emergency_ratio=0.5))
    first = led.reserve("t", 1, M, 10, "", True, 60, "f1")
    with pytest.raises(ResourceExhaustedError) as info:
        led.reserve("t", 1, M, 10, "", True, 60, "f2")
    assert info.value.limit == "final"
    led.release("t", first.reservation_id, "rel")
    assert led.reserve("t", 2, M, 10, "", True, 60, "f3").amount == 10  # once it is released
