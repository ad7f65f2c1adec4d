"""MemoryBank (Zhong et al., AAAI 2024) as `bench quality` turns and probes, Chinese and English.

The data (`../shared/data/memorybank/`, see its README.md): per language, 15 users, each with ten
days of exchanges with an AI companion, and probing questions the user asks afterwards. It has no
evidence labels of its own; they are read from `bench/data/memorybank_evidence.json`:

    {"format": 1, "languages": {"cn": {"<user>": [{"q": i, "evidence": [["<date>", idx], ...]},
     ...]}, "en": {...}}}

where `q` indexes the user's probing questions and (date, idx) names the exchange
`history[date][idx]`. A question whose label has no evidence is left out (counted).

Mapping: each user is a namespace (`mb-<lang>-<n>`, n the user's position in the file); each
exchange becomes two turns, the user's query (speaker: the user's name) and the response
(speaker "AI"); a day is a session (`<namespace>-<date>`), its turns numbered in order; a turn's
event time is that date at noon UTC plus the exchange's index in minutes (the response 30 s after
the query), so order holds. A question's evidence groups are its labelled exchanges, each the
pair of its turns: an exchange counts as found at k if either of its turns is in the top k. Every
question is asked the day after the user's last day, at noon UTC.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.dialogs import DAY, Turn
from bench.quality_data import Corpus, Probe

LANGS = {"cn": "zh", "en": "en"}  # the data's name → the report's
LABELS = Path(__file__).resolve().parent / "data" / "memorybank_evidence.json"


@dataclass
class MemoryBank:
    corpora: dict[str, Corpus] = field(default_factory=dict)  # "zh" / "en" → its corpus
    unlabelled: dict[str, int] = field(default_factory=dict)  # questions without evidence


def _noon(date: str) -> float:
    day = dt.datetime.strptime(date, "%Y-%m-%d").replace(tzinfo=dt.UTC, hour=12)
    return day.timestamp()


def turn_id(namespace: str, date: str, idx: int, side: str) -> str:
    """`side` "q" (the user's query) or "r" (the AI's response)."""
    return f"{namespace}/{date}/{idx}/{side}"


def load_language(
    bank: dict[str, Any], questions: dict[str, list[str]], labels: dict[str, Any], lang: str
) -> tuple[Corpus, int]:
    """One language: `bank` as memory_bank_<lang>.json, `questions` user → probing questions,
    `labels` user → [{"q", "evidence"}]. Users are matched by name, surrounding spaces ignored.
    Returns the corpus and the number of questions left out for want of evidence."""
    out = Corpus()
    asked = {name.strip(): qs for name, qs in questions.items()}
    labelled = {name.strip(): ls for name, ls in labels.items()}
    unlabelled = 0
    for n, (key, user) in enumerate(bank.items()):
        name = str(user.get("name") or key).strip()
        ns = f"mb-{lang}-{n:02d}"
        history: dict[str, list[dict[str, str]]] = user["history"]
        for date, exchanges in history.items():
            noon = _noon(date)
            for idx, ex in enumerate(exchanges):
                at = noon + 60.0 * idx
                sid = f"{ns}-{date}"
                out.turns.append(
                    Turn(turn_id(ns, date, idx, "q"), ns, sid, name, ex["query"], at, 2 * idx)
                )
                out.turns.append(
                    Turn(
                        turn_id(ns, date, idx, "r"),
                        ns,
                        sid,
                        "AI",
                        ex["response"],
                        at + 30.0,
                        2 * idx + 1,
                    )
                )
        as_of = max(_noon(d) for d in history) + DAY
        for label in labelled.get(name, []):
            evidence = [(str(d), int(i)) for d, i in label["evidence"]]
            if not evidence:
                unlabelled += 1
                continue
            for d, i in evidence:
                if not 0 <= i < len(history.get(d, [])):
                    raise ValueError(f"{lang} {name} q{label['q']}: no exchange {d}[{i}]")
            text = asked[name][int(label["q"])]
            groups = tuple((turn_id(ns, d, i, "q"), turn_id(ns, d, i, "r")) for d, i in evidence)
            out.probes.append(
                Probe(ns, "memorybank", text, groups, as_of, template=f"q{label['q']}")
            )
    return out, unlabelled


def load(root: Path, labels: Path = LABELS) -> MemoryBank:
    """Both languages from the data directory `root` and the evidence labels `labels`."""
    marks = json.loads(labels.read_text(encoding="utf-8"))
    if marks.get("format") != 1:
        raise ValueError(f"{labels}: unknown format {marks.get('format')!r}")
    out = MemoryBank()
    for lang, name in LANGS.items():
        bank = json.loads((root / lang / f"memory_bank_{lang}.json").read_text(encoding="utf-8"))
        questions: dict[str, list[str]] = {}
        lines = (root / lang / f"probing_questions_{lang}.jsonl").read_text(encoding="utf-8")
        for line in lines.splitlines():
            if line.strip():
                questions.update(json.loads(line))
        corpus, left_out = load_language(bank, questions, marks["languages"].get(lang, {}), lang)
        out.corpora[name] = corpus
        out.unlabelled[name] = left_out
    return out
