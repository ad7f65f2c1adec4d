"""The fixed split of LongMemEval's development half into a `tune` and a `report` part.

Rule (also written into the file's "about"): questions that share an evidence session, and a
question `X_abs` with its twin `X`, form one group. Groups are taken in the order of
sha256("longmemeval-split-1:" + the group's smallest question id); each goes to the part that
so far holds fewer scored (not abstention) questions of its type (the type of that smallest
id), `tune` on a tie. So both parts hold about half of every question type's scored questions,
and no evidence session is in both.

`python -m bench.longmemeval_split [--data PATH]` writes `bench/data/longmemeval_split.json`
(committed: the split does not move when the code does); `python -m bench longmemeval` reads it
and refuses data it does not cover.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from collections import defaultdict
from pathlib import Path

from bench.longmemeval_data import DATA, Question, read_questions

SEED = "longmemeval-split-1"
PARTS = ("tune", "report")
SPLIT = Path(__file__).resolve().parent / "data" / "longmemeval_split.json"
ABOUT = (
    "A fixed split of LongMemEval_S's development half (../shared/data/longmemeval/) into a"
    " `tune` part (the only one to tune pocketd on) and a `report` part (the headline). Questions"
    " that share an evidence session, and a question X_abs with its twin X, form one group. Groups"
    f" are taken in the order of sha256('{SEED}:' + the group's smallest question id); each goes"
    " to the part that so far holds fewer scored (not abstention) questions of its type (the type"
    " of that smallest id), `tune` on a tie. Written by `python -m bench.longmemeval_split`"
    " (bench/longmemeval_split.py)."
)


def groups(questions: list[Question]) -> list[list[Question]]:
    """Questions joined by a shared evidence session or as an `_abs` twin, each group sorted by
    id."""
    parent = {q.question_id: q.question_id for q in questions}

    def root(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def join(a: str, b: str) -> None:
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)

    first_with: dict[str, str] = {}
    for q in questions:
        for sid in q.answer_session_ids:
            join(q.question_id, first_with.setdefault(sid, q.question_id))
        twin = q.question_id.removesuffix("_abs")
        if q.abstention and twin in parent:
            join(q.question_id, twin)
    out: dict[str, list[Question]] = defaultdict(list)
    for q in sorted(questions, key=lambda q: q.question_id):
        out[root(q.question_id)].append(q)
    return list(out.values())


def order_key(question_id: str) -> str:
    return hashlib.sha256(f"{SEED}:{question_id}".encode()).hexdigest()


def split(questions: list[Question]) -> dict[str, str]:
    """Question id → part, by the rule above."""
    count: dict[tuple[str, str], int] = defaultdict(int)  # (type, part) → scored questions
    out: dict[str, str] = {}
    for g in sorted(groups(questions), key=lambda g: order_key(g[0].question_id)):
        kind = g[0].question_type
        part = min(PARTS, key=lambda p: (count[kind, p], PARTS.index(p)))
        count[kind, part] += sum(not q.abstention for q in g)
        out.update((q.question_id, part) for q in g)
    return out


def to_json(parts: dict[str, str]) -> str:
    body = {
        "about": ABOUT,
        "seed": SEED,
        **{p: sorted(q for q, x in parts.items() if x == p) for p in PARTS},
    }
    return json.dumps(body, indent=1) + "\n"


def load(path: Path = SPLIT) -> dict[str, str]:
    """Question id → part, from the committed file."""
    body = json.loads(path.read_text())
    return {q: p for p in PARTS for q in body[p]}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.longmemeval_split", description=__doc__)
    p.add_argument("--data", type=Path, default=DATA, help="the LongMemEval data directory")
    p.add_argument("--out", type=Path, default=SPLIT)
    ns = p.parse_args(argv)
    parts = split(read_questions(ns.data))
    ns.out.write_text(to_json(parts))
    print(f"wrote {ns.out}: " + ", ".join(f"{x} {list(parts.values()).count(x)}" for x in PARTS))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
