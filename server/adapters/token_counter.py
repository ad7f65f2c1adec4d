"""Token counts from a real tokenizer (`tokenizers`, the built-in encoder's `tokenizer.json`, or
one the operator supplies), not characters divided by four."""

from __future__ import annotations

from pathlib import Path

from tokenizers import Tokenizer


class TokenCounter:
    def __init__(self, tokenizer_json: Path) -> None:
        self._tok = Tokenizer.from_file(str(tokenizer_json))
        self._tok.no_truncation()
        self._tok.no_padding()

    def count(self, text: str) -> int:
        """Tokens of `text`, without the special tokens a model adds around a sequence."""
        return len(self._tok.encode(text, add_special_tokens=False).ids)
