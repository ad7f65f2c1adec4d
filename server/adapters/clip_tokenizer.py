"""CLIP's byte-level BPE tokenizer (open_clip's `SimpleTokenizer`), with the standard library.

open_clip's tokenizer module imports torch, `regex` and ftfy; the server imports none of them.
This one gives the same token ids from the same vocabulary (`bpe_simple_vocab_16e6.txt.gz`, MIT,
which ships in open-clip-torch: `make models` extracts it), checked against open_clip's own on a
corpus of English, Chinese, accents, emoji and digits (tests/unit/adapters/clip_tokens.json).

The steps, as open_clip does them:
- clean-up: HTML entities unescaped twice, whitespace runs as one space, trimmed, lower-cased;
- the pattern splits the text into the two special tokens, the English contractions, runs of
  letters, single digits, and runs of anything else but spaces. open_clip writes it with
  `regex`'s `\\p{L}` and `\\p{N}`; here the two classes are built from `unicodedata`'s general
  categories (L*, N*), which the stdlib `re` then matches (equal on every code point that
  Python's Unicode tables know: see the tests);
- each piece's UTF-8 bytes as printable characters (`bytes_to_unicode`), merged by the BPE
  ranks (remembered in a bounded LRU), looked up in the vocabulary;
- `<start_of_text>`, the ids, `<end_of_text>`, cut to the context length with the end token
  kept last, padded with zeros.

Where this differs from open_clip: open_clip runs `ftfy.fix_text` first. This module applies
the parts of it that change ordinary input (Latin ligatures, full-width and half-width forms,
the ideographic space, curly quotes, terminal escapes, invisible control characters, NFC) but
not its mojibake repair (text decoded with the wrong code page, such as "cafÃ©", and the C1
controls it reads as Windows-1252): such text tokenizes as it is written. Characters assigned
after the Unicode version of this Python's `unicodedata` count as neither letters nor digits.
"""

from __future__ import annotations

import functools
import gzip
import html
import itertools
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

START = "<start_of_text>"
END = "<end_of_text>"
CONTEXT_LENGTH = 77  # open_clip's default; a model's manifest may say otherwise
# The vocabulary file's merges that open_clip reads: its 48,894 lines after the header.
MERGES = 49152 - 256 - 2
BPE_CACHE = 1 << 16  # pieces remembered (a query stream repeats its words)

# ftfy's fixes that this module keeps (see the module docstring), as translation tables.
_LIGATURES = {
    ord(k): v
    for k, v in {
        "Ĳ": "IJ", "ĳ": "ij", "ŉ": "ʼn", "Ǳ": "DZ", "ǲ": "Dz", "ǳ": "dz", "Ǆ": "DŽ", "ǅ": "Dž",
        "ǆ": "dž", "Ǉ": "LJ", "ǈ": "Lj", "ǉ": "lj", "Ǌ": "NJ", "ǋ": "Nj", "ǌ": "nj", "ﬀ": "ff",
        "ﬁ": "fi", "ﬂ": "fl", "ﬃ": "ffi", "ﬄ": "ffl", "ﬅ": "ſt", "ﬆ": "st",
    }.items()
}  # fmt: skip
_WIDTH = {0x3000: " "} | {
    i: unicodedata.normalize("NFKC", chr(i))
    for i in range(0xFF01, 0xFFF0)
    if unicodedata.normalize("NFKC", chr(i)) != chr(i)
}
_QUOTES = {0x2BC: "'", **dict.fromkeys(range(0x2018, 0x201C), "'")} | dict.fromkeys(
    range(0x201C, 0x2020), '"'
)
_CONTROL_RANGES = ((0x00, 0x09), (0x0B, 0x0C), (0x0E, 0x20), (0x7F, 0x80), (0x206A, 0x2070))
_CONTROLS: dict[int, None] = dict.fromkeys(
    [*(cp for lo, hi in _CONTROL_RANGES for cp in range(lo, hi)), 0xFEFF, *range(0xFFF9, 0xFFFD)]
)
_ANSI = re.compile("\033\\[((?:\\d|;)*)([a-zA-Z])")


def fix_text(text: str) -> str:
    """ftfy's `fix_text` without its mojibake repair: repeated, as ftfy does, until nothing
    changes (a fix can make another one apply)."""
    while True:
        before = text
        text = text.translate(_LIGATURES).translate(_WIDTH).translate(_QUOTES)
        text = _ANSI.sub("", text).translate(_CONTROLS)
        text = unicodedata.normalize("NFC", text)
        if text == before:
            return text


def clean(text: str) -> str:
    """open_clip's "lower" clean-up: fixed, unescaped twice, whitespace as single spaces,
    trimmed, lower-cased."""
    text = html.unescape(html.unescape(fix_text(text))).strip()
    return " ".join(text.split()).lower()


def _ranges(keep: Iterable[int]) -> str:
    """Code points as a character class body of `\\U` ranges."""
    out: list[str] = []
    start = prev = -2
    for cp in keep:
        if cp != prev + 1:
            if start >= 0:
                out.append(f"\\U{start:08x}-\\U{prev:08x}")
            start = cp
        prev = cp
    if start >= 0:
        out.append(f"\\U{start:08x}-\\U{prev:08x}")
    return "".join(out)


@functools.cache
def pattern() -> re.Pattern[str]:
    """open_clip's pattern with `\\p{L}` and `\\p{N}` spelled out from `unicodedata` (built
    once: a pass over every code point, about a third of a second)."""
    cats = [unicodedata.category(chr(cp))[0] for cp in range(0x110000)]
    letters = _ranges(cp for cp, c in enumerate(cats) if c == "L")
    digits = _ranges(cp for cp, c in enumerate(cats) if c == "N")
    return re.compile(
        f"{START}|{END}|'s|'t|'re|'ve|'m|'ll|'d|[{letters}]+|[{digits}]|[^\\s{letters}{digits}]+",
        re.IGNORECASE,
    )


def bytes_to_unicode() -> dict[int, str]:
    """Every byte as a printable character: the printable Latin-1 bytes as themselves, the
    others shifted past 255 (BPE never sees whitespace or control characters)."""
    bs = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1)]
    bs += range(ord("®"), ord("ÿ") + 1)
    cs = list(bs)
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs, strict=True)}


def read_merges(vocabulary: Path) -> list[tuple[str, str]]:
    """The BPE merges, in rank order, from the gzipped vocabulary file."""
    lines = gzip.decompress(vocabulary.read_bytes()).decode("utf-8").split("\n")
    merges = [tuple(line.split()) for line in lines[1 : MERGES + 1]]
    if len(merges) != MERGES or any(len(m) != 2 for m in merges):
        raise ValueError(f"{vocabulary} is not CLIP's BPE vocabulary ({len(lines)} lines)")
    return [(a, b) for a, b in merges]


class ClipTokenizer:
    """open_clip's ids for texts (see the module docstring). Thread-safe."""

    def __init__(self, vocabulary: Path, context_length: int = CONTEXT_LENGTH) -> None:
        """`vocabulary`: `bpe_simple_vocab_16e6.txt.gz`; `context_length`: the text tower's
        input length (77 for the released CLIP models)."""
        if context_length < 2:
            raise ValueError(f"context_length {context_length}: the two special tokens need 2")
        merges = read_merges(vocabulary)
        self._byte = bytes_to_unicode()
        self._unbyte = {c: b for b, c in self._byte.items()}
        chars = list(self._byte.values())
        vocab = chars + [c + "</w>" for c in chars] + ["".join(m) for m in merges] + [START, END]
        self.encoder: dict[str, int] = {v: i for i, v in enumerate(vocab)}
        self.decoder: dict[int, str] = dict(enumerate(vocab))
        self._ranks = {m: i for i, m in enumerate(merges)}
        self.start: int = self.encoder[START]
        self.end: int = self.encoder[END]
        self.context_length = context_length
        self._pattern = pattern()
        self._bpe = functools.lru_cache(maxsize=BPE_CACHE)(self._merge)

    def _merge(self, piece: str) -> tuple[str, ...]:
        """A piece's symbols after the merges, lowest rank first (open_clip's `bpe`)."""
        if piece in (START, END):
            return (piece,)
        word = (*piece[:-1], piece[-1] + "</w>")
        while len(word) > 1:
            pairs = set(itertools.pairwise(word))
            best = min(pairs, key=lambda p: self._ranks.get(p, MERGES))
            if best not in self._ranks:
                break
            first, second = best
            merged: list[str] = []
            i = 0
            while i < len(word):
                if i < len(word) - 1 and word[i] == first and word[i + 1] == second:
                    merged.append(first + second)
                    i += 2
                else:
                    merged.append(word[i])
                    i += 1
            word = tuple(merged)
        return word

    def encode(self, text: str) -> list[int]:
        """The text's token ids, without the start and end tokens."""
        ids: list[int] = []
        # U+0345 (a combining mark that case-folds to a letter) matches no part of `regex`'s
        # pattern under IGNORECASE, so open_clip skips it; `re` would take it as a letter.
        for piece in self._pattern.findall(clean(text).replace("\u0345", " ")):
            if piece not in (START, END):
                piece = "".join(self._byte[b] for b in piece.encode("utf-8"))
            ids.extend(self.encoder[s] for s in self._bpe(piece))
        return ids

    def decode(self, ids: Iterable[int]) -> str:
        """The text of token ids, each word followed by a space (open_clip's `decode`: the
        special tokens and padding as the characters they are spelled with)."""
        text = "".join(self.decoder[i] for i in ids)
        data = bytes(self._unbyte[c] for c in text)
        return data.decode("utf-8", errors="replace").replace("</w>", " ")

    def __call__(
        self,
        texts: Sequence[str],
        context_length: int | None = None,
        keep: Mapping[int, int] | None = None,
    ) -> npt.NDArray[np.int64]:
        """One row per text: start, ids, end, zeros; longer texts cut so that the end token
        stays last. `keep` (a model trained on a reduced vocabulary): each id's row in the
        model's table; ids it lacks are dropped (words the model never saw), the special
        tokens are mapped too."""
        n = context_length or self.context_length
        out = np.zeros((len(texts), n), np.int64)
        for row, text in enumerate(texts):
            ids = [self.start, *self.encode(text)]
            end = self.end
            if keep is not None:
                ids = [keep[i] for i in ids if i in keep]
                end = keep[end]
            ids = [*ids[: n - 1], end]
            out[row, : len(ids)] = ids
        return out
