"""The knowledge-update set of `python -m bench update`, read and laid out in time.

`bench/data/update_set.json` was written blind by a helper session from the task description
alone (its `description` says how): two halves on disjoint topics, `tune` and `report`, each with
80 English and 80 Chinese cases, and 150 unrelated statements per language (the distractors,
shared by both halves: they are about none of the case topics). A case is either an `update`
(`new` states a changed value of what `old` said: current questions ask for `new`, past ones for
`old`) or a `coexist` pair (both hold: current questions ask about `new`, and `old` must stay
current).

One user's memory per language and half: every case's two statements and all the distractors,
said over one year that ends at `END`, the time every question is asked at. Each case's `old` is
said `days_between` days before its `new`, the cases' `new` statements spread over the year by a
fixed low-discrepancy sequence, the distractors spread evenly over the same year. Nothing is
random: every run lays the set out the same way.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

DATA_PATH = Path(__file__).resolve().parent / "data" / "update_set.json"
HALVES = ("tune", "report")
LANGS = ("en", "zh")
DAY = 86_400.0
END = datetime(2026, 11, 30, 12, tzinfo=UTC).timestamp()  # the questions' `as_of`
YEAR_DAYS = 365.0  # the span the statements are said over, before END
GOLDEN = 0.6180339887498949  # spreads the cases' times over the year without clumps

CaseType = Literal["update", "coexist"]
# current: an update's current question (asks for new); past: its past question (asks for old,
# with include_obsolete); coexist: a coexist pair's question (asks for new); own: a coexist
# pair's old statement asked with its own words (it must still be found).
Group = Literal["current", "past", "coexist", "own"]
GROUPS: tuple[Group, ...] = ("current", "past", "coexist", "own")


@dataclass(frozen=True)
class Case:
    id: str
    type: CaseType
    topic: str
    kind: str  # "fact" or "preference"
    old: str
    new: str
    days_between: float
    current: tuple[str, ...]
    past: tuple[str, ...]

    @property
    def old_item(self) -> str:
        return f"{self.id}:old"

    @property
    def new_item(self) -> str:
        return f"{self.id}:new"


@dataclass(frozen=True)
class Statement:
    """One thing the user said: an item id (`<case>:old`, `<case>:new`, `d:<lang>:<n>`), its
    words, its memory kind and when it was said (seconds)."""

    item: str
    text: str
    kind: str
    at: float


@dataclass(frozen=True)
class Probe:
    """One question: its key (unique in its set), group, words, the item it asks for and the
    item that must rank below it (an update's other value; "" when none does)."""

    key: str
    case: str
    group: Group
    text: str
    target: str
    rival: str

    @property
    def include_obsolete(self) -> bool:
        """A past question asks for a value that may be superseded."""
        return self.group == "past"


@dataclass(frozen=True)
class UpdateSet:
    """One language of one half: its cases, everything said (in time order) and the questions."""

    half: str
    lang: str
    cases: tuple[Case, ...]
    statements: tuple[Statement, ...]
    probes: tuple[Probe, ...]
    as_of: float = END

    @property
    def born(self) -> dict[str, float]:
        """When each item was said."""
        return {s.item: s.at for s in self.statements}


def _text(item: dict[str, Any], key: str) -> str:
    value = item.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{item.get('id', '?')}: {key!r} is not a non-empty string")
    return value


def _texts(item: dict[str, Any], key: str) -> tuple[str, ...]:
    values = item.get(key)
    if not isinstance(values, list) or not all(isinstance(v, str) and v for v in values):
        raise ValueError(f"{item.get('id', '?')}: {key!r} is not a list of strings")
    return tuple(values)


def case_of(item: dict[str, Any]) -> Case:
    kind, type_ = _text(item, "kind"), _text(item, "type")
    if kind not in ("fact", "preference") or type_ not in ("update", "coexist"):
        raise ValueError(f"{item.get('id', '?')}: kind {kind!r} or type {type_!r} unknown")
    return Case(
        id=_text(item, "id"),
        type="update" if type_ == "update" else "coexist",
        topic=_text(item, "topic"),
        kind=kind,
        old=_text(item, "old"),
        new=_text(item, "new"),
        days_between=float(item["days_between"]),
        current=_texts(item, "current_questions"),
        past=_texts(item, "past_questions"),
    )


def timeline(cases: tuple[Case, ...], distractors: tuple[str, ...]) -> tuple[Statement, ...]:
    """Everything said, in time order: case i's `new` at a point of the year given by the
    golden-ratio sequence (leaving room for its `old` before it), its `old` `days_between`
    earlier; the distractors evenly over the year, as facts."""
    out: list[Statement] = []
    for i, c in enumerate(cases):
        room = YEAR_DAYS - c.days_between - 2.0
        if room <= 0:
            raise ValueError(f"{c.id}: days_between {c.days_between} does not fit in a year")
        new_at = END - DAY * (1.0 + ((i + 1) * GOLDEN % 1.0) * room)
        out.append(Statement(c.old_item, c.old, c.kind, new_at - DAY * c.days_between))
        out.append(Statement(c.new_item, c.new, c.kind, new_at))
    for j, text in enumerate(distractors):
        at = END - DAY * (1.0 + (j + 0.5) / len(distractors) * (YEAR_DAYS - 2.0))
        out.append(Statement(f"d:{j}", text, "fact", at))
    return tuple(sorted(out, key=lambda s: s.at))


def probes(cases: tuple[Case, ...]) -> tuple[Probe, ...]:
    out: list[Probe] = []
    for c in cases:
        if c.type == "update":
            for n, q in enumerate(c.current):
                out.append(Probe(f"{c.id}/current/{n}", c.id, "current", q, c.new_item, c.old_item))
            for n, q in enumerate(c.past):
                out.append(Probe(f"{c.id}/past/{n}", c.id, "past", q, c.old_item, ""))
        else:
            for n, q in enumerate(c.current):
                out.append(Probe(f"{c.id}/coexist/{n}", c.id, "coexist", q, c.new_item, ""))
            out.append(Probe(f"{c.id}/own/0", c.id, "own", c.old, c.old_item, ""))
    return tuple(out)


def load(half: str, path: Path = DATA_PATH) -> dict[str, UpdateSet]:
    """Per language, the half's set laid out in time."""
    if half not in HALVES:
        raise ValueError(f"half {half!r} is not one of {HALVES}")
    raw = json.loads(path.read_text(encoding="utf-8"))
    out: dict[str, UpdateSet] = {}
    for lang in LANGS:
        cases = tuple(case_of(c) for c in raw["halves"][half][lang])
        ids = [c.id for c in cases]
        if len(set(ids)) != len(ids):
            raise ValueError(f"{half}/{lang}: case ids repeat")
        distractors = tuple(str(t) for t in raw["distractors"][lang])
        out[lang] = UpdateSet(half, lang, cases, timeline(cases, distractors), probes(cases))
    return out
