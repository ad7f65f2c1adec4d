"""`python -m bench quality`: how well each retriever ranks the evidence of memory questions.

Two workloads, the same inputs for every retriever: per turn, its words as text, and its speaker
and event time as fields (pocketd also gets the session id and the position in the session):
- the synthetic dialogs of `bench.dialogs` (English and Chinese, two speakers, many sessions,
  five question types), in two corpora of their own: the `tune` half (seed 1, `--tune-seed`,
  asked in the tune templates only) and the `report` half (seed 2, `--seed`, asked in the report
  templates only). The halves share no conversation, speaker, identifier or question wording,
  and no fact value: each draws its jobs, cities, pets, instruments, events and items from its
  own share of the generator's pools (`bench.dialogs.for_half`), so no evidence sentence of one
  half is said in the other. They share the phrasings the facts are told in ("I work as a {job}
  now, ...") and the small talk. The report half is the headline; the tune half is the only one
  to tune against;
- MemoryBank (`bench.memorybank`: real exchanges of 15 users with an AI companion, in Chinese
  and in English, with evidence labels kept in `bench/data/memorybank_evidence.json`). A
  DEVELOPMENT set, not a held-out one: pocketd's weights were chosen on it, and its English is
  the Chinese translated (not a held-out language).

Retrievers:
- `pocketd`: a real `pocketd serve` on its defaults (no setting overridden, the default
  encoder). Each session is one RememberBatch of episodes: the words as the text, the speaker,
  session id, event time and position in the session as fields; the write gate and merging decide
  what is kept. Each question is a text-only Recall of the top 10 with `as_of` just after the
  conversation and `min_score` 0 (no relevance floor cutting the list).
- `hybrid+fields`: the named baseline, what a competent engineer builds in an afternoon with the
  same inputs: `hybrid` below, plus a fixed +0.5 to the turns of a speaker the question names and
  +0.5 to the turns on a day or month it names ("May 2nd", "5月2日", "last week" against its
  `as_of`; the rules in `bench.quality_fields`, written without pocketd's code, not tuned).
- `hybrid`: the generic hybrid over the words alone, untuned: `bm25` and `dense` below, each
  min-max normalised over its own top 100, fused 0.5/0.5.
- `bm25`: bm25s (k1 1.5, b 0.75) over `bench.textproc.tokenize` of the words: English stemmed
  (Snowball) without stopwords (NLTK's list), Chinese segmented by jieba without function words.
- `dense`: exact cosine over the server's default encoder's vectors (`bench.encoder`) of the
  words (pocketd encodes the words alone too: `memory.embed_speaker` is off by default).
- `trivial`: no retrieval: the conversation's 10 most recent turns, newest first. Where it scores
  well, the workload rewards recency, not retrieval.
- `ceiling`: the evidence pocketd still holds after its write gate and merging, first (an
  evidence turn is held when a stored memory maps to it; a merged memory maps to its newest
  turn): the best R@k pocketd could reach. Where pocketd's row is near it, the loss is the gate's.
- `oracle`: the evidence itself, first: the best R@k any retriever can reach.

Figures: R@k is the share of a question's evidence found in the top k, averaged over questions.
On the dialogs the evidence is turns; on MemoryBank it is exchanges (a user's message and the AI's
reply), found if either turn is in the top k. A type where `bm25` reaches R@5 ≥ 0.95 on a half is
saturated there: it is listed, and left out of that half's "overall" (over questions) and "macro"
(the mean over types), since it cannot tell retrievers apart. Each half's overall questions are
also split into those that name a date (`bench.quality_fields.named_dates`: a day, a month or a
relative day) and those that do not; MemoryBank's likewise.

What favours whom:
- Both sides get the speaker and the event time as fields; only `pocketd` and `hybrid+fields`
  read them. pocketd reads them its own way (a keyword field of the speaker's name and the event
  date, recency, time cues); `hybrid+fields` with two fixed boosts. `hybrid`, `bm25` and `dense`
  see the words only: they show what the fields are worth, not a fair opponent.
- Leakage in pocketd's favour: pocketd's `retrieval.when_cues` (server/core/settings.py) was
  written after the report templates and holds phrasings that only report templates use
  (computed at run time, listed in the output: "what day", "which date", "how long ago").
  The report half's temporal questions that contain one are split out; read the other row.
- pocketd may drop turns (the write gate) and fold identical turns of a session into one memory
  (merging); the `ceiling` row shows what that costs. A folded memory counts as its newest turn
  only: that is against pocketd. Drops and folds are reported.
- The dated/undated split is the named baseline's own date parser
  (`bench.quality_fields.named_dates`, the rules `hybrid+fields` boosts by): a question whose
  date phrasing only pocketd recognises counts as undated, and the dated row holds exactly the
  questions in which `hybrid+fields` finds a date to boost by.
- pocketd's defaults were developed on this generator's tune templates (over the old shared
  corpus, drawn from the original pools, about half of each half's share today; the entries
  added since the pools were split are new to both) and on MemoryBank (zh, then en): read the
  report half as the fair comparison and MemoryBank as development figures. The baselines use
  library defaults and untuned boosts.
- Recall runs on the steady state: the bench waits for the server's indexes to catch up first.

`--json PATH` writes {"generator": {"seeds": {"report", "tune"}, "report": {retriever: {row:
{"r5", "r10", "questions"}}}, "tune": {...}, "saturated": [...], "saturated_tune": [...],
"report_only_when_cues": [...]}, "memorybank": {"zh": {retriever: {"all" | "dated" | "undated":
{"r5", "r10", "questions"}}}, "en": {...}}, "pocketd_import": {...}}; a row is a type,
"overall", "macro", or one of `SPLITS`.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import longmemeval
from bench.ablations import ABLATIONS, Workload, ablate
from bench.dialogs import HALVES, TEMPLATES, TYPES, generate
from bench.longmemeval_data import DATA as LME_DATA
from bench.longmemeval_split import SPLIT as LME_SPLIT
from bench.memorybank import LABELS, MemoryBank, load
from bench.quality_data import (
    Corpus,
    Figures,
    Probe,
    Ranker,
    from_dialogs,
    memo,
    pooled,
    score,
)
from bench.quality_fields import named_dates
from bench.quality_retrievers import (
    Ceiling,
    Oracle,
    Pocketd,
    baselines,
    import_summary,
    log,
)
from bench.server_proc import ROOT
from server.core.settings import DecaySettings

REPORT_SEED = 2
TUNE_SEED = 1
RETRIEVERS = (
    "pocketd",
    "hybrid+fields",
    "hybrid",
    "bm25",
    "dense",
    "trivial",
    "ceiling",
    "oracle",
)
SATURATED_AT = 0.95  # bm25 R@5 at or above which a type is left out of "overall"
MEMORYBANK = ROOT.parent / "shared" / "data" / "memorybank"
# The rows each half's overall questions are split into (after the types, overall and macro).
SPLITS = (
    "dated",
    "undated",
    "temporal: leaky cue",
    "temporal: no leaky cue",
    "overall: no leaky cue",
)


def report_only_when_cues() -> tuple[str, ...]:
    """pocketd's `when_cues` that some report template's wording holds and no tune template's:
    the leakage in pocketd's favour."""

    def forms(half: str) -> list[str]:
        return [f.lower() for t in TEMPLATES if t.half == half for f in (*t.en, *t.zh)]

    tune, report = forms("tune"), forms("report")
    return tuple(
        c
        for c in DecaySettings().when_cues
        if any(c in f for f in report) and not any(c in f for f in tune)
    )


def dialog_halves(
    report_seed: int, tune_seed: int, conversations: int, sessions: int
) -> dict[str, Corpus]:
    """Each half a corpus of its own: the report half at `report_seed` in the report templates,
    the tune half at `tune_seed` in the tune templates."""
    if report_seed == tune_seed:
        raise ValueError("the tune and report halves need different seeds")
    seeds = {"report": report_seed, "tune": tune_seed}
    return {h: from_dialogs(generate(seeds[h], conversations, sessions, h)) for h in HALVES}


def names_date(p: Probe) -> bool:
    return bool(named_dates(p.text, p.as_of))


def saturated(figures: dict[str, Figures]) -> list[str]:
    """The types where `bm25` R@5 ≥ 0.95: they cannot tell retrievers apart."""
    bm25 = figures["bm25"]
    return [t for t in TYPES if t in bm25 and bm25[t]["r5"] >= SATURATED_AT]


def _splits(kept: list[str], cues: tuple[str, ...]) -> Callable[[Probe], list[str]]:
    """The `SPLITS` rows a probe of a kept type belongs to."""

    def rows(p: Probe) -> list[str]:
        if p.kind not in kept:
            return []
        leaky = any(c in p.text.lower() for c in cues)
        out = ["dated" if names_date(p) else "undated"]
        if p.kind == "temporal":
            out.append("temporal: leaky cue" if leaky else "temporal: no leaky cue")
        if not leaky:
            out.append("overall: no leaky cue")
        return out

    return rows


def half_figures(
    probes: list[Probe], rankers: dict[str, Ranker], cues: tuple[str, ...]
) -> tuple[dict[str, Figures], list[str]]:
    """Per retriever: per type, then "overall" and "macro" over the types that are not
    saturated, then the `SPLITS` of those types' questions."""
    out: dict[str, Figures] = {}
    ranked = {name: memo(rank) for name, rank in rankers.items()}
    for name, rank in ranked.items():
        log(f"  {name}: {len(probes)} questions")
        out[name] = score(probes, rank, lambda p: p.kind)
    sat = saturated(out)
    kept = [t for t in TYPES if t not in sat]
    rows = _splits(kept, cues)
    member = {p: rows(p) for p in probes}
    for name, figs in out.items():
        figs["overall"] = pooled(figs, kept)
        figs["macro"] = pooled(figs, kept, macro=True)
        for split in SPLITS:
            chosen = [p for p in probes if split in member[p]]
            figs[split] = score(chosen, ranked[name], lambda p: "all").get("all", pooled({}, []))
    return out, sat


def memorybank_figures(corpus: Corpus, rankers: dict[str, Ranker]) -> dict[str, Figures]:
    """Per retriever: "all" the labelled questions, and those that name a date or not."""
    out: dict[str, Figures] = {}
    for name, rank in rankers.items():
        ranked = memo(rank)
        figs = score(corpus.probes, ranked, lambda p: "all")
        split = score(corpus.probes, ranked, lambda p: "dated" if names_date(p) else "undated")
        out[name] = {**figs, **{k: split.get(k, pooled({}, [])) for k in ("dated", "undated")}}
    return out


def _load_memorybank(ns: argparse.Namespace) -> MemoryBank | None:
    if ns.skip_memorybank:
        return None
    if not ns.labels.exists():
        if ns.only_memorybank:
            raise SystemExit(f"no MemoryBank evidence labels at {ns.labels}")
        log(f"no MemoryBank evidence labels at {ns.labels}: MemoryBank skipped")
        return None
    bank = load(ns.memorybank, ns.labels)
    for lang, c in bank.corpora.items():
        log(
            f"memorybank {lang}: {len(c.turns)} turns, {len(c.probes)} labelled questions"
            f" ({bank.unlabelled[lang]} without evidence left out)"
        )
    return bank


def run(ns: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {}
    bank = _load_memorybank(ns)
    halves: dict[str, Corpus] = {}
    if not ns.only_memorybank:
        log(
            f"generating the report half at seed {ns.seed}, the tune half at seed"
            f" {ns.tune_seed}: {ns.conversations} conversations of {ns.sessions} sessions each"
        )
        halves = dialog_halves(ns.seed, ns.tune_seed, ns.conversations, ns.sessions)
        results["turns"] = {h: len(c.turns) for h, c in halves.items()}
    log("pocketd: starting a server on its defaults")
    pd = Pocketd(keep=ns.keep)
    workloads: list[Workload] = []
    try:
        if halves:
            cues = report_only_when_cues()
            gen: dict[str, Any] = {
                "seeds": {"report": ns.seed, "tune": ns.tune_seed},
                "report_only_when_cues": list(cues),
            }
            for half, corpus in halves.items():
                label = f"generator {half}"
                log(f"pocketd: importing the {half} half")
                pd.add(corpus, label)
                rankers: dict[str, Ranker] = {
                    "pocketd": pd.ranker(label),
                    **baselines(corpus, results),
                    "ceiling": Ceiling(pd.held),
                    "oracle": Oracle(),
                }
                log(f"dialogs, {half} half")
                gen[half], sat = half_figures(corpus.probes, rankers, cues)
                gen["saturated" if half == "report" else "saturated_tune"] = sat
                kept = [t for t in TYPES if t not in sat]
                workloads.append(Workload(label, _overall(corpus.probes, kept)))
            results["generator"] = gen
        if bank is not None:
            mb: dict[str, Any] = {}
            for lang, corpus in bank.corpora.items():
                log(f"pocketd: importing MemoryBank {lang}")
                pd.add(corpus, lang)
                rankers = {
                    "pocketd": pd.ranker(lang),
                    **baselines(corpus, results),
                    "ceiling": Ceiling(pd.held),
                    "oracle": Oracle(),
                }
                log(f"memorybank {lang}")
                mb[lang] = memorybank_figures(corpus, rankers)
                workloads.append(Workload(f"memorybank {lang}", _overall(corpus.probes, None)))
            results["memorybank"] = mb
            results["memorybank_unlabelled"] = bank.unlabelled
        results["pocketd_import"] = pd.imports
        results["pocketd_short_lists"] = dict(pd.short_lists)
        if not ns.no_ablations and workloads:
            log(f"ablations: {', '.join(name for name, _ in ABLATIONS)}")
            results["ablations"] = ablate(pd, workloads)
    finally:
        pd.close()
    if ns.longmemeval != "none":
        log(f"LongMemEval, its {ns.longmemeval} part")
        results["longmemeval"] = longmemeval.run(
            argparse.Namespace(
                data=ns.longmemeval_data,
                split=LME_SPLIT,
                part=ns.longmemeval,
                questions=None,
                user_only=False,
                keep=False,
                store=None,
                config=None,
                set=[],
                pocketd_only=False,
                no_ablations=ns.no_ablations,
            )
        )
    return results


def _overall(probes: list[Probe], kinds: list[str] | None) -> Callable[[Ranker], dict[str, float]]:
    """A workload's headline figures from a ranker: pooled over `kinds` (None: every question
    as one group)."""

    def figures(rank: Ranker) -> dict[str, float]:
        if kinds is None:
            return score(probes, memo(rank), lambda p: "all")["all"]
        return pooled(score(probes, memo(rank), lambda p: p.kind), kinds)

    return figures


def ablation_table(r: dict[str, Any]) -> list[str]:
    """What each mechanism added: pocketd's R@5 per workload (LongMemEval: any@5 and all@10),
    and each ablation's, all from the same stored memories."""
    cols: list[tuple[str, dict[str, float]]] = []  # (column, row → value)
    abl = r.get("ablations", {})
    gen, mb = r.get("generator", {}), r.get("memorybank", {})
    for half in ("tune", "report"):
        if half in gen:
            label = f"generator {half}"
            row = {"pocketd": gen[half]["pocketd"]["overall"]["r5"]}
            row.update({a: abl[a][label]["r5"] for a in abl if label in abl[a]})
            cols.append((f"gen {half} R@5", row))
    for lang in mb:
        label = f"memorybank {lang}"
        row = {"pocketd": mb[lang]["pocketd"]["all"]["r5"]}
        row.update({a: abl[a][label]["r5"] for a in abl if label in abl[a]})
        cols.append((f"MB {lang} R@5", row))
    lme = r.get("longmemeval")
    if lme is not None:
        for part, x in lme["parts"].items():
            figs = x["figures"]
            for metric in ("any@5", "all@10"):
                row = {
                    name: figs[name]["overall"][metric]
                    for name in ("pocketd", *(a for a, _ in ABLATIONS))
                    if name in figs
                }
                cols.append((f"LME {part} {metric}", row))
    if not cols:
        return []
    rows = ["pocketd", *(a for a, _ in ABLATIONS)]
    width = max(len(c) for c, _ in cols) + 2
    lines = ["", "ablations: pocketd with one mechanism off, the same stored memories"]
    lines.append(f"{'':<18}" + "".join(f"{c:>{width}}" for c, _ in cols))
    for name in rows:
        cells = "".join(
            f"{v[name]:>{width}.3f}" if name in v else f"{'-':>{width}}" for _, v in cols
        )
        lines.append(f"{name:<18}{cells}")
    return lines


CELL = 14


def _cell(m: dict[str, float]) -> str:
    r5, r10 = m["r5"], m["r10"]
    return f"{'n/a':>{CELL}}" if math.isnan(r5) else f"{f'{r5:.3f}/{r10:.3f}':>{CELL}}"


def _header(first: str, width: int) -> str:
    return f"{first:<{width}}" + "".join(f"{n:>{CELL}}" for n in RETRIEVERS)


def _row(label: str, width: int, figs: dict[str, Figures], key: str) -> str:
    return f"{label:<{width}}" + "".join(_cell(figs[x][key]) for x in RETRIEVERS)


def _half_table(half: str, figs: dict[str, Figures], sat: list[str]) -> list[str]:
    title = (
        "REPORT half (its own corpus, facts and templates: the headline)"
        if half == "report"
        else "tune half (TUNING ONLY: its own corpus, in the templates defaults may be tuned on)"
    )
    count = int(sum(figs["bm25"][t]["questions"] for t in TYPES if t in figs["bm25"]))
    width = 28
    lines = ["", f"{title}, {count} questions", _header("R@5/R@10", width)]
    for kind in (*TYPES, "overall", "macro", *SPLITS):
        mark = " *" if kind in sat else ""
        n = int(figs["bm25"][kind]["questions"]) if kind in SPLITS else None
        label = kind + mark + ("" if n is None else f" ({n})")
        lines.append(_row(label, width, figs, kind))
    lines.append(
        "* saturated (bm25 R@5 ≥ 0.95), left out of overall, macro and the splits: "
        + (", ".join(sat) or "none")
    )
    return lines


def report(r: dict[str, Any]) -> str:
    lines: list[str] = []
    gen = r.get("generator")
    if gen is not None:
        seeds, turns = gen["seeds"], r["turns"]
        lines.append(
            f"dialogs: report half seed {seeds['report']} ({turns['report']} turns), tune half"
            f" seed {seeds['tune']} ({turns['tune']} turns)"
        )
        for half in HALVES[::-1]:
            sat = gen["saturated" if half == "report" else "saturated_tune"]
            lines += _half_table(half, gen[half], sat)
        lines.append(
            "leaky cue: a phrasing in pocketd's retrieval.when_cues that only report templates"
            " use: " + ", ".join(f'"{c}"' for c in gen["report_only_when_cues"])
        )
    mb = r.get("memorybank")
    if mb is not None:
        width = 18
        lines += [
            "",
            "MemoryBank (DEVELOPMENT set: pocketd was tuned on it; en is zh translated;"
            " exchanges found: either turn in the top k)",
            _header("R@5/R@10", width),
        ]
        for lang, figs in mb.items():
            for key in ("all", "dated", "undated"):
                n = int(figs["bm25"][key]["questions"])
                label = f"{lang} ({n})" if key == "all" else f"{lang} {key} ({n})"
                lines.append(_row(label, width, figs, key))
        left = r.get("memorybank_unlabelled", {})
        if any(left.values()):
            lines.append(
                "questions without evidence labels, left out: "
                + ", ".join(f"{k} {v}" for k, v in left.items())
            )
    lme = r.get("longmemeval")
    if lme is not None:
        lines += ["", longmemeval.report(lme)]
    lines += ablation_table(r)
    lines += ["", f"dense and hybrid encoder: {r.get('dense_encoder', '?')}"]
    for label, imp in r.get("pocketd_import", {}).items():
        lines.append(f"pocketd import ({label}): {import_summary(imp)}")
    short = r.get("pocketd_short_lists", {})
    if any(short.values()):
        lines.append(
            "pocketd recalls with fewer than 10 hits: "
            + ", ".join(f"{k} {v}" for k, v in short.items())
        )
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(
        prog="python -m bench quality",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--seed", type=int, default=REPORT_SEED, help="the report half's seed (2)")
    p.add_argument("--tune-seed", type=int, default=TUNE_SEED, help="the tune half's seed (1)")
    p.add_argument("--conversations", type=int, default=24)
    p.add_argument("--sessions", type=int, default=10)
    p.add_argument("--memorybank", type=Path, default=MEMORYBANK, help="the MemoryBank data")
    p.add_argument("--labels", type=Path, default=LABELS, help="MemoryBank's evidence labels")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--skip-memorybank", action="store_true")
    group.add_argument("--only-memorybank", action="store_true")
    p.add_argument(
        "--longmemeval",
        choices=("report", "tune", "all", "none"),
        default="report",
        help="which part of LongMemEval's development half to run (bench.longmemeval)",
    )
    p.add_argument("--longmemeval-data", type=Path, default=LME_DATA)
    p.add_argument("--no-ablations", action="store_true", help="no ablation rows")
    p.add_argument("--json", type=Path, help="also write the figures here")
    p.add_argument("--keep", action="store_true", help="keep the server's data directory")
    ns = p.parse_args(argv)
    r = run(ns)
    print(report(r))
    if ns.json:
        keys = ("generator", "memorybank", "pocketd_import", "ablations", "longmemeval")
        figures = {k: r[k] for k in keys if k in r}
        ns.json.parent.mkdir(parents=True, exist_ok=True)
        ns.json.write_text(json.dumps(figures, indent=2, ensure_ascii=False) + "\n")
    return 0
