"""Thread priorities (server/core/priority.py): the threads that write in bulk and index run
niced."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import pytest

from server.api.calls import Lane, WorkerPools
from server.core.priority import run_below_readers
from tests.conftest import FakeClock, open_engine, wait_for

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="per-thread niceness is Linux's")


def niceness_after(*calls: int) -> int:
    """The niceness of a fresh thread after `run_below_readers` with each of `calls`."""
    out: list[int] = []

    def body() -> None:
        for nice in calls:
            run_below_readers(nice)
        out.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))

    t = threading.Thread(target=body)
    t.start()
    t.join()
    return out[0]


def test_a_thread_is_niced_and_never_raised_back() -> None:
    base = os.getpriority(os.PRIO_PROCESS, 0)
    assert niceness_after(0) == base  # 0 leaves it alone
    assert niceness_after(base + 5) == base + 5
    assert niceness_after(base + 5, base + 3) == base + 5  # at least, never lower
    # The caller's own niceness is untouched.
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == base


def test_the_indexer_and_maintenance_threads_run_niced(tmp_path: Path, clock: FakeClock) -> None:
    base = os.getpriority(os.PRIO_PROCESS, 0)
    eng = open_engine(tmp_path / "nice", None, clock, background_nice=base + 7)
    try:
        names = ("pocketd-indexer", "pocketd-maintenance")

        def niced() -> bool:
            threads = [t for t in threading.enumerate() if t.name in names]
            return len(threads) == 2 and all(
                t.native_id is not None and os.getpriority(os.PRIO_PROCESS, t.native_id) == base + 7
                for t in threads
            )

        wait_for(niced)
    finally:
        eng.close()


def test_only_the_bulk_write_pool_runs_niced() -> None:
    """An import's batches yield the cores; a single Remember runs at a Recall's priority (a
    niced write lane starved under a steady mixed load), and so do the agent calls."""
    base = os.getpriority(os.PRIO_PROCESS, 0)
    pools = WorkerPools(1, 1, write_nice=base + 4)

    def mine() -> int:
        return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    try:
        assert pools.lane(Lane.BULK).submit(mine).result() == base + 4
        for lane in (Lane.READ, Lane.WRITE, Lane.AGENT):
            assert pools.lane(lane).submit(mine).result() == base, lane
    finally:
        pools.shutdown()
