"""The token counter: real tokenizer counts, kept in a bounded LRU."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from server.adapters.token_counter import CHUNK_CHARS, TokenCounter, additive
from server.core.memo import KEY_CHARS
from tests.conftest import TOKENIZER

SMALL = TokenCounter(TOKENIZER, chunks_kept=8)


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


# Letters, digits, CJK, punctuation, accents and combining marks, every kind of whitespace, and
# the control characters a BertNormalizer deletes (some of which Python's `str.split` cuts at).
_ALPHABET = st.sampled_from(
    list("abcXYZ019-_.,;:!?()[]'\"éÅ\u0301打印机卡纸。，？")
    + list(" \t\n\r\u00a0\u1680\u2003\u2028\u2029\u202f\u205f\u3000")
    + list("\x00\x0b\x0c\x1c\x1f\x85\u200b\ufffd")
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.text(_ALPHABET, max_size=40) | st.text(_ALPHABET, min_size=90), max_size=4),
    st.sampled_from(["", "t1"]),
)
def test_a_text_counts_as_the_tokenizer_counts_all_of_it(texts: list[str], part: str) -> None:
    """The built-in tokenizer is counted chunk by chunk (`additive`): the sum is the count of
    the whole text, for any text (words past WordPiece's 100 characters included), with
    chunks remembered from the texts before it, and when the remembered chunks are full."""
    c = SMALL  # remembers 8 chunks: most texts fill it
    for text in texts:
        assert c.count(text, part) == c.whole(text), repr(text)


def test_long_chunks_are_counted_not_remembered() -> None:
    c = TokenCounter(TOKENIZER)
    long = "x" * (CHUNK_CHARS + 1)
    assert c.count(f"{long} ok") == c.whole(f"{long} ok")
    assert c._chunks.get("", "ok") == 1 and c._chunks.get("", long) is None  # not kept


def test_only_a_tokenizer_that_cuts_at_whitespace_first_is_counted_by_chunks(
    tmp_path: Path,
) -> None:
    assert additive(TOKENIZER)
    doc = json.loads(TOKENIZER.read_text(encoding="utf-8"))
    doc["pre_tokenizer"] = {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always"}
    other = tmp_path / "tokenizer.json"
    other.write_text(json.dumps(doc), encoding="utf-8")
    assert not additive(other)
    doc["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"}]}
    doc["normalizer"] = {"type": "Sequence", "normalizers": [{"type": "NFKC"}]}
    other.write_text(json.dumps(doc), encoding="utf-8")
    assert not additive(other)  # NFKC may join across a space
    doc["normalizer"] = None
    other.write_text(json.dumps(doc), encoding="utf-8")
    assert additive(other)
    doc["added_tokens"] = [*doc.get("added_tokens", []), {"id": 9999, "content": "new york"}]
    other.write_text(json.dumps(doc), encoding="utf-8")
    assert not additive(other)  # an added token across a space
