"""One maintenance run, and the thread that runs it every interval.

A run ends the idle sessions, deletes what expired, compresses the topics past the threshold and
moves the warm memories of low retention to cold, in that order (a topic is summarised before its
memories drift to cold one by one). One run at a time: a `Maintain` call made during a run waits
for it, then runs. A run is journalled (`MaintenanceJournal`): each step is one or more whole
changes, so a run a crash interrupted has applied whole steps only, and the next start-up runs
it again to the end (every step is idempotent: what moved does not move again).
"""

from __future__ import annotations

import logging
import random
import threading
import time

from server.core.clock import Clock
from server.core.deadline import Deadline, no_deadline
from server.core.memory.lifecycle.compress import Compressor
from server.core.memory.lifecycle.retention import Retention
from server.core.memory.lifecycle.session_end import SessionEnder
from server.core.memory.model import MaintainReport
from server.core.memory.ports import MaintenanceJournal, MetadataColumns
from server.core.priority import run_below_readers
from server.core.settings import MaintenanceSettings

log = logging.getLogger(__name__)


class MemoryJournal:
    """A journal that forgets at exit (tests, and engines without a data directory)."""

    def __init__(self) -> None:
        self._pending: str | None = None

    def begin(self, namespace: str) -> None:
        self._pending = namespace

    def end(self) -> None:
        self._pending = None

    def pending(self) -> str | None:
        return self._pending


class Maintainer:
    def __init__(
        self,
        sessions: SessionEnder,
        retention: Retention,
        compressor: Compressor,
        columns: MetadataColumns,
        journal: MaintenanceJournal,
        clock: Clock,
    ) -> None:
        self._sessions = sessions
        self._retention = retention
        self._compressor = compressor
        self._cols = columns
        self._journal = journal
        self._clock = clock
        self._lock = threading.Lock()
        self._resumed = 0

    def resume(self) -> bool:
        """Finish a run that a crash interrupted (at start-up); True when there was one."""
        pending = self._journal.pending()
        if pending is None:
            return False
        log.warning("finishing the maintenance run a stop interrupted (%s)", pending or "all")
        self.run(pending)
        self._resumed = 1
        return True

    def run(self, namespace: str = "", deadline: Deadline | None = None) -> MaintainReport:
        """One run over `namespace` ("" : every one)."""
        deadline = deadline or no_deadline()
        with self._lock:
            t0 = time.perf_counter()
            resumed, self._resumed = self._resumed, 0
            self._journal.begin(namespace)
            ended, to_warm, superseded = self._sessions.expire(deadline, namespace)
            if namespace:
                ns = self._cols.ns_id(namespace)
                ns_ids = [ns] if ns >= 0 else []
            else:
                ns_ids = sorted(self._cols.namespaces().values())
            expired = topics = compressed = to_cold = 0
            for ns_id in ns_ids:
                expired += self._retention.expire(ns_id, deadline)
                t, n = self._compressor.run(ns_id, deadline)
                topics, compressed = topics + t, compressed + n
                to_cold += self._retention.demote(ns_id, deadline)
            self._journal.end()
            report = MaintainReport(
                sessions_ended=ended,
                moved_to_warm=to_warm,
                moved_to_cold=to_cold,
                topics_compressed=topics,
                compressed_records=compressed,
                expired=expired,
                superseded=superseded,
                resumed=resumed,
                took_micros=int((time.perf_counter() - t0) * 1e6),
            )
        log.info("maintenance: %s", report)
        return report


class LifecycleSchedule:
    """Runs maintenance every `interval_seconds`, stretched or shrunk by up to `jitter`."""

    def __init__(
        self, maintainer: Maintainer, settings: MaintenanceSettings, nice: int = 0
    ) -> None:
        self._maintainer = maintainer
        self._s = settings
        self._nice = nice
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._rng = random.Random()

    def next_wait(self) -> float:
        j = self._s.jitter
        return self._s.interval_seconds * (1.0 + self._rng.uniform(-j, j))

    def _run(self) -> None:
        run_below_readers(self._nice)
        while not self._stop.wait(self.next_wait()):
            try:
                self._maintainer.run()
            except Exception:  # the next interval tries again
                log.exception("the maintenance run failed")

    def start(self) -> None:
        if not self._s.enabled:
            return
        self._thread = threading.Thread(target=self._run, name="pocketd-lifecycle", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
