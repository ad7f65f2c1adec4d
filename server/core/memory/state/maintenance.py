"""The maintenance thread: periodic jobs that issue changes through the writer.

Every `memory.access_flush_seconds` it runs each job in turn: the access statistics flush, the
tier move (hot memories past their TTL or over the cap go to warm) and the metadata columns'
checkpoint (saved when due, `checkpoint.Checkpoint.save_if_due`). A failing job is logged and
retried on the next tick; the others still run. `stop` runs every job once more.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence

from server.core.priority import run_below_readers

log = logging.getLogger(__name__)


class Maintenance:
    """Runs `jobs` every `interval_s` in a daemon thread until `stop()`."""

    def __init__(
        self, jobs: Sequence[tuple[str, Callable[[], object]]], interval_s: float, nice: int = 0
    ) -> None:
        self._jobs = list(jobs)
        self._interval = interval_s
        self._nice = nice
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def run_once(self) -> None:
        for name, job in self._jobs:
            try:
                job()
            except Exception:  # keep the others running; the next tick retries
                log.exception("maintenance job %r failed", name)

    def _run(self) -> None:
        run_below_readers(self._nice)
        while not self._stop.wait(self._interval):
            self.run_once()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="pocketd-maintenance", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread, then run every job a last time."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.run_once()
