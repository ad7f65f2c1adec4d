"""When the caller stops waiting: a deadline and a cancel flag, checked between stages of work.

The API makes one per call from the client's deadline (capped by `server.max_call_seconds`) and
cancels it when the client goes away. The engine calls `check(stage)` between stages (encoding
chunks, each partition's search, the keyword channel, before a commit), so work that nobody waits
for stops there instead of holding a worker thread. A write that has committed is never undone:
the last check comes before the commit.
"""

from __future__ import annotations

import math
import threading
import time

from server.core.errors import CallCancelledError, DeadlineExceededError


class Deadline:
    """A monotonic-clock deadline (`math.inf` for none) that can also be cancelled."""

    def __init__(self, seconds: float = math.inf) -> None:
        self._at = time.monotonic() + seconds
        self._cancelled = threading.Event()

    def cancel(self) -> None:
        """The caller is gone: the next `check` raises."""
        self._cancelled.set()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def remaining(self) -> float:
        """Seconds left (may be negative; `math.inf` when there is no deadline)."""
        return self._at - time.monotonic()

    def check(self, stage: str) -> None:
        """Raise if the caller stopped waiting before `stage`."""
        if self._cancelled.is_set():
            raise CallCancelledError(f"the call was cancelled before {stage}")
        if time.monotonic() >= self._at:
            raise DeadlineExceededError(f"the deadline passed before {stage}")


def no_deadline() -> Deadline:
    """A deadline that never passes (engine calls made outside a request: tests, benchmarks)."""
    return Deadline()
