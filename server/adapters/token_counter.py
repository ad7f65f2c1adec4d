"""Token counts from a real tokenizer (`tokenizers`, the built-in encoder's `tokenizer.json`, or
one the operator supplies), not characters divided by four.

The context builder counts the same texts round after round, so counts are remembered
(`TextMemo`): a count is a pure function of the text.

A new text is mostly old words (a round's summary, the prompt built of sections counted
before): where the tokenizer cuts a text at whitespace before anything else reads it (its
normalizer works character by character and its pre-tokenizer splits at whitespace, as the
built-in WordPiece's does), a text's count is the sum of its whitespace-separated chunks'
counts, and each chunk's count is remembered (`additive`). The built-in tokenizer takes 3 ms for
a 7,000-character prompt; the sum of remembered chunks about a sixth of that. Any other tokenizer
counts each text whole.
"""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path

from tokenizers import Tokenizer

from server.core.memo import PartitionedLRU, TextMemo

# Normalizers that map one character at a time, and pre-tokenizers that split at whitespace
# first: with these, no token spans a whitespace run.
PER_CHARACTER = frozenset({"BertNormalizer", "Lowercase", "Strip", "StripAccents"})
SPLITS_AT_WHITESPACE = frozenset({"BertPreTokenizer", "Whitespace", "WhitespaceSplit"})
# Whitespace as such a tokenizer reads it: Unicode's White_Space without the control characters
# (a BertNormalizer deletes those: "a\x1cb" is one word to it).
_CHUNKS = re.compile(r"[ \t\n\r\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+")
# The control characters Python's `str.split` takes for whitespace (a text without them is cut
# by `str.split`, five times faster than by `_CHUNKS`).
_WHITESPACE = re.compile(r"\s")
_SPLIT_CONTROLS = re.compile("[\x0b\x0c\x1c-\x1f\x85]")
CHUNKS_KEPT = 65_536  # chunk counts remembered per tenant
CHUNK_CHARS = 64  # a longer chunk (a digest, a base64 run) is counted, not remembered
PARTS_KEPT = 256  # tenants whose chunk counts are kept


def additive(tokenizer_json: Path) -> bool:
    """Whether a text's count under this tokenizer is the sum of its whitespace chunks' (an
    added token holding whitespace would match across two chunks)."""
    doc = json.loads(tokenizer_json.read_text(encoding="utf-8"))
    if any(_WHITESPACE.search(str(t.get("content", ""))) for t in doc.get("added_tokens") or []):
        return False
    steps = [doc.get("normalizer"), doc.get("pre_tokenizer")]
    kinds: list[set[str]] = []
    for step in steps:
        if step is None:
            kinds.append(set())
        elif step.get("type") == "Sequence":
            inner = step.get("normalizers") or step.get("pretokenizers") or []
            kinds.append({str(s.get("type")) for s in inner})
        else:
            kinds.append({str(step.get("type"))})
    norm, pre = kinds
    return norm <= PER_CHARACTER and len(pre) == 1 and pre <= SPLITS_AT_WHITESPACE


class TokenCounter:
    def __init__(
        self, tokenizer_json: Path, cache_size: int = 16_384, chunks_kept: int = CHUNKS_KEPT
    ) -> None:
        """`chunks_kept`: chunk counts remembered per tenant (`additive` tokenizers)."""
        self._tok = Tokenizer.from_file(str(tokenizer_json))
        self._tok.no_truncation()
        self._tok.no_padding()
        self._memo: TextMemo[int] = TextMemo(self._count, cache_size)
        self._additive = additive(tokenizer_json)
        # Per tenant, the counts of the chunks its texts had.
        self._chunks: PartitionedLRU[str, int] = PartitionedLRU(chunks_kept, PARTS_KEPT)
        self._lock = threading.Lock()

    def count(self, text: str, part: str = "") -> int:
        """Tokens of `text`, without the special tokens a model adds around a sequence;
        remembered in `part`'s own LRU (a tenant's)."""
        return self._memo(text, part, part=part)

    def cached(self) -> int:
        """How many counts are kept."""
        return len(self._memo)

    def whole(self, text: str) -> int:
        """The text's count, from the tokenizer on all of it."""
        return len(self._tok.encode(text, add_special_tokens=False))

    def _count(self, text: str, part: str) -> int:
        if not self._additive:
            return self.whole(text)
        if _SPLIT_CONTROLS.search(text):
            chunks = [c for c in _CHUNKS.split(text) if c]
        else:
            chunks = text.split()
        with self._lock:
            found = {c: n for c in chunks if (n := self._chunks.get(part, c)) is not None}
        new = list({c: None for c in chunks if c not in found})
        if new:
            got = self._tok.encode_batch(new, add_special_tokens=False)
            counted = {c: len(e) for c, e in zip(new, got, strict=True)}
            found.update(counted)
            with self._lock:
                for c, n in counted.items():
                    if len(c) <= CHUNK_CHARS:
                        self._chunks.put(part, c, n)
        return sum(found[c] for c in chunks)
