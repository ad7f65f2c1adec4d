"""`python -m bench update [--half tune|report] [--json PATH] [--rows pocketd,off,hybrid]`: facts
that change, in Chinese and English: does the newest value rank first, is the old one still
found when asked about the past, and does pocketd mark only what really changed?

The set (`bench.update_data`): written blind, two halves on disjoint topics; per language and
half, one user's memory in one namespace holding every case's old and new statement and 150
unrelated distractors, said over one year (each statement at its own `occurred_at`, speaker
"user", the case's kind; the distractors as facts), written one Remember at a time in time order,
as an agent would while talking. Every question is asked `as_of` the end of that year. One
namespace for all 80 cases, not one per case: the harder and the more real choice (a new value
competes with every other fact of the user, and supersession can go wrong across cases).

Rows, each given the same statements and the same questions:
- `pocketd`: a real `pocketd serve` on its defaults (supersession without ids on), one namespace
  per language; a text-only Recall of the top 10 with `min_score` 0, past questions with
  `include_obsolete`;
- `pocketd off`: the same with `memory.lifecycle.supersede.enabled: false` (nothing is marked
  obsolete without an id, and the ranking's "newer value of a slot first" is off too);
- `off + newer2`: the trivial rule over `pocketd off`'s rankings: of its top 2, the one said later
  goes first;
- `hybrid`: what an afternoon's build would do (`bench.bilingual_rankers`): bm25s over stemmed,
  stopword-free terms (jieba for Chinese) and exact cosine over the server's own encoder,
  min-max fused 0.5/0.5, every statement current; `hybrid + newer2`: the trivial rule on it;
- `oracle`: the asked-for statement first (the ceiling).

Figures (`bench.update_score`): for update pairs, current questions with the new value first
(`current r1`) and in the top 3 above the old one (`current top3>old`, the issue's outside check:
≥ 0.95 per language), past questions with the old value in the top 5 (`past top5`, ≥ 0.90);
for coexist pairs, the new statement in the top 3 (`coexist top3`) and the old one found in the
top 5 by its own words (`own top5`). For each pocketd row, what it marked obsolete (read through
Get): recall over update pairs, coexist pairs kept current, precision over every mark, and the
marks per reason code.

Only `--half tune` may be used to choose settings: `--set KEY=VALUE` (a server setting for both
pocketd rows, e.g. `memory.lifecycle.supersede.cosine=0.45`) and `--misses` (print the questions
pocketd got wrong) are refused with `--half report`.

`--json PATH` writes {"half", "settings", "rows": {row: {lang: {figure: value}}}, "supersession":
{row: {lang: {...}}}, "decisions": {row: {lang: {decision: count}}}}.
"""

from __future__ import annotations

# onnxruntime first: importing tantivy (bench.textproc) before it can crash its import.
from bench.bilingual import Serve, served  # isort: skip

import argparse
import json
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.bilingual_data import Memory, Question
from bench.bilingual_rankers import BM25, Dense, Symmetric
from bench.encoder import bench_encoder
from bench.quality_retrievers import Hybrid, wait_indexed
from bench.update_data import LANGS, Probe, UpdateSet, load
from bench.update_score import (
    FIGURES,
    HEADLINE,
    Mark,
    Ranking,
    figures,
    hit,
    newer_first,
    supersession,
)
from pocketd import Client

DEPTH = 10  # each row's ranking: enough for a top 5 and for where the old value lies
ROWS = ("pocketd", "off", "hybrid")  # what --rows chooses among (the others follow from them)
OFF_ENV = {"POCKETD__MEMORY__LIFECYCLE__SUPERSEDE__ENABLED": "false"}
TUNING_FLAGS = ("--set", "--misses")

Rankings = dict[str, Ranking]  # probe key → items, best first
Ranker = Callable[[Probe], Ranking]


def log(msg: str) -> None:
    print(f"[update] {msg}", file=sys.stderr, flush=True)


def namespace(s: UpdateSet) -> str:
    return f"update-{s.half}-{s.lang}"


class PocketdUser:
    """One user's memory in a pocketd namespace: each statement one Remember, in time order.
    `owner` maps a memory id to the item whose words it holds (a merge overwrites them with the
    newest: the earlier item is then held by no memory)."""

    def __init__(self, client: Client, s: UpdateSet) -> None:
        self.client, self.s, self.ns = client, s, namespace(s)
        self.owner: dict[str, str] = {}
        self.decisions: Counter[str] = Counter()
        t0 = time.perf_counter()
        for st in s.statements:
            r = client.remember(self.ns, st.text, kind=st.kind, speaker="user", occurred_at=st.at)
            self.decisions[r.decision] += 1
            if r.stored:
                self.owner[r.memory_id] = st.item
        log(f"  {self.ns}: {len(s.statements)} remembered in {time.perf_counter() - t0:.1f} s:"
            f" {dict(self.decisions)}")  # fmt: skip

    def __call__(self, p: Probe) -> Ranking:
        hits = self.client.recall(
            self.ns,
            p.text,
            top_k=DEPTH,
            min_score=0.0,
            as_of=self.s.as_of,
            include_obsolete=p.include_obsolete,
        ).hits
        return [self.owner.get(h.memory.memory_id, "?") for h in hits]

    def marks(self) -> list[Mark]:
        """Every memory obsolete now, read through Get, with its successor's item and reason."""
        out: list[Mark] = []
        for mid, item in self.owner.items():
            m = self.client.get(self.ns, mid)
            if m.obsolete:
                out.append(Mark(item, self.owner.get(m.superseded_by, "?"), m.supersede_reason))
        return out


def rank_all(rank: Ranker, probes: Sequence[Probe]) -> Rankings:
    return {p.key: rank(p) for p in probes}


def run_pocketd(
    env: dict[str, str], sets: dict[str, UpdateSet], serve: Serve = served
) -> tuple[dict[str, Rankings], dict[str, dict[str, Any]], dict[str, dict[str, int]]]:
    """One server with `env`, one namespace per language: per language, the rankings, what it
    marked (`bench.update_score.supersession`) and the write decisions."""
    rankings: dict[str, Rankings] = {}
    marked: dict[str, dict[str, Any]] = {}
    decisions: dict[str, dict[str, int]] = {}
    with serve(env) as client:
        users = {lang: PocketdUser(client, s) for lang, s in sets.items()}
        log(f"  indexes caught up after {wait_indexed(client, 120.0):.1f} s")
        for lang, u in users.items():
            rankings[lang] = rank_all(u, sets[lang].probes)
            marked[lang] = supersession(sets[lang].cases, u.marks())
            decisions[lang] = dict(u.decisions)
    return rankings, marked, decisions


def hybrid_ranker(s: UpdateSet, dense_encoder: Symmetric) -> Ranker:
    """`bench.quality_retrievers.Hybrid` over bm25s and exact cosine of the set's statements."""
    memories = [Memory(st.item, st.text) for st in s.statements]
    fused: Hybrid[Question] = Hybrid(BM25(memories), Dense(dense_encoder, memories))

    def rank(p: Probe) -> Ranking:
        return fused(Question(p.group, p.text, p.target))[:DEPTH]

    return rank


def oracle(p: Probe) -> Ranking:
    return [p.target]


def environment(settings: dict[str, str]) -> dict[str, str]:
    """`memory.lifecycle.supersede.cosine` → `POCKETD__MEMORY__LIFECYCLE__SUPERSEDE__COSINE`."""
    return {"POCKETD__" + k.upper().replace(".", "__"): v for k, v in settings.items()}


def run(half: str, rows: Sequence[str], settings: dict[str, str]) -> dict[str, Any]:
    sets = load(half)
    for lang, s in sets.items():
        log(f"{half}/{lang}: {len(s.cases)} cases, {len(s.statements)} statements,"
            f" {len(s.probes)} questions")  # fmt: skip
    env = environment(settings)
    per: dict[str, dict[str, Rankings]] = {}
    marked: dict[str, dict[str, dict[str, Any]]] = {}
    decisions: dict[str, dict[str, dict[str, int]]] = {}
    for row, row_env in (("pocketd", env), ("off", {**env, **OFF_ENV})):
        if row in rows:
            name = "pocketd" if row == "pocketd" else "pocketd off"
            log(f"{name}: starting a server ({row_env or 'defaults'})")
            per[name], marked[name], decisions[name] = run_pocketd(row_env, sets)
    if "pocketd off" in per:
        per["off + newer2"] = _newer_first(per["pocketd off"], sets)
    if "hybrid" in rows:
        enc = Symmetric("use-m3", bench_encoder())
        per["hybrid"] = {
            lang: rank_all(hybrid_ranker(s, enc), s.probes) for lang, s in sets.items()
        }
        per["hybrid + newer2"] = _newer_first(per["hybrid"], sets)
    per["oracle"] = {lang: rank_all(oracle, s.probes) for lang, s in sets.items()}
    return {
        "half": half,
        "settings": settings,
        "rows": {
            row: {lang: figures(sets[lang].probes, r[lang]) for lang in sets}
            for row, r in per.items()
        },
        "supersession": marked,
        "decisions": decisions,
        "rankings": per,
        "sets": sets,
    }


def _newer_first(per_lang: dict[str, Rankings], sets: dict[str, UpdateSet]) -> dict[str, Rankings]:
    return {lang: newer_first(s.probes, per_lang[lang], s.born) for lang, s in sets.items()}


def table(out: dict[str, Any]) -> str:
    rows: dict[str, dict[str, dict[str, float]]] = out["rows"]
    names = list(rows)
    width = max(16, *(len(n) + 2 for n in names))
    lines: list[str] = []
    for lang in LANGS:
        f0 = rows[names[0]][lang]
        lines.append(
            f"{lang} ({out['half']} half): {int(f0['n current'])} current and"
            f" {int(f0['n past'])} past questions of the updates,"
            f" {int(f0['n coexist'])} questions and {int(f0['n own'])} old statements of the"
            " coexist pairs"
        )
        lines.append(f"{'':<22}" + "".join(f"{n:>{width}}" for n in names))
        for fig in FIGURES:
            mark = " *" if fig == HEADLINE else ""
            lines.append(
                f"{fig + mark:<22}" + "".join(f"{rows[n][lang][fig]:>{width}.3f}" for n in names)
            )
        for row, by_lang in out["supersession"].items():
            sup = by_lang[lang]
            if not sup["marks"]:
                lines.append(f"{row}: marked nothing obsolete")
                continue
            lines.append(
                f"{row}: supersession recall {sup['update recall']:.3f} (updates marked, naming"
                f" their new value), coexist kept {sup['coexist kept']:.3f}, precision"
                f" {sup['precision']:.3f} of {sup['marks']} marks; right {sup['right by reason']},"
                f" wrong {sup['wrong by reason']} on {sup['wrong by what']}"
            )
        for row, by_lang in out["decisions"].items():
            lines.append(f"{row}: writes {by_lang[lang]}")
        lines.append("")
    lines.append("* the outside check: the new value in the top 3 and above the old (≥ 0.95)")
    return "\n".join(lines)


def misses(out: dict[str, Any], row: str = "pocketd") -> str:
    """The questions `row` got wrong on its headline and past figures (tuning only)."""
    lines: list[str] = []
    for lang, s in out["sets"].items():
        texts = {st.item: st.text for st in s.statements}
        got = out["rankings"][row][lang]
        for p in s.probes:
            if p.group not in ("current", "past"):
                continue
            measure = FIGURES[HEADLINE if p.group == "current" else "past top5"][1]
            if not hit(p, got[p.key], measure):
                top = " | ".join(f"{i}={texts.get(i, i)[:40]}" for i in got[p.key][:3])
                lines.append(f"{lang} {p.key} {p.text!r}: want {texts[p.target]!r}; got {top}")
    return "\n".join(lines)


def parse(argv: Sequence[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m bench update", description=__doc__.split("\n")[0])
    ap.add_argument("--half", choices=("tune", "report"), default="report")
    ap.add_argument("--json", type=Path, help="write the figures here")
    ap.add_argument("--rows", default=",".join(ROWS), help=f"a subset of {','.join(ROWS)}")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a server setting for the pocketd rows (tune half only)")  # fmt: skip
    ap.add_argument("--misses", action="store_true", help="print pocketd's misses (tune only)")
    ns = ap.parse_args(argv)
    rows = [r for r in ns.rows.split(",") if r]
    if set(rows) - set(ROWS):
        ap.error(f"--rows: {sorted(set(rows) - set(ROWS))} not in {ROWS}")
    ns.rows = rows
    if ns.half == "report" and (ns.set or ns.misses):
        ap.error(f"{'/'.join(TUNING_FLAGS)} choose settings: the tune half only")
    pairs = [s.split("=", 1) for s in ns.set]
    if any(len(p) != 2 or not p[0] for p in pairs):
        ap.error("--set takes KEY=VALUE")
    ns.settings = {k: v for k, v in pairs}
    return ns


def main(argv: Sequence[str]) -> int:
    ns = parse(argv)
    t0 = time.perf_counter()
    out = run(ns.half, ns.rows, ns.settings)
    print(table(out))
    if ns.misses and "pocketd" in out["rankings"]:
        print(misses(out))
    log(f"done in {time.perf_counter() - t0:.0f} s")
    if ns.json:
        ns.json.parent.mkdir(parents=True, exist_ok=True)
        keep = {k: out[k] for k in ("half", "settings", "rows", "supersession", "decisions")}
        ns.json.write_text(json.dumps(keep, indent=2, ensure_ascii=False), encoding="utf-8")
    return 0
