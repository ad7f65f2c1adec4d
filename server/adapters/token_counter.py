"""Token counts from a real tokenizer (`tokenizers`, the built-in encoder's `tokenizer.json`, or
one the operator supplies), not characters divided by four.

The context builder counts the same texts round after round, so counts are remembered
(`TextMemo`): a count is a pure function of the text.
"""

from __future__ import annotations

from pathlib import Path

from tokenizers import Tokenizer

from server.core.memo import TextMemo


class TokenCounter:
    def __init__(self, tokenizer_json: Path, cache_size: int = 16_384) -> None:
        self._tok = Tokenizer.from_file(str(tokenizer_json))
        self._tok.no_truncation()
        self._tok.no_padding()
        self._memo: TextMemo[int] = TextMemo(self._count, cache_size)

    def count(self, text: str, part: str = "") -> int:
        """Tokens of `text`, without the special tokens a model adds around a sequence;
        remembered in `part`'s own LRU (a tenant's)."""
        return self._memo(text, part=part)

    def cached(self) -> int:
        """How many counts are kept."""
        return len(self._memo)

    def _count(self, text: str) -> int:
        return len(self._tok.encode(text, add_special_tokens=False))
