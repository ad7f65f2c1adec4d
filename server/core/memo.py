"""A pure function of a text, remembered: bounded, thread-safe LRUs of its answers, one per
tenant (`PartitionedLRU`, which the caches keyed by text also use).

The agent loop counts tokens of, and summarizes, the same texts round after round (a turn's
sentences, its summary, the goal). A text longer than `KEY_CHARS` is keyed by its digest, so
the memo holds answers, not long observations.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

T = TypeVar("T")
KEY_CHARS = 2048


class TextMemo(Generic[T]):
    """`fn` remembered, in one LRU per partition (`part`: a tenant), so that one tenant can
    neither time nor evict another's entries."""

    def __init__(self, fn: Callable[..., T], size: int) -> None:
        """`fn(text, *args)`: pure; `size`: the answers kept per partition."""
        self._fn = fn
        self._kept: PartitionedLRU[tuple[Hashable, ...], T] = PartitionedLRU(size)
        self._lock = threading.Lock()

    def __call__(self, text: str, *args: Hashable, part: str = "") -> T:
        name: str | bytes = text
        if len(text) > KEY_CHARS:
            name = hashlib.blake2b(text.encode(), digest_size=16).digest()
        key = (name, *args)
        with self._lock:
            hit = self._kept.get(part, key)
        if hit is not None:
            return hit
        got = self._fn(text, *args)
        with self._lock:
            self._kept.put(part, key, got)
        return got

    def __len__(self) -> int:
        with self._lock:
            return len(self._kept)


K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class PartitionedLRU(Generic[K, V]):
    """LRUs side by side, one per partition (a tenant), each of `capacity` entries, so that one
    partition's entries never evict another's. Beyond `partitions` partitions the least recently
    used one is dropped whole. Not locked: its owner holds its own lock around each call."""

    def __init__(self, capacity: int, partitions: int = 256) -> None:
        self._capacity = capacity
        self._max_parts = partitions
        self._parts: OrderedDict[str, OrderedDict[K, V]] = OrderedDict()

    def get(self, part: str, key: K) -> V | None:
        entries = self._parts.get(part)
        if entries is None or key not in entries:
            return None
        self._parts.move_to_end(part)
        entries.move_to_end(key)
        return entries[key]

    def put(self, part: str, key: K, value: V) -> None:
        entries = self._parts.get(part)
        if entries is None:
            entries = self._parts[part] = OrderedDict()
            while len(self._parts) > self._max_parts:
                self._parts.popitem(last=False)
        self._parts.move_to_end(part)
        entries[key] = value
        entries.move_to_end(key)
        while len(entries) > self._capacity:
            entries.popitem(last=False)

    def pop(self, part: str, key: K) -> V | None:
        entries = self._parts.get(part)
        return None if entries is None else entries.pop(key, None)

    def values(self, part: str) -> list[V]:
        return list(self._parts.get(part, {}).values())

    def __len__(self) -> int:
        return sum(len(e) for e in self._parts.values())
