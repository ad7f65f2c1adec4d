"""CLIP's tokenizer without torch, `regex` or ftfy: open_clip's ids on a corpus of English,
Chinese, Japanese, Korean, accents (composed and not), emoji, digits of several scripts,
full-width forms, ligatures, HTML entities and long texts (tests/unit/adapters/clip_tokens.json,
computed once by open_clip 3.3.0's own tokenizer), truncation that keeps the end token, the
reduced vocabulary of a small model, and the laws of a byte-level BPE."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from server.adapters.clip_tokenizer import ClipTokenizer, clean, fix_text
from tests.conftest import ROOT

VOCABULARY = ROOT / "models" / "clip-bpe" / "bpe_simple_vocab_16e6.txt.gz"
EXPECTED = json.loads((Path(__file__).parent / "clip_tokens.json").read_text())


@functools.cache
def tokenizer() -> ClipTokenizer:
    """One tokenizer for the module (Hypothesis runs a test's body many times)."""
    return ClipTokenizer(VOCABULARY)


@pytest.fixture
def tok() -> ClipTokenizer:
    return tokenizer()


def test_open_clips_ids_for_the_corpus(tok: ClipTokenizer) -> None:
    texts = [c["text"] for c in EXPECTED["cases"]]
    rows = tok(texts, EXPECTED["context_length"])
    assert rows.shape == (len(texts), 77) and rows.dtype == np.int64
    for text, row, case in zip(texts, rows, EXPECTED["cases"], strict=True):
        ids = case["ids"]
        assert row[: len(ids)].tolist() == ids, text
        assert not row[len(ids) :].any(), f"{text!r}: zeros after the end token"


def test_mojibake_is_tokenized_as_written(tok: ClipTokenizer) -> None:
    """The documented difference: ftfy's repair of text decoded with the wrong code page is
    left out, so such text keeps its characters."""
    for case in EXPECTED["differs"]:
        row = tok([case["text"]])[0]
        assert row[: len(case["here"])].tolist() == case["here"]
        assert row[: len(case["open_clip"])].tolist() != case["open_clip"]


def test_a_long_text_is_cut_with_the_end_token_last(tok: ClipTokenizer) -> None:
    ids = tok.encode("one two three four five six seven")
    assert len(ids) == 7
    row = tok(["one two three four five six seven"], context_length=5)[0]
    assert row.tolist() == [tok.start, *ids[:3], tok.end]
    assert tok([""], context_length=4)[0].tolist() == [tok.start, tok.end, 0, 0]


def test_a_reduced_vocabulary_drops_the_words_it_lacks(tok: ClipTokenizer) -> None:
    red, circle = tok.encode("red circle")
    keep = {tok.start: 0, red: 1, circle: 2, tok.end: 3}
    row = tok(["a big red circle, drawn"], context_length=6, keep=keep)[0]
    assert row.tolist() == [0, 1, 2, 3, 0, 0]


def test_the_clean_up_keeps_fullwidth_codes_and_chinese_searchable() -> None:
    assert clean("  Ｅ１２３４：ＤＩＳＫ\u3000ｑｕｏｔａ\t\n ") == "e1234:disk quota"
    assert clean("\u201cIt\u2019s\u201d &amp;amp; ﬁne") == '"it\'s" & fine'
    assert clean("退款被拒\u200b") == "退款被拒\u200b"  # a zero-width space is not whitespace


@given(st.text(max_size=40))
def test_the_bpe_loses_nothing_but_whitespace(text: str) -> None:
    tok = tokenizer()
    ids = tok.encode(text)
    assert all(0 <= i < len(tok.encoder) for i in ids)
    back = tok.decode(ids)
    assert back.replace(" ", "") == clean(text).replace(" ", "").replace("\u0345", "")


@given(st.text(max_size=40))
def test_fix_text_is_a_fixed_point(text: str) -> None:
    once = fix_text(text)
    assert fix_text(once) == once


@given(st.lists(st.text(max_size=30), min_size=1, max_size=5), st.integers(2, 20))
def test_every_row_is_framed(texts: list[str], n: int) -> None:
    tok = tokenizer()
    rows = tok(texts, context_length=n)
    for text, row in zip(texts, rows, strict=True):
        ids = [tok.start, *tok.encode(text), tok.end]
        if len(ids) <= n:
            assert row.tolist() == ids + [0] * (n - len(ids))
        else:
            assert row.tolist() == [*ids[: n - 1], tok.end]
