"""What `bench quality` scores: turns, and probes (questions) whose evidence is groups of turns.

Both workloads come to this shape: the synthetic dialogs (`bench.dialogs`, one turn per evidence
group) and MemoryBank (`bench.memorybank`, an exchange's two turns per group).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from bench.dialogs import DAY, DialogSet, Turn

K = (5, 10)


@dataclass(frozen=True)
class Probe:
    """A question over its namespace's turns. `evidence`: groups of turn ids; a group is found
    at k when any of its turns is in the top k."""

    namespace: str
    kind: str
    text: str
    evidence: tuple[tuple[str, ...], ...]
    as_of: float  # when it is asked: after the namespace's last turn
    half: str = ""
    template: str = ""


@dataclass
class Corpus:
    turns: list[Turn] = field(default_factory=list)
    probes: list[Probe] = field(default_factory=list)


Ranker = Callable[[Probe], list[str]]  # a probe → turn ids, best first


def by_namespace(turns: Iterable[Turn]) -> dict[str, list[Turn]]:
    out: dict[str, list[Turn]] = defaultdict(list)
    for t in turns:
        out[t.namespace].append(t)
    return out


def from_dialogs(data: DialogSet) -> Corpus:
    """One evidence group per evidence turn; every question asked a day after its conversation's
    last turn."""
    last = {ns: max(t.time for t in turns) for ns, turns in by_namespace(data.turns).items()}
    probes = [
        Probe(
            q.namespace,
            q.kind,
            q.text,
            tuple((e,) for e in q.evidence),
            last[q.namespace] + DAY,
            q.half,
            q.template,
        )
        for q in data.questions
    ]
    return Corpus(list(data.turns), probes)


Figures = dict[str, dict[str, float]]  # kind → {"r5", "r10", "questions"}


def memo(rank: Ranker) -> Ranker:
    """`rank`, asked once per probe: scoring the same probes by several groupings ranks once."""
    seen: dict[Probe, list[str]] = {}

    def ranked(p: Probe) -> list[str]:
        if p not in seen:
            seen[p] = rank(p)
        return seen[p]

    return ranked


def score(probes: Iterable[Probe], rank: Ranker, by: Callable[[Probe], str | None]) -> Figures:
    """R@5 and R@10 per group `by(probe)`: the share of a probe's evidence groups found in its
    top 5 (10), averaged over the group's probes. A probe whose group is None is left out."""
    sums: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    for p in probes:
        group = by(p)
        if group is None:
            continue
        got = rank(p)
        s = sums[group]
        for i, k in enumerate(K):
            top = set(got[:k])
            s[i] += sum(any(t in top for t in g) for g in p.evidence) / len(p.evidence)
        s[2] += 1
    return {g: {"r5": s[0] / s[2], "r10": s[1] / s[2], "questions": s[2]} for g, s in sums.items()}


def pooled(figures: Figures, kinds: Iterable[str], macro: bool = False) -> dict[str, float]:
    """The figures of `kinds` together: over their questions (each question counts once), or
    with `macro` the mean over the kinds (each kind counts once, whatever its question count)."""
    rows = [figures[k] for k in kinds if k in figures]
    n = sum(r["questions"] for r in rows)
    if not rows:
        return {"r5": float("nan"), "r10": float("nan"), "questions": 0.0}
    if macro:
        return {
            "r5": sum(r["r5"] for r in rows) / len(rows),
            "r10": sum(r["r10"] for r in rows) / len(rows),
            "questions": n,
        }
    return {
        "r5": sum(r["r5"] * r["questions"] for r in rows) / n,
        "r10": sum(r["r10"] * r["questions"] for r in rows) / n,
        "questions": n,
    }
