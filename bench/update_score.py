"""The figures of `python -m bench update`, from ranked item ids and from what pocketd marked
obsolete; and the trivial rule.

A ranking is the item ids a row returned for one question, best first (`bench.update_data`'s
items: `<case>:old`, `<case>:new`, `d:<n>`). Per language:

- `current r1`: an update's current question with its new value first;
- `current top3>old`: its new value in the top 3 AND above the old one (an old value absent from
  the ranking counts as below): the issue's outside check;
- `past top5`: an update's past question with its old value in the top 5 (asked with
  `include_obsolete`);
- `coexist top3`: a coexist pair's question with its new statement in the top 3;
- `own top5`: a coexist pair's old statement, asked in its own words without `include_obsolete`,
  in the top 5: it was not hidden as superseded (nor merged away).

Supersession, from the marks (what was obsolete at the end, read through Get, and which item it
names as its successor): recall over the update pairs (the old value marked, naming its own new
value), the share of coexist pairs whose old statement stayed current, and the precision of all
marks (the right ones over every mark, distractors and wrong successors included), with the marks
counted per reason code.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from bench.update_data import Case, Group, Probe

Ranking = list[str]  # item ids, best first
FIGURES: dict[str, tuple[Group, str]] = {  # figure → (its questions' group, what it measures)
    "current r1": ("current", "r1"),
    "current top3>old": ("current", "top3>rival"),
    "past top5": ("past", "top5"),
    "coexist top3": ("coexist", "top3"),
    "own top5": ("own", "top5"),
}
HEADLINE = "current top3>old"


def position(ranking: Sequence[str], item: str) -> int | None:
    """The item's 0-based rank, or None when it is absent."""
    try:
        return ranking.index(item)
    except ValueError:
        return None


def above(ranking: Sequence[str], target: str, rival: str, depth: int) -> bool:
    """`target` in the top `depth` and ranked above `rival` (absent counts as below)."""
    t = position(ranking, target)
    if t is None or t >= depth:
        return False
    r = position(ranking, rival) if rival else None
    return r is None or t < r


def hit(p: Probe, ranking: Sequence[str], measure: str) -> bool:
    if measure == "r1":
        return above(ranking, p.target, p.rival, 1)
    if measure == "top3>rival":
        return above(ranking, p.target, p.rival, 3)
    depth = {"top3": 3, "top5": 5}[measure]
    return p.target in ranking[:depth]


def figures(probes: Sequence[Probe], rankings: Mapping[str, Ranking]) -> dict[str, float]:
    """Each figure of `FIGURES` as a share of its group's questions, and `n <group>` counts."""
    out: dict[str, float] = {}
    for name, (group, measure) in FIGURES.items():
        ps = [p for p in probes if p.group == group]
        out[name] = sum(hit(p, rankings[p.key], measure) for p in ps) / len(ps) if ps else 0.0
        out[f"n {group}"] = float(len(ps))
    return out


def newer_of_top2(ranking: Sequence[str], born: Mapping[str, float]) -> Ranking:
    """The trivial rule: of the top 2, the one said later goes first; the rest as it was."""
    out = list(ranking)
    if len(out) >= 2 and born[out[1]] > born[out[0]]:
        out[0], out[1] = out[1], out[0]
    return out


def newer_first(
    probes: Sequence[Probe], rankings: Mapping[str, Ranking], born: Mapping[str, float]
) -> dict[str, Ranking]:
    """The trivial rule over a row's rankings: applied to the questions about what holds now
    (current and coexist); a past question and an own-words question keep their order (in any
    case, a swap inside the top 2 moves nothing in or out of a top 5)."""
    now: set[Group] = {"current", "coexist"}
    return {
        p.key: newer_of_top2(rankings[p.key], born) if p.group in now else list(rankings[p.key])
        for p in probes
    }


@dataclass(frozen=True)
class Mark:
    """One memory obsolete at the end: the item it held, the item its successor holds ("?" when
    the successor holds none of the set's items) and the reason code."""

    item: str
    by: str
    reason: str


def _marked_what(item: str, cases: Mapping[str, Case]) -> str:
    if item.startswith("d:"):
        return "distractor"
    case_id, role = item.rsplit(":", 1)
    return f"{cases[case_id].type} {role}"


def supersession(cases: Sequence[Case], marks: Sequence[Mark]) -> dict[str, object]:
    """Recall over update pairs, coexist pairs kept, precision over all marks, and the marks per
    reason code (right/wrong) and per what was wrongly marked."""
    by_id = {c.id: c for c in cases}
    right_of = {c.old_item: c.new_item for c in cases if c.type == "update"}
    right = [m for m in marks if right_of.get(m.item) == m.by]
    wrong = [m for m in marks if right_of.get(m.item) != m.by]
    marked = {m.item for m in marks}
    updates = [c for c in cases if c.type == "update"]
    coexist = [c for c in cases if c.type == "coexist"]
    return {
        "update recall": len(right) / len(updates) if updates else 0.0,
        "coexist kept": (
            sum(c.old_item not in marked for c in coexist) / len(coexist) if coexist else 0.0
        ),
        "precision": len(right) / len(marks) if marks else 1.0,
        "marks": len(marks),
        "right by reason": dict(Counter(m.reason for m in right)),
        "wrong by reason": dict(Counter(m.reason for m in wrong)),
        "wrong by what": dict(Counter(_marked_what(m.item, by_id) for m in wrong)),
    }
