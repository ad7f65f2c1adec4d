"""The record store's payloads held in memory, so that hits are served without a read of SQLite.

Write-through: every committed change puts its new payload (or drops a forgotten record's).
Read-through: a payload read from SQLite is held only if no change to that record was committed
while it was read (each key keeps the number of the last change that wrote it), so a read racing
a write never leaves the old payload behind, and a bulk import elsewhere does not stop the reads
of other records from being held. At most `capacity` bytes of payloads are held; the least
recently used go first.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping

import numpy as np
import numpy.typing as npt

# What an entry costs beyond its payload's bytes (the key, the ordered dict's node).
OVERHEAD = 120


class RecordCache:
    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._entries: OrderedDict[int, bytes] = OrderedDict()
        self._bytes = 0
        self._changes = 0  # committed changes so far
        # key → the number of the last committed change that wrote it (0: none since start).
        self._written: npt.NDArray[np.int64] = np.zeros(0, np.int64)
        self._lock = threading.Lock()

    @property
    def size_bytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)

    def changes(self) -> int:
        """The count of committed changes: take it before a read of SQLite, give it to `put`."""
        return self._changes

    def get(self, keys: Iterable[int]) -> tuple[dict[int, bytes], list[int]]:
        """The held payloads among `keys` (now the most recently used), and the keys missed."""
        found: dict[int, bytes] = {}
        missed: list[int] = []
        with self._lock:
            for k in keys:
                got = self._entries.get(k)
                if got is None:
                    missed.append(k)
                else:
                    self._entries.move_to_end(k)
                    found[k] = got
        return found, missed

    def put(self, payloads: Mapping[int, bytes], changes: int) -> None:
        """Hold payloads read from SQLite, each unless a change committed after `changes`
        (taken before the read) wrote its record."""
        with self._lock:
            written = self._written
            for k, p in payloads.items():
                if (int(written[k]) if k < len(written) else 0) <= changes:
                    self._set(k, p)
            self._trim()

    def committed(self, written: Mapping[int, bytes | None]) -> None:
        """A committed change: each key's new payload, or None when it was forgotten."""
        with self._lock:
            self._changes += 1
            self._stamp(list(written))
            for k, p in written.items():
                if p is None:
                    old = self._entries.pop(k, None)
                    if old is not None:
                        self._bytes -= len(old) + OVERHEAD
                else:
                    self._set(k, p)
            self._trim()

    def _stamp(self, keys: list[int]) -> None:
        if not keys:
            return
        top = max(keys) + 1
        if top > len(self._written):
            grown = np.zeros(max(top, 2 * len(self._written), 1024), np.int64)
            grown[: len(self._written)] = self._written
            self._written = grown
        self._written[keys] = self._changes

    def _set(self, key: int, payload: bytes) -> None:
        if self._capacity <= 0:
            return
        old = self._entries.get(key)
        if old is not None:
            self._bytes -= len(old) + OVERHEAD
        self._entries[key] = payload
        self._entries.move_to_end(key)
        self._bytes += len(payload) + OVERHEAD

    def _trim(self) -> None:
        while self._bytes > self._capacity and self._entries:
            _, p = self._entries.popitem(last=False)
            self._bytes -= len(p) + OVERHEAD
