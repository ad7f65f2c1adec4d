"""The figures of `python -m bench lifecycle`, from what each Recall returned.

A ranking is, for each hit in order, the set of the world's items the hit holds (`holdings`):
- linked: the hit is the item's own memory, or a summary whose `derived_from` names the item's
  memory (a topic's summary that replaced it in the warm tier, a session summary's line drawn
  from it): an agent that reads the summary can Get what it stands for;
- text: linked, and the item's words are in the hit's text (whitespace aside): the summary kept
  them, so the answer is in what the agent reads.

A compressed fact counts as found when its summary is in the top 5 (linked); `recall@5 text`
says how often the summary also kept its words. Figures over a set of probes:
- `recall@5`: the questions about what holds now (`RELEVANT` groups) whose target is held in the
  top 5 (linked);
- `recall@5 text`: the same with text holdings;
- `stale`: the questions with a rival (an update's current question once its new value is said)
  where the old value is held above the first hit holding the new one (an absent new value
  counts as below), or by the top hit;
- `stale via summary`: those of them where the first hit holding the old value is a summary
  (a session's or a topic's, which supersession does not mark), not the old memory itself;
- `past@5`: past questions (asked with `include_obsolete`) with the old value held in the top 5.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from bench.lifecycle_world import RELEVANT, Probe
from bench.stats import pct

Holdings = frozenset[str]
Ranking = list[Holdings]  # per hit, best first, the items it holds
DEPTH = 10  # each Recall's top k: a top 5 and where a rival lies below it
TOP = 5
FIGURES = ("recall@5", "recall@5 text", "stale", "stale via summary", "past@5")


@dataclass
class Rankings:
    """Per question key: the linked and the text holdings of each hit, and which hits are
    summaries."""

    linked: dict[str, Ranking] = field(default_factory=dict)
    text: dict[str, Ranking] = field(default_factory=dict)
    summary: dict[str, list[bool]] = field(default_factory=dict)

    def update(self, other: Rankings) -> None:
        self.linked.update(other.linked)
        self.text.update(other.text)
        self.summary.update(other.summary)


def words(text: str) -> str:
    """`text` with its whitespace collapsed (the summariser joins sentences with one space)."""
    return " ".join(text.split())


def holdings(
    memory_id: str,
    derived_from: Iterable[str],
    text: str,
    owner: Mapping[str, str],
    texts: Mapping[str, str],
) -> tuple[Holdings, Holdings]:
    """The items one hit holds, linked and by text. `owner`: memory id → the item whose words
    the memory holds; `texts`: item → its words."""
    own = owner.get(memory_id)
    linked = {owner[d] for d in derived_from if d in owner}
    if own is not None:
        linked.add(own)
    said = words(text)
    kept = {i for i in linked if i == own or words(texts[i]) in said}
    return frozenset(linked), frozenset(kept)


def first(ranking: Sequence[Holdings], item: str) -> int | None:
    """The 0-based rank of the first hit holding `item`, or None."""
    return next((r for r, held in enumerate(ranking) if item in held), None)


def found(ranking: Sequence[Holdings], item: str, k: int = TOP) -> bool:
    at = first(ranking, item)
    return at is not None and at < k


def stale(ranking: Sequence[Holdings], target: str, rival: str) -> bool:
    """The rival (the old value) held above the target's first holder, or by the top hit."""
    r = first(ranking, rival)
    if r is None:
        return False
    t = first(ranking, target)
    return r == 0 or t is None or r < t


def _share(hits: list[bool]) -> float:
    return sum(hits) / len(hits) if hits else float("nan")


def via_summary(ranking: Sequence[Holdings], summary: Sequence[bool], p: Probe) -> bool:
    """A stale answer whose first holder of the old value is a summary."""
    r = first(ranking, p.rival)
    return r is not None and summary[r] and stale(ranking, p.target, p.rival)


def figures(probes: Sequence[Probe], got: Rankings) -> dict[str, float]:
    """Each of `FIGURES` as a share of its questions, and `n <figure>` their counts."""
    now = [p for p in probes if p.group in RELEVANT]
    rivals = [p for p in now if p.rival]
    past = [p for p in probes if p.group == "past"]
    linked, text = got.linked, got.text
    hits = {
        "recall@5": [found(linked[p.key], p.target) for p in now],
        "recall@5 text": [found(text[p.key], p.target) for p in now],
        "stale": [stale(linked[p.key], p.target, p.rival) for p in rivals],
        "stale via summary": [via_summary(linked[p.key], got.summary[p.key], p) for p in rivals],
        "past@5": [found(linked[p.key], p.target) for p in past],
    }
    out = {name: _share(h) for name, h in hits.items()}
    out.update({f"n {name}": float(len(h)) for name, h in hits.items()})
    return out


def spread_ms(samples_s: Sequence[float]) -> dict[str, float]:
    """p50, p99 and max in milliseconds, and the count (NaN figures when there is none)."""
    ms = [s * 1000.0 for s in samples_s]
    return {
        "p50_ms": pct(ms, 50),
        "p99_ms": pct(ms, 99),
        "max_ms": max(ms) if ms else float("nan"),
        "n": float(len(ms)),
    }
