"""`python -m bench longmemeval`: turn-level evidence recall on LongMemEval's development half.

The data (`../shared/data/longmemeval/`, `--data PATH`; MIT licence): 249 questions of
LongMemEval_S (Wu et al., ICLR 2025), each with its own timestamped chat history of about 490
turns (the haystack) whose evidence turns are flagged. Real chats, written by others, never seen
while pocketd's defaults were chosen. `bench.longmemeval_data` says how a question becomes a
namespace of turns and a probe.

Parts: a fixed split (`bench/data/longmemeval_split.json`, its rule in `bench.longmemeval_split`)
into `tune` (the only part to tune pocketd on, in a later issue) and `report` (the headline).
No evidence session is in both parts.

Retrievers, every one over the same turns with the same fields (words as text; the role, "user"
or "assistant", as the speaker; the session's date as the event time; pocketd also the session
id and the turn's index, which no baseline reads); each question asked at its `question_date`:
- `pocketd`: a real `pocketd serve` on its defaults (`bench.quality_retrievers.Pocketd`): one
  RememberBatch per session, each turn an episode; a text-only Recall of the top 10 with
  `as_of` the question's date and `min_score` 0;
- the baselines of `bench.quality.baselines`, built as for `bench quality` (the named one
  `hybrid+fields`: the generic hybrid that also reads the speaker and date fields; `hybrid`,
  `bm25`, `dense` on the text only; `trivial`: the 10 most recent turns before the question);
- `ceiling`: the evidence pocketd still holds after its write gate and merging, first (an
  evidence turn counts as held if a stored memory maps to it): the best pocketd could reach;
- `oracle`: the evidence itself, first (recall_all falls short only where a question has more
  evidence turns than k).

Figures (`bench.longmemeval_score`): turn-level recall_any@k and recall_all@k, k = 5 and 10, per
question type and overall, in %, with n the questions each covers. Abstention questions are left
out, as LongMemEval does; with `--user-only` (LongMemEval's own index: user turns only) so is a
question whose evidence turns are all the assistant's. Both are counted.

What favours whom:
- pocketd reads the speaker and event time as fields; so does `hybrid+fields`; the other
  baselines read the words only. LongMemEval's questions are the user's ("When did I ...?"):
  they rarely name a speaker, and temporal ones name relative times ("two weeks ago"), which
  pocketd's time cues and `hybrid+fields` resolve against the question's date.
- pocketd's write gate may drop turns and merging may fold them: the ceiling row shows what
  that costs. A folded memory counts as its newest turn only (against pocketd).
- pocketd's defaults were developed on synthetic dialogs and MemoryBank, not on these data;
  the baselines use library defaults. Neither has seen the report part.
- The encoder cuts a text at 2,048 characters, in the server and in `dense` alike (many
  assistant turns are longer).
- 20 scored questions have evidence dated after their own question date (an upstream quirk;
  printed per part): `trivial` cannot return those turns (it reads the turns before the
  question); no other retriever filters by date.
- LongMemEval's published baseline figures use unstemmed BM25; `bm25` here stems and drops
  stopwords (the data's README gives the unstemmed figures on this half).

`--json PATH` writes {"parts": {part: {"figures": {retriever: {type: {metric: value, "n"}}},
"left_out": {...}}}, "together": {retriever: {metric: value, "n"}} (both parts, overall),
"per_question": {retriever: {question_id: {metric: 0|1}}}, "pocketd_import": {...}, ...}.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any

from bench.ablations import ABLATIONS, ablation_env, settings_env
from bench.longmemeval_data import DATA, TYPES, DataMissingError, Loaded, Question, build, read
from bench.longmemeval_score import METRICS, OVERALL, Figures, Hits, figures, hits
from bench.longmemeval_split import PARTS, SPLIT, load, order_key
from bench.quality_data import Corpus, Probe, Ranker
from bench.quality_retrievers import Ceiling, Oracle, Pocketd, baselines, import_summary

IMPORT_CHUNK = 10  # questions per progress line of pocketd's import
BASELINE_CHUNK = 20  # questions whose baselines are built (and encoded) at once
SHORT = {
    "single-session-user": "ss-user",
    "single-session-assistant": "ss-asst",
    "single-session-preference": "ss-pref",
    "multi-session": "multi",
    "knowledge-update": "k-update",
    "temporal-reasoning": "temporal",
    OVERALL: OVERALL,
}
ROWS = ("pocketd", "hybrid+fields", "hybrid", "bm25", "dense", "trivial", "ceiling", "oracle")
PerQuestion = dict[str, dict[str, Hits]]  # retriever → question id → hits


def log(msg: str) -> None:
    print(f"[longmemeval] {msg}", file=sys.stderr, flush=True)


def stratified(
    questions: list[Question], n: int, stratum: Callable[[Question], Hashable]
) -> list[Question]:
    """`n` of `questions` (abstention ones aside), each stratum's share kept (largest remainder),
    within a stratum in the split's hash order."""
    by: dict[Hashable, list[Question]] = defaultdict(list)
    for q in sorted(questions, key=lambda q: order_key(q.question_id)):
        if not q.abstention:
            by[stratum(q)].append(q)
    total = sum(len(v) for v in by.values())
    n = min(n, total)
    exact = {s: n * len(v) / total for s, v in by.items()}
    quota = {s: math.floor(x) for s, x in exact.items()}
    for s in sorted(exact, key=lambda s: quota[s] - exact[s])[: n - sum(quota.values())]:
        quota[s] += 1
    return [q for s, v in by.items() for q in v[: quota[s]]]


def subset(corpus: Corpus, namespaces: set[str]) -> Corpus:
    return Corpus(
        [t for t in corpus.turns if t.namespace in namespaces],
        [p for p in corpus.probes if p.namespace in namespaces],
    )


def chunks(corpus: Corpus, size: int) -> list[Corpus]:
    spaces = list(dict.fromkeys(p.namespace for p in corpus.probes))
    return [subset(corpus, set(spaces[i : i + size])) for i in range(0, len(spaces), size)]


def rank_all(rank: Ranker, probes: list[Probe], question_of: dict[str, str]) -> dict[str, Hits]:
    return {
        question_of[p.namespace]: hits(rank(p), (t for g in p.evidence for t in g)) for p in probes
    }


def _eta(t0: float, done: int, total: int) -> str:
    spent = time.perf_counter() - t0
    return (
        f"{done}/{total} questions, {spent:.0f} s, about {spent * (total - done) / done:.0f} s left"
    )


def run_pocketd(
    corpus: Corpus, question_of: dict[str, str], ns: argparse.Namespace
) -> dict[str, Any]:
    """pocketd, its ceiling and the oracle, per question; what the import did; and, per
    ablation (`bench.ablations`), pocketd served again from the same stored memories with one
    mechanism turned off. With `--store DIR` the import is kept in DIR and, when DIR already
    holds one, read from there."""
    work = ns.store or Path(tempfile.mkdtemp(prefix="pocketd-longmemeval-"))
    env = settings_env(ns.set)
    pd = Pocketd(work=work, config=ns.config, env=env)
    totals: dict[str, float] = defaultdict(float)
    try:
        if pd.saved:
            log(f"pocketd: serving the import saved in {work}")
            pd.load()
            totals.update(pd.imports["longmemeval"])
        else:
            log(f"pocketd: importing {len(corpus.turns)} turns")
            t0, done = time.perf_counter(), 0
            for part in chunks(corpus, IMPORT_CHUNK):
                pd.add(part, "longmemeval")
                for k, v in pd.imports["longmemeval"].items():
                    totals[k] += v
                done += len(part.probes)
                log(f"pocketd import: {_eta(t0, done, len(corpus.probes))}")
            pd.imports["longmemeval"] = dict(totals)
            pd.save()
        per: PerQuestion = {
            "pocketd": rank_all(pd.ranker("longmemeval"), corpus.probes, question_of)
        }
        per["ceiling"] = rank_all(Ceiling(pd.held), corpus.probes, question_of)
        per["oracle"] = rank_all(Oracle(), corpus.probes, question_of)
        short = pd.short_lists["longmemeval"]
        for name, off in [] if ns.no_ablations else ABLATIONS:
            log(f"pocketd {name}: serving the same memories again")
            pd.reopen({**env, **ablation_env(off)})
            per[name] = rank_all(pd.ranker("longmemeval"), corpus.probes, question_of)
        imp = dict(totals)  # sums over the chunks; the rate is recomputed from them
        imp["turns_per_second"] = imp["turns"] / imp["seconds"] if imp["seconds"] else 0.0
        return {"per_question": per, "import": imp, "short_lists": short}
    finally:
        pd.close()
        if ns.store is None and not ns.keep:
            shutil.rmtree(work, ignore_errors=True)


def run_baselines(corpus: Corpus, question_of: dict[str, str], info: dict[str, Any]) -> PerQuestion:
    """Each baseline, per question; built over `BASELINE_CHUNK` questions at a time."""
    per: PerQuestion = defaultdict(dict)
    t0, parts = time.perf_counter(), chunks(corpus, BASELINE_CHUNK)
    done = 0
    for part in parts:
        for name, rank in baselines(part, info).items():
            per[name].update(rank_all(rank, part.probes, question_of))
        done += len(part.probes)
        log(f"baselines: {_eta(t0, done, len(corpus.probes))}")
    return dict(per)


def choose(
    questions: list[Question], part_of: dict[str, str], ns: argparse.Namespace
) -> dict[str, list[Question]]:
    """Per part asked for, its questions (with `--questions N`, a subset stratified by part and
    type)."""
    parts = PARTS if ns.part == "all" else (ns.part,)
    unknown = [q.question_id for q in questions if q.question_id not in part_of]
    if unknown:
        raise SystemExit(
            f"{len(unknown)} questions are in no part of the committed split (e.g. {unknown[0]}):"
            " not the data the split was made from"
        )
    chosen = [q for q in questions if part_of[q.question_id] in parts]
    if ns.questions is not None:
        chosen = stratified(
            chosen, ns.questions, lambda q: (part_of[q.question_id], q.question_type)
        )
    return {p: [q for q in chosen if part_of[q.question_id] == p] for p in parts}


def run(ns: argparse.Namespace) -> dict[str, Any]:
    try:
        log(f"reading {ns.data}")
        data = read(ns.data)
    except DataMissingError as exc:
        raise SystemExit(str(exc)) from exc
    part_of = load(ns.split)
    loaded: dict[str, Loaded] = {
        part: build(data, qs, ns.user_only, part)
        for part, qs in choose(data.questions, part_of, ns).items()
    }
    corpus = Corpus(
        [t for x in loaded.values() for t in x.corpus.turns],
        [p for x in loaded.values() for p in x.corpus.probes],
    )
    question_of = {ns_: q for x in loaded.values() for ns_, q in x.question_of.items()}
    log(f"{len(corpus.turns)} turns, {len(corpus.probes)} questions scored")
    t0 = time.perf_counter()
    pd = run_pocketd(corpus, question_of, ns)
    info: dict[str, Any] = {}
    per: PerQuestion = dict(pd["per_question"])
    if not ns.pocketd_only:
        per.update(run_baselines(corpus, question_of, info))
    type_of = {question_of[p.namespace]: p.kind for p in corpus.probes}
    parts: dict[str, Any] = {}
    for part, x in loaded.items():
        ids = set(x.question_of.values())
        parts[part] = {
            "figures": {
                r: figures({q: h for q, h in per[r].items() if q in ids}, type_of) for r in per
            },
            "left_out": dict(x.left_out),
            "no_evidence_by_type": dict(x.no_evidence),
            "evidence_after_question": x.evidence_after_question,
            "repeated_sessions": x.repeated_sessions,
            "empty_turns": x.empty_turns,
            "cut_turns": x.cut_turns,
        }
    return {
        "data": str(ns.data),
        "user_only": ns.user_only,
        "together": {r: figures(per[r], type_of)[OVERALL] for r in per},
        "turns": len(corpus.turns),
        "seconds": time.perf_counter() - t0,
        "dense_encoder": info.get("dense_encoder", "?"),
        "parts": parts,
        "pocketd_import": pd["import"],
        "pocketd_short_lists": pd["short_lists"],
        "per_question": per,
    }


def _rows(by_retriever: dict[str, Any]) -> list[str]:
    return [r for r in ROWS if r in by_retriever] + sorted(set(by_retriever) - set(ROWS))


def _table(figs: dict[str, Figures], metric: str) -> list[str]:
    groups = [t for t in (*TYPES, OVERALL) if any(t in f for f in figs.values())]
    rows = _rows(figs)
    n = figs[rows[0]]
    lines = [f"{metric:<15}" + "".join(f"{SHORT[g]:>10}" for g in groups)]
    lines.append(f"{'n':<15}" + "".join(f"{n[g]['n']:>10.0f}" for g in groups))
    for r in rows:
        lines.append(f"{r:<15}" + "".join(f"{100 * figs[r][g][metric]:>10.1f}" for g in groups))
    return lines


def report(r: dict[str, Any]) -> str:
    docs = "user turns only" if r["user_only"] else "user and assistant turns"
    lines = [f"LongMemEval_S development half, turn level, documents: {docs}; recall in %"]
    for part in ("report", "tune"):
        if part not in r["parts"]:
            continue
        x = r["parts"][part]
        title = "REPORT part (the headline)" if part == "report" else "tune part (TUNING ONLY)"
        left = ", ".join(f"{k}: {v}" for k, v in x["left_out"].items()) or "none"
        lines += ["", f"{title}; left out: {left}"]
        for metric in METRICS:
            lines += _table(x["figures"], metric)
        lines.append(
            f"questions with evidence dated after the question: {x['evidence_after_question']};"
            f" repeated sessions dropped: {x['repeated_sessions']}; empty turns left out:"
            f" {x['empty_turns']}; turns cut at 32,768 characters: {x['cut_turns']}"
        )
    if len(r["parts"]) > 1:
        lines += ["", "both parts together, overall (the data README's BM25 figures are on these)"]
        lines.append(f"{'':<15}" + "".join(f"{m:>10}" for m in ("n", *METRICS)))
        for name in _rows(r["together"]):
            f = r["together"][name]
            cells = f"{f['n']:>10.0f}" + "".join(f"{100 * f[m]:>10.1f}" for m in METRICS)
            lines.append(f"{name:<15}{cells}")
    imp = r["pocketd_import"]
    lines += [
        "",
        f"dense and hybrid encoder: {r['dense_encoder']}",
        f"pocketd import: {import_summary(imp)}",
        f"pocketd recalls with fewer than 10 hits: {r['pocketd_short_lists']}",
        f"{r['turns']} turns; wall time {r['seconds']:.0f} s",
    ]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(
        prog="python -m bench longmemeval",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--data", type=Path, default=DATA, help="the LongMemEval data directory")
    p.add_argument("--split", type=Path, default=SPLIT, help="the committed tune/report split")
    p.add_argument(
        "--questions", type=int, help="a subset of N questions, stratified by part and type"
    )
    p.add_argument("--part", choices=(*PARTS, "all"), default="all")
    p.add_argument("--user-only", action="store_true", help="index user turns only")
    p.add_argument("--json", type=Path, help="also write the figures here")
    p.add_argument("--keep", action="store_true", help="keep the server's data directory")
    p.add_argument(
        "--store",
        type=Path,
        help="keep pocketd's import in this directory, or serve the one it already holds",
    )
    p.add_argument("--config", type=Path, help="a pocketd config file for the server")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="SECTION.KEY=VALUE",
        help="a pocketd setting for the server (repeatable), e.g."
        " memory.hybrid_search.role_boost=0.2",
    )
    p.add_argument("--pocketd-only", action="store_true", help="no baselines")
    p.add_argument("--no-ablations", action="store_true", help="no ablation rows")
    ns = p.parse_args(argv)
    r = run(ns)
    print(report(r))
    if ns.json:
        ns.json.parent.mkdir(parents=True, exist_ok=True)
        ns.json.write_text(json.dumps(r, indent=1) + "\n")
    return 0
