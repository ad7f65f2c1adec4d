"""The maintenance thread (server/core/memory/state/maintenance.py): each job runs on every tick in
order, a failing job is logged and retried without stopping the others, and `stop` runs every
job once more after the thread has ended."""

from __future__ import annotations

import threading

import pytest

from server.core.memory.state.maintenance import Maintenance


def wait_for(cond: threading.Event, seconds: float = 30.0) -> None:
    assert cond.wait(seconds), "the maintenance thread did not get there in time"


def test_jobs_run_in_order_on_each_tick_and_a_failing_one_does_not_stop_the_rest(
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls: list[str] = []
    three_ticks = threading.Event()

    def first() -> None:
        calls.append("first")

    def failing() -> None:
        calls.append("failing")
        raise RuntimeError("disk full")

    def last() -> None:
        calls.append("last")
        if calls.count("last") >= 3:
            three_ticks.set()

    m = Maintenance([("first", first), ("failing", failing), ("last", last)], 0.01)
    m.start()
    wait_for(three_ticks)
    m.stop()
    ticks = len(calls) // 3
    assert ticks >= 4  # three on the thread, and one more at stop
    assert calls == ["first", "failing", "last"] * ticks
    assert "maintenance job 'failing' failed" in caplog.text
    assert "disk full" in caplog.text


def test_stop_runs_every_job_once_more_after_the_thread_has_ended() -> None:
    seen: list[tuple[str, bool]] = []
    m = Maintenance([("job", lambda: seen.append((threading.current_thread().name, True)))], 3600)
    m.start()
    m.stop()
    assert seen == [(threading.current_thread().name, True)]
    assert m._thread is not None and not m._thread.is_alive()


def test_stop_without_start_still_runs_the_jobs() -> None:
    ran = threading.Event()
    Maintenance([("job", ran.set)], 3600).stop()
    assert ran.is_set()
