"""The figures of `python -m bench media` and its in-process rows, on rankings of item ids.

- `recall_at`: the share of questions whose item is in the first k of its ranking (each
  question has exactly one item that answers it);
- `figures`: recall@1 and recall@5 per language;
- `newest` (the trivial row, pocketd's own rule "the screenshot I just sent"): the k items sent
  last, newest first, whatever the question;
- `read`: whether a text (what OCR or speech made of an item) holds the answer's characters, up
  to width, case and blanks ("2025-01-08 14:22" is read when OCR wrote "2025-01-0814:22");
- `Afternoon`: the baselines a competent engineer builds in an afternoon on the same text pocketd
  made of each item (read back with Get): bm25s over stemmed, stopword-free terms with jieba
  for Chinese (`bench.bilingual_rankers.BM25`), and that plus exact cosine over the server's own
  encoder, min-max fused 0.5/0.5 (`bench.bilingual_rankers.hybrid`). Neither is tuned.
- `caption_recall`: the drawn-images part's recall@5 (the share of a caption's top 5 that show
  it, out of at most 5 pictures of it).
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Callable, Mapping, Sequence

from bench.bilingual_data import Memory, Question
from bench.bilingual_rankers import BM25, Dense, Encoder, hybrid
from bench.media_data import LANGS, Doc, Item

DEPTH = 5
Ranking = list[str]  # item (or distractor) ids, best first
Rankings = dict[str, Ranking]  # question key (its item's id) → ranking
Ranker = Callable[[Item], Ranking]


def recall_at(rankings: Mapping[str, Sequence[str]], gold: Mapping[str, str], k: int) -> float:
    """The share of the questions in `gold` (key → the id that answers it) whose answer is in the
    first `k` of its ranking (a question with no ranking counts as missed); nan for none."""
    if not gold:
        return math.nan
    hits = sum(g in list(rankings.get(key, ()))[:k] for key, g in gold.items())
    return hits / len(gold)


def figures(
    items: Sequence[Item], rankings: Mapping[str, Sequence[str]]
) -> dict[str, dict[str, float]]:
    """Per language: the questions' count, recall@1 and recall@5 (an item's question is keyed by
    the item's id, and the item answers it)."""
    out: dict[str, dict[str, float]] = {}
    for lang in LANGS:
        gold = {i.id: i.id for i in items if i.lang == lang}
        out[lang] = {
            "n": len(gold),
            "r@1": recall_at(rankings, gold, 1),
            "r@5": recall_at(rankings, gold, DEPTH),
        }
    return out


def newest(order: Sequence[str], k: int = DEPTH) -> Ranking:
    """The trivial ranking: the last `k` of `order` (the items as they were sent), newest first."""
    return list(reversed(order))[:k]


def normalised(text: str) -> str:
    """NFKC (full-width forms to their ASCII twins), case folded, without blanks."""
    return "".join(unicodedata.normalize("NFKC", text).casefold().split())


def read(answer: str, text: str) -> bool:
    """Whether `text` holds `answer`'s characters, up to width, case and blanks."""
    return normalised(answer) in normalised(text)


class Afternoon:
    """The afternoon's rankers over one namespace's texts: the distractors and what pocketd made
    of each item (`texts`: item id → its OCR text or transcript). `bm25` alone, and `hybrid`
    with exact cosine over `encoder` when one is given."""

    def __init__(
        self, distractors: Sequence[Doc], texts: Mapping[str, str], encoder: Encoder | None
    ) -> None:
        memories = [Memory(d.id, d.text) for d in distractors]
        memories += [Memory(i, t) for i, t in texts.items()]
        self.bm25 = BM25(memories)
        self.hybrid = hybrid(self.bm25, Dense(encoder, memories)) if encoder else None

    def rankers(self) -> dict[str, Ranker]:
        out: dict[str, Ranker] = {"bm25": lambda i: self.bm25(_question(i))}
        if self.hybrid is not None:
            fused = self.hybrid
            out["hybrid"] = lambda i: fused(_question(i))
        return out


def _question(item: Item) -> Question:
    return Question(item.lang, item.question, item.id)


def rank_all(rank: Ranker, items: Sequence[Item]) -> Rankings:
    return {i.id: rank(i) for i in items}


def caption_recall(rankings: Mapping[str, Sequence[str]], shown: Mapping[str, int]) -> float:
    """Mean over captions (the keys) of the share of the first 5 pictures in its ranking (the
    captions each picture shows) that show it, out of the `shown[caption]` pictures of it (at
    most 5)."""
    shares = [
        sum(c == caption for c in list(rankings.get(caption, ()))[:DEPTH]) / min(DEPTH, n)
        for caption, n in shown.items()
        if n
    ]
    return sum(shares) / len(shares) if shares else math.nan
