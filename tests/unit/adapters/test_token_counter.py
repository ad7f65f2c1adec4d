"""The token counter: real tokenizer counts, kept in a bounded LRU."""

from __future__ import annotations

from server.adapters.token_counter import TokenCounter
from server.core.memo import KEY_CHARS
from tests.conftest import TOKENIZER


def test_counts_are_the_tokenizers_and_the_cache_is_bounded() -> None:
    c = TokenCounter(TOKENIZER, cache_size=3)
    first = c.count("Order 88123 shipped on Monday.")
    assert first > 5 and c.count("Order 88123 shipped on Monday.") == first
    long = "word " * (KEY_CHARS // 2)  # over KEY_CHARS: kept under its digest
    assert c.count(long) == KEY_CHARS // 2
    for text in ("a", "b c", "d e f"):
        c.count(text)
    assert c.cached() == 3
    assert c.count("d e f") == 3 and c.count("") == 0
