"""The two sets of `python -m bench bilingual`: the blind set (the headline) and the development
set.

- `blind`: `bench/data/bilingual_blind.json`, written by another session from the task
  description alone, without sight of this bench's data, pocketd's settings or its results
  ({"about", "memories": [{"id", "text"}], "questions": [{"group", "text", "gold"}]}). It holds
  its own memories, distractors and unrelated ones; it is read as it is (no question is dropped
  or reworded after reading it).
- `dev`: `bench.bilingual_data`, hand-written by the engineer who tuned pocketd's scoring with it
  in view (`vector_ceiling` and `unseen_term_weight` were chosen on it: bench/RESULTS.md).

`background` names the memories whose pairwise cosines give an encoder's spread: the labelled
unrelated memories of the dev set, and every memory that answers no question in the blind set
(its distractors too, as the file does not label them apart).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import bilingual_data as dev_data
from bench.bilingual_data import Memory, Question

BLIND_PATH = Path(__file__).resolve().parent / "data" / "bilingual_blind.json"


@dataclass(frozen=True)
class BilingualSet:
    name: str
    about: str
    memories: tuple[Memory, ...]
    questions: tuple[Question, ...]
    background: tuple[str, ...]  # memory ids for the spread's "unrelated" pairs

    @property
    def groups(self) -> tuple[str, ...]:
        """The question groups: the dev set's in its order, then any others sorted."""
        present = {q.group for q in self.questions}
        known = tuple(g for g in dev_data.GROUPS if g in present)
        return known + tuple(sorted(present - set(known)))


def check(s: BilingualSet) -> None:
    """Raise ValueError when ids repeat, a text is empty or a gold memory does not exist."""
    ids = [m.id for m in s.memories]
    dup = sorted(i for i, c in Counter(ids).items() if c > 1)
    if dup:
        raise ValueError(f"{s.name}: duplicate memory ids {dup}")
    empty = [m.id for m in s.memories if not m.text.strip()]
    empty += [q.text for q in s.questions if not q.text.strip() or not q.group]
    if empty:
        raise ValueError(f"{s.name}: empty texts or groups {empty}")
    known = set(ids)
    missing = [q for q in s.questions if q.gold not in known]
    if missing:
        raise ValueError(f"{s.name}: gold memories that do not exist {missing}")
    if not s.questions:
        raise ValueError(f"{s.name}: no questions")


def dev_set() -> BilingualSet:
    return BilingualSet(
        name="dev",
        about="hand-written with pocketd's scoring in view (a development set)",
        memories=dev_data.MEMORIES,
        questions=dev_data.QUESTIONS,
        background=tuple(m.id for m in dev_data.UNRELATED),
    )


def _field(item: dict[str, Any], key: str, where: str) -> str:
    value = item.get(key)
    if not isinstance(value, str):
        raise ValueError(f"{where}: {key!r} is not a string: {item!r}")
    return value


def load_set(path: Path, name: str) -> BilingualSet:
    """A set in the blind file's format; checked (`check`)."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    memories = tuple(
        Memory(_field(m, "id", str(path)), _field(m, "text", str(path))) for m in raw["memories"]
    )
    questions = tuple(
        Question(
            _field(q, "group", str(path)),
            _field(q, "text", str(path)),
            _field(q, "gold", str(path)),
        )
        for q in raw["questions"]
    )
    gold = {q.gold for q in questions}
    s = BilingualSet(
        name=name,
        about=str(raw.get("about", "")),
        memories=memories,
        questions=questions,
        background=tuple(m.id for m in memories if m.id not in gold),
    )
    check(s)
    return s


def blind_set(path: Path = BLIND_PATH) -> BilingualSet:
    return load_set(path, "blind")
