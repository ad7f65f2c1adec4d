"""The maintenance run and its schedule (server/core/memory/lifecycle/run.py): the report counts
what changed; a second run changes nothing; one run at a time; the schedule waits its interval
give or take the jitter; a run that stopped half-way (its journal left begun) is finished at the
next start-up, reported as resumed, with the state a whole run leaves."""

from __future__ import annotations

import sys
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from server.adapters.journal_file import JournalFile
from server.core.deadline import Deadline, no_deadline
from server.core.engine import MemoryEngine
from server.core.memory.lifecycle.retention import Retention
from server.core.memory.lifecycle.run import LifecycleSchedule, Maintainer
from server.core.memory.model import Kind, MaintainReport, Tier
from server.core.settings import MaintenanceSettings
from tests.conftest import FakeClock, wait_for
from tests.unit.memory.lifecycle.lifecycle_kit import (
    MONTH,
    lifecycle_settings,
    maintain,
    records,
)
from tests.unit.memory.lifecycle.test_compress import BILLING, TRAVEL, assert_compressed, write
from tests.unit.memory.lifecycle.test_session_end import ENGLISH, converse
from tests.unit.test_engine import NS, mem


def journal(tmp_path: Path) -> Path:
    """The journal file of the engines `engine_factory` opens (tests.conftest.open_engine)."""
    return tmp_path / "data" / "maintenance.journal"


def census(engine: MemoryEngine) -> tuple[Counter[Tier], Counter[Kind]]:
    recs = records(engine).values()
    return Counter(r.tier for r in recs), Counter(r.kind for r in recs)


def stock(engine: MemoryEngine, clock: FakeClock) -> dict[str, list[str]]:
    """A namespace with something for each step, four months on: a topic of six, a memory past
    its expiry, one of low retention, one kept, and a session idle for an hour."""
    got = {
        "topic": write(engine, BILLING, "billing"),
        "expiring": [
            engine.remember([mem("The old badge reader code is 4471", importance=5,
                                 expires_at=clock.now() + 3 * MONTH)])[0].memory_id
        ],
        "plain": [engine.remember([mem("The lobby plants are watered on Mondays")])[0].memory_id],
        "kept": [engine.remember([mem("Carol is allergic to peanuts", importance=5)])[0].memory_id],
    }  # fmt: skip
    clock.advance(4 * MONTH)
    got["turns"] = converse(engine, clock, "s1", ENGLISH)
    clock.advance(3600)
    return got


def test_the_report_counts_what_changed_and_a_second_run_changes_nothing(
    engine_factory: Callable[..., MemoryEngine], clock: FakeClock
) -> None:
    engine = engine_factory(lifecycle_settings())
    ids = stock(engine, clock)
    tiers0, kinds0 = census(engine)
    report = maintain(engine)
    tiers1, kinds1 = census(engine)
    # Each step once: the session ended, the expired memory erased, the topic compressed, the
    # unused memory archived; the session's turns and summaries are young and stay warm.
    assert (report.sessions_ended, report.moved_to_warm) == (1, len(ids["turns"]))
    assert report.expired == 1
    assert (report.topics_compressed, report.compressed_records) == (1, len(BILLING))
    assert report.moved_to_cold == 1
    assert (report.superseded, report.resumed) == (0, 0) and report.took_micros > 0
    # The counts are what the tiers and kinds show.
    assert tiers0[Tier.HOT] - tiers1[Tier.HOT] == report.moved_to_warm
    assert tiers1[Tier.COLD] - tiers0[Tier.COLD] == report.moved_to_cold + report.compressed_records
    summaries = kinds1[Kind.SUMMARY] - kinds0[Kind.SUMMARY]
    assert sum(tiers0.values()) - report.expired + summaries == sum(tiers1.values())
    recs = records(engine)
    assert ids["expiring"][0] not in recs
    assert recs[ids["plain"][0]].tier == Tier.COLD and recs[ids["kept"][0]].tier == Tier.WARM
    assert {recs[t].tier for t in ids["turns"]} == {Tier.WARM}
    assert_compressed(engine, ids["topic"], "billing")

    again = maintain(engine)
    assert msgspec.structs.replace(again, took_micros=0) == MaintainReport()
    assert census(engine) == (tiers1, kinds1)


def test_a_maintain_call_during_a_run_waits_for_it(
    engine_factory: Callable[..., MemoryEngine], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two threads call maintain; the first is held inside its run (in the journal's begin).
    The second must wait for it: the journal sees begin, end, begin, end, never two runs open."""
    engine = engine_factory(lifecycle_settings())
    write(engine, BILLING, "billing")
    seen: list[tuple[str, str]] = []
    release = threading.Event()
    begin, end = JournalFile.begin, JournalFile.end

    def held_begin(self: JournalFile, namespace: str) -> None:
        seen.append(("begin", threading.current_thread().name))
        if len(seen) == 1:
            assert release.wait(120)
        begin(self, namespace)

    def noted_end(self: JournalFile) -> None:
        seen.append(("end", threading.current_thread().name))
        end(self)

    monkeypatch.setattr(JournalFile, "begin", held_begin)
    monkeypatch.setattr(JournalFile, "end", noted_end)
    reports: dict[str, MaintainReport] = {}

    def run(name: str) -> threading.Thread:
        t = threading.Thread(
            target=lambda: reports.__setitem__(name, engine.maintain(NS, no_deadline())),
            name=name,
        )
        t.start()
        return t

    first = run("first")
    wait_for(lambda: len(seen) == 1)
    second = run("second")

    def waiting(t: threading.Thread) -> bool:
        """Parked on the run's lock (its innermost Python frame is the run itself)."""
        frame = sys._current_frames().get(t.ident or -1)
        return frame is not None and frame.f_code is Maintainer.run.__code__

    wait_for(lambda: waiting(second) or not second.is_alive())
    release.set()
    first.join(120)
    second.join(120)
    assert seen == [("begin", "first"), ("end", "first"), ("begin", "second"), ("end", "second")]
    # The first run did the work; the second found it done.
    assert (reports["first"].topics_compressed, reports["second"].topics_compressed) == (1, 0)


def test_the_schedule_waits_the_interval_give_or_take_the_jitter(
    engine_factory: Callable[..., MemoryEngine],
) -> None:
    maintainer = engine_factory(lifecycle_settings()).lifecycle.maintainer
    s = MaintenanceSettings(interval_seconds=600.0, jitter=0.2)
    waits = [LifecycleSchedule(maintainer, s).next_wait() for _ in range(2000)]
    assert all(480.0 <= w <= 720.0 for w in waits)
    # Jittered, both ways, over the whole range: not a constant, not one side.
    assert min(waits) < 500.0 and max(waits) > 700.0
    assert 590.0 < sum(waits) / len(waits) < 610.0
    still = LifecycleSchedule(maintainer, MaintenanceSettings(interval_seconds=600.0, jitter=0.0))
    assert {still.next_wait() for _ in range(100)} == {600.0}


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=200)
@given(
    interval=st.floats(min_value=0.001, max_value=604_800.0),
    jitter=st.floats(min_value=0.0, max_value=0.5),
)
def test_every_wait_lies_within_the_jitter(
    engine: MemoryEngine, interval: float, jitter: float
) -> None:
    schedule = LifecycleSchedule(
        engine.lifecycle.maintainer,
        MaintenanceSettings(interval_seconds=interval, jitter=jitter),
    )
    for _ in range(20):
        w = schedule.next_wait()
        assert interval * (1 - jitter) * (1 - 1e-12) <= w <= interval * (1 + jitter) * (1 + 1e-12)
        assert w > 0


def test_the_schedule_runs_maintenance_on_its_own_and_stops(
    engine_factory: Callable[..., MemoryEngine],
) -> None:
    engine = engine_factory(lifecycle_settings())
    billing = write(engine, BILLING, "billing")
    maintainer = engine.lifecycle.maintainer
    off = LifecycleSchedule(maintainer, MaintenanceSettings(enabled=False, interval_seconds=0.01))
    off.start()
    off.stop()
    assert all(r.tier == Tier.WARM for r in records(engine).values())
    on = LifecycleSchedule(maintainer, MaintenanceSettings(interval_seconds=0.01, jitter=0.5))
    on.start()
    try:
        wait_for(lambda: records(engine)[billing[0]].tier == Tier.COLD)
    finally:
        on.stop()
    assert_compressed(engine, billing, "billing")


class SimulatedCrashError(Exception):
    """Stands for the process dying between two steps of a run."""


def test_a_run_cut_short_after_the_compression_is_finished_at_start_up(
    engine_factory: Callable[..., MemoryEngine],
    clock: FakeClock,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    settings_ = lifecycle_settings()
    engine = engine_factory(settings_)
    billing = write(engine, BILLING, "billing")
    plain = engine.remember([mem("The lobby plants are watered on Mondays")])[0].memory_id
    clock.advance(4 * MONTH)

    def crash(self: Retention, ns_id: int | None, deadline: Deadline) -> int:
        raise SimulatedCrashError

    monkeypatch.setattr(Retention, "demote", crash)
    with pytest.raises(SimulatedCrashError):
        engine.maintain(NS, no_deadline())
    monkeypatch.undo()
    # Half-way: the compression applied (whole), the retention step not yet, the journal begun.
    assert journal(tmp_path).exists()
    assert_compressed(engine, billing, "billing")
    assert records(engine)[plain].tier == Tier.WARM
    engine.close()

    engine = engine_factory(settings_)  # start-up finishes the run
    assert not journal(tmp_path).exists()
    recs = records(engine)
    assert recs[plain].tier == Tier.COLD
    assert_compressed(engine, billing, "billing")  # once: the resumed run compressed no more
    assert [r.kind for r in recs.values()].count(Kind.SUMMARY) == 1
    report = maintain(engine)
    assert report.resumed == 1
    assert (report.topics_compressed, report.moved_to_cold, report.expired) == (0, 0, 0)
    assert maintain(engine).resumed == 0


def test_a_torn_journal_finishes_a_run_over_every_namespace(
    engine_factory: Callable[..., MemoryEngine], tmp_path: Path
) -> None:
    """A crash while the journal was being written leaves it unreadable: the run it began is
    finished over every namespace, since which one it was is lost."""
    settings_ = lifecycle_settings()
    engine = engine_factory(settings_)
    topics = {ns: write(engine, BILLING, "billing", ns) for ns in ("ns-a", "ns-b")}
    travel = write(engine, TRAVEL, "travel")  # five: nothing to do there
    engine.close()
    journal(tmp_path).write_bytes(b'{"namesp')
    engine = engine_factory(settings_)
    assert not journal(tmp_path).exists()
    for ns, ids in topics.items():
        recs = records(engine, ns)
        assert {recs[m].tier for m in ids} == {Tier.COLD}
        assert len({recs[m].compressed_into for m in ids}) == 1
    assert {records(engine)[m].tier for m in travel} == {Tier.WARM}
