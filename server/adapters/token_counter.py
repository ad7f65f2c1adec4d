"""Token counts from a real tokenizer (`tokenizers`, the built-in encoder's `tokenizer.json`, or
one the operator supplies), not characters divided by four.

The context builder counts the same texts round after round (a turn's sentences, its summary,
the goal), so counts are kept in an LRU: a count is a pure function of the text. A text longer
than `KEY_CHARS` is keyed by its digest, so the cache never holds a long observation itself.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from pathlib import Path

from tokenizers import Tokenizer

KEY_CHARS = 2048


class TokenCounter:
    def __init__(self, tokenizer_json: Path, cache_size: int = 16_384) -> None:
        self._tok = Tokenizer.from_file(str(tokenizer_json))
        self._tok.no_truncation()
        self._tok.no_padding()
        self._size = cache_size
        self._cache: OrderedDict[str | bytes, int] = OrderedDict()
        self._lock = threading.Lock()

    def count(self, text: str) -> int:
        """Tokens of `text`, without the special tokens a model adds around a sequence."""
        key: str | bytes = text
        if len(text) > KEY_CHARS:
            key = hashlib.blake2b(text.encode(), digest_size=16).digest()
        with self._lock:
            n = self._cache.get(key)
            if n is not None:
                self._cache.move_to_end(key)
                return n
        n = len(self._tok.encode(text, add_special_tokens=False))
        with self._lock:
            self._cache[key] = n
            if len(self._cache) > self._size:
                self._cache.popitem(last=False)
        return n

    def cached(self) -> int:
        """How many counts are kept."""
        with self._lock:
            return len(self._cache)
