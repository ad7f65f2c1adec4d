"""The in-process rankers of `python -m bench bilingual`, each over one set's memories (their
texts, nothing else: the set has no other field) and asked its questions' texts.

- `Dense`: exact cosine over an encoder's unit vectors; e5 embeds memories as passages and
  questions as queries (its prefixes), the others embed both alike;
- `BM25`: bm25s (k1 1.5, b 0.75) over `bench.textproc.tokenize` (English stemmed without
  stopwords, Chinese segmented by jieba without function words);
- `hybrid`: `bench.quality_retrievers.Hybrid` over the two: each channel min-max normalised over
  its own top 100, fused 0.5/0.5, not tuned;
- `Bigram` (the trivial row): no encoder, no tokenizer, no index: the Dice overlap of the
  character bigrams of the question and of each memory. Where it wins, a group is solved by
  shared surface strings and says nothing about meaning.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from bench.bilingual_data import Memory, Question
from bench.quality_retrievers import Hybrid, Scored, bm25_index, bm25_top, top
from server.core.memory.ports import TextEncoder

DEPTH = 5
Ranker = Callable[[Question], list[str]]  # a question → memory ids, best first
_RUN = re.compile(r"\w+")


class Encoder(Protocol):
    """Unit vectors for memories (`passages`) and for questions (`queries`)."""

    name: str

    def passages(self, texts: Sequence[str]) -> npt.NDArray[np.float32]: ...

    def queries(self, texts: Sequence[str]) -> npt.NDArray[np.float32]: ...


class Symmetric:
    """An encoder that embeds memories and questions alike (the server's `TextEncoder`s)."""

    def __init__(self, name: str, enc: TextEncoder) -> None:
        self.name, self.enc = name, enc

    def passages(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return np.asarray(self.enc.encode(list(texts)), dtype=np.float32)

    queries = passages


class Dense:
    """Exact cosine over `enc`'s vectors of the memories (in batches, as a bulk import would
    embed them) and of each question alone (as a live query is: use-m3's graph pads a batch,
    which moves a vector by up to 0.005 in cosine)."""

    def __init__(self, enc: Encoder, memories: Sequence[Memory]) -> None:
        self.enc = enc
        self.ids = [m.id for m in memories]
        self.mat = enc.passages([m.text for m in memories])
        self.vec = dict(zip(self.ids, self.mat, strict=True))
        self._q: dict[str, npt.NDArray[np.float32]] = {}

    def query(self, text: str) -> npt.NDArray[np.float32]:
        if text not in self._q:
            self._q[text] = self.enc.queries([text])[0]
        return self._q[text]

    def scored(self, q: Question, depth: int) -> Scored:
        return top(self.ids, self.mat @ self.query(q.text), depth)

    def __call__(self, q: Question) -> list[str]:
        return [i for i, _ in self.scored(q, DEPTH)]

    def cosine(self, memory_id: str, question: str) -> float:
        return float(self.vec[memory_id] @ self.query(question))


class BM25:
    """bm25s (k1 1.5, b 0.75) over `bench.textproc.tokenize`."""

    def __init__(self, memories: Sequence[Memory]) -> None:
        self.ids = [m.id for m in memories]
        self.index = bm25_index([m.text for m in memories])

    def scored(self, q: Question, depth: int) -> Scored:
        return bm25_top(self.index, self.ids, q.text, depth)

    def __call__(self, q: Question) -> list[str]:
        return [i for i, _ in self.scored(q, DEPTH)]


def bigrams(text: str) -> frozenset[str]:
    """The character bigrams inside each run of word characters (a run of one character counts
    as itself), lower-cased."""
    out: set[str] = set()
    for run in _RUN.findall(text.lower()):
        out.update(run[i : i + 2] for i in range(max(1, len(run) - 1)))
    return frozenset(out)


class Bigram:
    """The trivial row: Dice overlap of character bigrams (`bigrams`); no encoder, no index."""

    def __init__(self, memories: Sequence[Memory]) -> None:
        self.ids = [m.id for m in memories]
        self.grams = [bigrams(m.text) for m in memories]

    def scored(self, q: Question, depth: int) -> Scored:
        g = bigrams(q.text)
        dice = np.array([2 * len(g & m) / (len(g) + len(m) or 1) for m in self.grams])
        return [(i, s) for i, s in top(self.ids, dice, depth) if s > 0]

    def __call__(self, q: Question) -> list[str]:
        return [i for i, _ in self.scored(q, DEPTH)]


def hybrid(bm25: BM25, dense: Dense) -> Ranker:
    """`bench.quality_retrievers.Hybrid` (min-max per channel, 0.5/0.5) over these two channels:
    it reads a channel only through `scored(query, depth)` (its `Channel`) and hands the query
    on to them."""
    fused: Hybrid[Question] = Hybrid(bm25, dense)

    def rank(q: Question) -> list[str]:
        return fused(q)[:DEPTH]

    return rank
