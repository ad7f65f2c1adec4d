"""`python -m bench quality`: how well each retriever ranks the evidence of memory questions.

Two workloads, the same inputs for every retriever. Per turn each gets its words, its speaker, its
session id and its event time (so the turns' order):
- the synthetic dialogs of `bench.dialogs` (English and Chinese, two speakers, many sessions,
  five question types), at seed 2 (`--seed 1` to develop: nothing is tuned to the reported draw);
- MemoryBank (`bench.memorybank`: real exchanges of 15 users with an AI companion, in Chinese
  and in English, with evidence labels kept in `bench/data/memorybank_evidence.json`).

Retrievers:
- `pocketd`: a real `pocketd serve` on its defaults (no setting overridden, the default
  encoder). Each session is one RememberBatch of episodes: the words as the text, the speaker,
  session id, event time and position in the session as fields; the write gate and merging decide
  what is kept. Each question is a text-only Recall of the top 10 with `as_of` just after the
  conversation and `min_score` 0 (no relevance floor cutting the list).
- `hybrid`: the generic hybrid a competent engineer would build first, untuned: `bm25` and
  `dense` below, each min-max normalised over its own top 100, fused 0.5/0.5.
- `bm25`: bm25s (k1 1.5, b 0.75) over `bench.textproc.tokenize` of "speaker: words": English
  stemmed (Snowball) without stopwords (NLTK's list), Chinese segmented by jieba without
  function words.
- `dense`: exact cosine over the server's default encoder's vectors (`bench.encoder`) of
  "speaker: words".
- `trivial`: no retrieval: the conversation's 10 most recent turns, newest first. Where it scores
  well, the workload rewards recency, not retrieval.

Figures: R@k is the share of a question's evidence found in the top k, averaged over questions.
On the dialogs the evidence is turns; on MemoryBank it is exchanges (a user's message and the AI's
reply), found if either turn is in the top k. The dialog questions come from templates split in
two halves (`bench.dialogs`): the headline is the `report` half, the `tune` half is printed apart
and is the only one to tune against. A type where `bm25` reaches R@5 ≥ 0.95 on a half is
saturated there: it is listed, and left out of that half's "overall" (over questions) and "macro"
(the mean over types), since it cannot tell retrievers apart.

What favours whom:
- pocketd gets the speaker as a field of its own (and may match it separately); the baselines get
  it only prefixed into the text. Both see the same words.
- pocketd gets the event time as a field and `as_of` (its time cues, recency and the date a
  question names, "on May 2nd", which it matches against a memory's event date, can use them);
  the baselines get the event date as words in their text ("on 2 May 2023"), which a question's
  words can match.
- pocketd may drop turns (the write gate) and fold identical turns of a session into one memory
  (merging). A folded memory counts as its newest turn only: that is against pocketd. Drops and
  folds are reported.
- pocketd's defaults were developed on this generator's `tune` half and on MemoryBank zh: read
  the `report` half and MemoryBank en as the fair comparison. The baselines use library
  defaults.
- Recall runs on the steady state: the bench waits for the server's indexes to catch up first.

`--json PATH` writes {"generator": {"report": {retriever: {type: {"r5", "r10", "questions"}}},
"tune": {...}, "saturated": [...], "saturated_tune": [...]}, "memorybank": {"zh": {retriever:
{"r5", "r10", "questions"}}, "en": {...}}, "pocketd_import": {...}}.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

from bench.dialogs import HALVES, TYPES, generate
from bench.memorybank import LABELS, MemoryBank, load
from bench.quality_data import Corpus, Figures, Probe, Ranker, from_dialogs, pooled, score
from bench.quality_retrievers import BM25, Dense, Hybrid, Pocketd, Trivial, log
from bench.server_proc import ROOT

REPORT_SEED = 2
RETRIEVERS = ("pocketd", "hybrid", "bm25", "dense", "trivial")
SATURATED_AT = 0.95  # bm25 R@5 at or above which a type is left out of "overall"
MEMORYBANK = ROOT.parent / "shared" / "data" / "memorybank"


def baselines(corpus: Corpus, info: dict[str, Any]) -> dict[str, Ranker]:
    log(f"baselines: indexing {len(corpus.turns)} turns (bm25, dense)")
    bm25 = BM25(corpus)
    dense = Dense(corpus)
    info["dense_encoder"] = dense.model
    return {"hybrid": Hybrid(bm25, dense), "bm25": bm25, "dense": dense, "trivial": Trivial(corpus)}


def saturated(figures: dict[str, Figures]) -> list[str]:
    """The types where `bm25` R@5 ≥ 0.95: they cannot tell retrievers apart."""
    bm25 = figures["bm25"]
    return [t for t in TYPES if t in bm25 and bm25[t]["r5"] >= SATURATED_AT]


def half_figures(
    probes: list[Probe], rankers: dict[str, Ranker]
) -> tuple[dict[str, Figures], list[str]]:
    """Per retriever, per type, then "overall" and "macro" over the types that are not saturated."""
    out: dict[str, Figures] = {}
    for name, rank in rankers.items():
        log(f"  {name}: {len(probes)} questions")
        out[name] = score(probes, rank, lambda p: p.kind)
    sat = saturated(out)
    kept = [t for t in TYPES if t not in sat]
    for figs in out.values():
        figs["overall"] = pooled(figs, kept)
        figs["macro"] = pooled(figs, kept, macro=True)
    return out, sat


def run(ns: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {}
    bank: MemoryBank | None = None
    if not ns.skip_memorybank:
        if ns.labels.exists():
            bank = load(ns.memorybank, ns.labels)
            for lang, c in bank.corpora.items():
                log(
                    f"memorybank {lang}: {len(c.turns)} turns, {len(c.probes)} labelled questions"
                    f" ({bank.unlabelled[lang]} without evidence left out)"
                )
        elif ns.only_memorybank:
            raise SystemExit(f"no MemoryBank evidence labels at {ns.labels}")
        else:
            log(f"no MemoryBank evidence labels at {ns.labels}: MemoryBank skipped")
    dialogs: Corpus | None = None
    if not ns.only_memorybank:
        log(
            f"generating seed {ns.seed}: {ns.conversations} conversations of {ns.sessions} sessions"
        )
        data = generate(ns.seed, ns.conversations, ns.sessions)
        dialogs = from_dialogs(data)
        results["seed"] = ns.seed
        results["turns"] = len(dialogs.turns)
        log(f"{len(dialogs.turns)} turns, {len(dialogs.probes)} questions")
    log("pocketd: starting a server on its defaults")
    pd = Pocketd(keep=ns.keep)
    try:
        if dialogs is not None:
            log("pocketd: importing the dialogs")
            pd.add(dialogs, "generator")
            rankers: dict[str, Ranker] = {
                "pocketd": pd.ranker("generator"),
                **baselines(dialogs, results),
            }
            gen: dict[str, Any] = {}
            for half in ("report", "tune"):
                log(f"dialogs, {half} half")
                probes = [p for p in dialogs.probes if p.half == half]
                gen[half], sat = half_figures(probes, rankers)
                gen["saturated" if half == "report" else "saturated_tune"] = sat
            results["generator"] = gen
        if bank is not None:
            mb: dict[str, Any] = {}
            for lang, corpus in bank.corpora.items():
                log(f"pocketd: importing MemoryBank {lang}")
                pd.add(corpus, lang)
                rankers = {"pocketd": pd.ranker(lang), **baselines(corpus, results)}
                log(f"memorybank {lang}")
                mb[lang] = {
                    name: score(corpus.probes, rank, lambda p: "all")["all"]
                    for name, rank in rankers.items()
                }
            results["memorybank"] = mb
            results["memorybank_unlabelled"] = bank.unlabelled
        results["pocketd_import"] = pd.imports
        results["pocketd_short_lists"] = dict(pd.short_lists)
    finally:
        pd.close()
    return results


def _cell(m: dict[str, float]) -> str:
    r5, r10 = m["r5"], m["r10"]
    return "           n/a" * 2 if math.isnan(r5) else f"{r5:14.3f}{r10:14.3f}"


def _header(first: str) -> str:
    return f"{first:<14}" + "".join(f"{n + ' R@5':>14}{n + ' R@10':>14}" for n in RETRIEVERS)


def report(r: dict[str, Any]) -> str:
    lines: list[str] = []
    gen = r.get("generator")
    if gen is not None:
        lines.append(f"dialogs: seed {r['seed']}, {r['turns']} turns")
        for half in HALVES[::-1]:
            figs = gen[half]
            sat = gen["saturated" if half == "report" else "saturated_tune"]
            title = (
                "REPORT half (held-out templates: the headline)"
                if half == "report"
                else ("tune half (TUNING ONLY: the templates defaults may be developed on)")
            )
            count = int(sum(figs["bm25"][t]["questions"] for t in TYPES if t in figs["bm25"]))
            lines += ["", f"{title}, {count} questions", _header("type")]
            for kind in (*TYPES, "overall", "macro"):
                mark = " *" if kind in sat else ""
                row = "".join(_cell(figs[x][kind]) for x in RETRIEVERS)
                lines.append(f"{kind + mark:<14}{row}")
            lines.append(
                "* saturated (bm25 R@5 ≥ 0.95), left out of overall and macro: "
                + (", ".join(sat) or "none")
            )
    mb = r.get("memorybank")
    if mb is not None:
        lines += ["", "MemoryBank (exchanges found: either turn in the top k)", _header("language")]
        for lang, figs in mb.items():
            label = f"{lang} ({int(figs['bm25']['questions'])})"
            lines.append(f"{label:<14}" + "".join(_cell(figs[x]) for x in RETRIEVERS))
        left = r.get("memorybank_unlabelled", {})
        if any(left.values()):
            lines.append(
                "questions without evidence labels, left out: "
                + ", ".join(f"{k} {v}" for k, v in left.items())
            )
    lines += ["", f"dense and hybrid encoder: {r.get('dense_encoder', '?')}"]
    for label, imp in r.get("pocketd_import", {}).items():
        lines.append(
            f"pocketd import ({label}): {imp['turns_per_second']:.0f} turns/s"
            f" ({imp['seconds']:.1f} s, then {imp['index_wait_seconds']:.1f} s for the indexes),"
            f" {imp['rejected_by_gate']:.0f} of {imp['turns']:.0f} turns rejected by the gate,"
            f" {imp['turns_folded_by_merging']:.0f} folded into others by merging"
        )
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
    p.add_argument("--seed", type=int, default=REPORT_SEED, help="generator seed (2: reported)")
    p.add_argument("--conversations", type=int, default=24)
    p.add_argument("--sessions", type=int, default=10)
    p.add_argument("--memorybank", type=Path, default=MEMORYBANK, help="the MemoryBank data")
    p.add_argument("--labels", type=Path, default=LABELS, help="MemoryBank's evidence labels")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--skip-memorybank", action="store_true")
    group.add_argument("--only-memorybank", action="store_true")
    p.add_argument("--json", type=Path, help="also write the figures here")
    p.add_argument("--keep", action="store_true", help="keep the server's data directory")
    ns = p.parse_args(argv)
    r = run(ns)
    print(report(r))
    if ns.json:
        figures = {k: r[k] for k in ("generator", "memorybank", "pocketd_import") if k in r}
        ns.json.parent.mkdir(parents=True, exist_ok=True)
        ns.json.write_text(json.dumps(figures, indent=2, ensure_ascii=False) + "\n")
    return 0
