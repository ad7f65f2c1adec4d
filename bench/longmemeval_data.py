"""LongMemEval's development half (`../shared/data/longmemeval/`, see its README.md) as the
shapes of `bench.quality_data`: turns, and one probe per question.

The data: `dev_questions.json.gz` (a list of questions, each with its haystack: session ids and
their dates, "2023/05/30 (Tue) 23:40") and `dev_sessions.json.gz` (session id → turns
`{"role", "content", "has_answer"}`). MIT licence (the `LICENSE` beside the data).

Mapping: each question is a namespace of its own (`lme/<question_id>`) holding the turns of its
haystack. A turn is one document: its `content` as the text (no prefix), its role ("user" or
"assistant") as the speaker, its session id, its session's date as the event time (UTC), and its
index in the session (from 0). The question is asked at its `question_date`; its evidence is the
turns flagged `has_answer`, each a group of its own (`Probe.evidence`), so that recall_any and
recall_all count turns as LongMemEval does.

Kept apart, and counted:
- abstention questions (id ending in `_abs`): LongMemEval leaves them out of retrieval figures;
  their haystacks are not loaded;
- a session that recurs in one haystack (7 questions have one, never an evidence session): only
  its first occurrence is kept, as LongMemEval's turn ids `<session>_<n>` make the two one;
- turns with no words (5, never evidence; the server refuses an empty text), left out for every
  retriever; a turn longer than the server's text limit (32,768 characters; one turn) is cut
  there for every retriever;
- with `user_only`, the index holds user turns only (LongMemEval's own variant), and a question
  whose evidence turns are all the assistant's has nothing to find: it is left out of the figures.
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.dialogs import Turn
from bench.quality_data import Corpus, Probe
from bench.server_proc import ROOT

DATA = ROOT.parent / "shared" / "data" / "longmemeval"
QUESTIONS = "dev_questions.json.gz"
SESSIONS = "dev_sessions.json.gz"
TYPES = (
    "single-session-user",
    "single-session-assistant",
    "single-session-preference",
    "multi-session",
    "knowledge-update",
    "temporal-reasoning",
)
MAX_TEXT_CHARS = 32_768  # the server's default `limits.max_text_chars`
DATE_FORMAT = "%Y/%m/%d (%a) %H:%M"


class DataMissingError(Exception):
    """The data directory or one of its files is missing."""


@dataclass(frozen=True)
class Question:
    question_id: str
    question_type: str
    question: str
    question_date: str
    session_ids: tuple[str, ...]  # the haystack, in upstream order
    dates: tuple[str, ...]  # parallel to `session_ids`
    answer_session_ids: tuple[str, ...]

    @property
    def abstention(self) -> bool:
        return self.question_id.endswith("_abs")

    @property
    def namespace(self) -> str:
        return namespace(self.question_id)


@dataclass(frozen=True)
class RawTurn:
    role: str
    content: str
    has_answer: bool


@dataclass
class LongMemEval:
    questions: list[Question]
    sessions: dict[str, list[RawTurn]]


@dataclass
class Loaded:
    """A corpus of some questions' haystacks, and what was left out or changed on the way."""

    corpus: Corpus = field(default_factory=Corpus)
    question_of: dict[str, str] = field(default_factory=dict)  # namespace → question id
    left_out: Counter[str] = field(default_factory=Counter)  # reason → questions
    no_evidence: Counter[str] = field(default_factory=Counter)  # type → questions left out
    repeated_sessions: int = 0
    empty_turns: int = 0
    cut_turns: int = 0
    evidence_after_question: int = 0  # scored questions with evidence dated after the question


def namespace(question_id: str) -> str:
    return f"lme/{question_id}"


def parse_date(text: str) -> float:
    """ "2023/05/30 (Tue) 23:40" → seconds since the epoch, read as UTC."""
    return dt.datetime.strptime(text, DATE_FORMAT).replace(tzinfo=dt.UTC).timestamp()


def _question(q: dict[str, Any]) -> Question:
    return Question(
        question_id=str(q["question_id"]),
        question_type=str(q["question_type"]),
        question=str(q["question"]),
        question_date=str(q["question_date"]),
        session_ids=tuple(q["haystack_session_ids"]),
        dates=tuple(q["haystack_dates"]),
        answer_session_ids=tuple(q["answer_session_ids"]),
    )


def _check(path: Path, *names: str) -> None:
    missing = [name for name in names if not (path / name).is_file()]
    if missing:
        raise DataMissingError(
            f"LongMemEval data not found: {', '.join(str(path / m) for m in missing)} missing"
            " (see ../shared/data/longmemeval/README.md; pass --data PATH)"
        )


def read_questions(path: Path) -> list[Question]:
    _check(path, QUESTIONS)
    with gzip.open(path / QUESTIONS, "rt", encoding="utf-8") as fh:
        return [_question(q) for q in json.load(fh)]


def read(path: Path) -> LongMemEval:
    """The two files under `path`; `DataMissingError` says what is missing and where."""
    _check(path, QUESTIONS, SESSIONS)
    questions = read_questions(path)
    with gzip.open(path / SESSIONS, "rt", encoding="utf-8") as fh:
        raw: dict[str, list[dict[str, Any]]] = json.load(fh)
    sessions = {
        sid: [RawTurn(str(t["role"]), str(t["content"]), bool(t["has_answer"])) for t in turns]
        for sid, turns in raw.items()
    }
    return LongMemEval(questions, sessions)


def build(
    data: LongMemEval,
    questions: list[Question],
    user_only: bool = False,
    part: str = "",
) -> Loaded:
    """The turns and probes of `questions` (abstention ones left out, counted); each probe's
    `half` is `part` ("tune" or "report")."""
    out = Loaded()
    for q in questions:
        if q.abstention:
            out.left_out["abstention"] += 1
            continue
        ns, asked = q.namespace, parse_date(q.question_date)
        turns: list[Turn] = []
        evidence: list[str] = []
        late = False
        seen: set[str] = set()
        for sid, date in zip(q.session_ids, q.dates, strict=True):
            if sid in seen:
                out.repeated_sessions += 1
                continue
            seen.add(sid)
            when = parse_date(date)
            for i, t in enumerate(data.sessions[sid]):
                if user_only and t.role != "user":
                    continue
                if not t.content.strip():
                    out.empty_turns += 1
                    continue
                if len(t.content) > MAX_TEXT_CHARS:
                    out.cut_turns += 1
                turn_id = f"{ns}/{sid}/{i}"
                text = t.content[:MAX_TEXT_CHARS]
                turns.append(Turn(turn_id, ns, sid, t.role, text, when, i))
                if t.has_answer:
                    evidence.append(turn_id)
                    late = late or when > asked
        if not evidence:
            out.no_evidence[q.question_type] += 1
            out.left_out["no evidence turn in the index"] += 1
            continue  # nothing to find: its turns are not loaded either
        out.corpus.turns += turns
        out.evidence_after_question += late
        out.question_of[ns] = q.question_id
        out.corpus.probes.append(
            Probe(
                ns,
                q.question_type,
                q.question,
                tuple((e,) for e in evidence),
                asked,
                part,
            )
        )
    return out
