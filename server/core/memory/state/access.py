"""Access statistics (`access_count`, `last_accessed_at`), kept off the read path.

Recall hits and Get count as accesses. A read only adds its keys to an in-memory tally; the
maintenance thread hands the tally to the writer every `memory.access_flush_seconds` (and on
close), which folds it into the records under the writer's lock, in one transaction. The records'
revisions do not move: no index follows access statistics. So the counts a read returns lag the
reads by up to one flush interval, and a crash loses at most one interval of counts.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

# key → (accesses since the last flush, latest access time)
Tally = dict[int, tuple[int, float]]


class AccessRecorder:
    """Counts accesses in memory; `flush` applies them through `apply`."""

    def __init__(self, apply: Callable[[Tally], None]) -> None:
        self._apply = apply
        self._tally: Tally = {}
        self._lock = threading.Lock()

    def hit(self, keys: Iterable[int], now: float) -> None:
        with self._lock:
            for key in keys:
                n, _ = self._tally.get(key, (0, now))
                self._tally[key] = (n + 1, now)

    def flush(self) -> int:
        """Apply what was counted so far; return how many records it touched."""
        with self._lock:
            tally, self._tally = self._tally, {}
        if tally:
            self._apply(tally)
        return len(tally)
