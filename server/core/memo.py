"""A pure function of a text, remembered: a bounded, thread-safe LRU of its answers.

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
    def __init__(self, fn: Callable[..., T], size: int) -> None:
        """`fn(text, *args)`: pure; `size`: the answers kept."""
        self._fn = fn
        self._size = size
        self._kept: OrderedDict[tuple[Hashable, ...], T] = OrderedDict()
        self._lock = threading.Lock()

    def __call__(self, text: str, *args: Hashable) -> T:
        name: str | bytes = text
        if len(text) > KEY_CHARS:
            name = hashlib.blake2b(text.encode(), digest_size=16).digest()
        key = (name, *args)
        with self._lock:
            if key in self._kept:
                self._kept.move_to_end(key)
                return self._kept[key]
        got = self._fn(text, *args)
        with self._lock:
            self._kept[key] = got
            if len(self._kept) > self._size:
                self._kept.popitem(last=False)
        return got

    def __len__(self) -> int:
        with self._lock:
            return len(self._kept)
