"""`python -m bench bilingual [--json PATH] [--sets blind,dev] [--encoders use-m3,e5-small,minilm]`:
Chinese/English retrieval inside pocketd against what an afternoon's build would do with the same
texts.

Two sets (`bench.bilingual_sets`), each with its own memories (facts, preferences, near-topic
distractors, unrelated ones) and questions, each question naming one gold memory, in groups
(`zh`, `en`, `cross`: asked in the other language, `multi`: about one clause of a longer memory):
- `blind` (the headline): written by another session from the task description alone;
- `dev`: hand-written with pocketd's scoring in view (`vector_ceiling` and `unseen_term_weight`
  were chosen on it): a development set, in pocketd's favour.

Rows, each given the same memory texts and the same question texts (the sets have no other
field):
- `pocketd`: a real `pocketd serve` on a fresh data directory per set, on its defaults (the
  encoder use-m3) except, for `minilm`, the encoder. Every memory is one `fact` in one
  namespace, written with one RememberBatch (the write gate and near-duplicate merging decide
  what is kept: decisions other than "stored" are listed); after the indexes caught up, each
  question is a text-only Recall of the top 5 with `min_score` 0. e5-small has no pocketd row:
  it is not an ONNX graph the server can load;
- `dense`, per encoder: exact cosine in process (`bench.bilingual_rankers.Dense`); encoders:
  use-m3 (the server's default, `make models`), e5-small (multilingual-e5-small, 4-bit, from
  `make bench-e5`; "query: "/"passage: " prefixes) and minilm (all-MiniLM-L6-v2, English only,
  `make models-minilm`), each when it is built (a missing one is named and skipped);
- `hybrid`, per encoder: bm25 and that encoder's dense, min-max 0.5/0.5 (the quality bench's
  generic hybrid, not tuned);
- `bm25`: bm25s over `bench.textproc.tokenize` (stemmed, stopwords removed, jieba);
- `trivial`: character-bigram overlap, no encoder and no index. A group where it scores at least
  as high as every other row is printed as too easy.

R@k: the share of questions whose gold memory is in the top k. Also printed per set and encoder:
the spread (the mean cosine of background memory pairs: the dev set's labelled unrelated
memories, the blind set's memories that answer no question; against the mean cosine of
question/gold pairs, per group), and how many gold memories pocketd holds after its write gate.

`--json PATH` writes {set: {"about", "rows": {row: {group: {"r1", "r5", "n"}}}, "spread":
{encoder: {...}}, "pocketd": {encoder: {"decisions", "not_stored", "gold_held"}}}}.
"""

from __future__ import annotations

# onnxruntime first: importing tantivy (bench.textproc) before it can crash its import.
from server.adapters.onnx_encoder import OnnxTextEncoder  # isort: skip

import argparse
import json
import re
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

from bench.bilingual_data import Question
from bench.bilingual_rankers import (
    BM25,
    DEPTH,
    Bigram,
    Dense,
    Encoder,
    Ranker,
    Symmetric,
    hybrid,
)
from bench.bilingual_sets import BLIND_PATH, BilingualSet, blind_set, dev_set
from bench.e5_encoder import E5Encoder, E5UnavailableError
from bench.quality_retrievers import wait_indexed
from bench.server_proc import ROOT, ServerProcess
from pocketd import Client, MemoryInput

NAMESPACE = "bilingual"
SETS = ("blind", "dev")
ENCODERS = ("use-m3", "e5-small", "minilm")
SERVER_ENV: dict[str, dict[str, str]] = {  # the encoders pocketd can run, and their settings
    "use-m3": {},
    "minilm": {"POCKETD__ENCODER__TEXT": "minilm", "POCKETD__MEMORY__EMBEDDING_DIM": "384"},
}
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")

Figures = dict[str, dict[str, float]]  # group → {"r1", "r5", "n"}


def log(msg: str) -> None:
    print(f"[bilingual] {msg}", file=sys.stderr, flush=True)


def lang(text: str) -> str:
    return "zh" if _CJK.search(text) else "en"


def score(rank: Ranker, s: BilingualSet) -> Figures:
    """R@1 and R@5 per group and over all questions."""
    hits: dict[str, list[tuple[bool, bool]]] = {g: [] for g in (*s.groups, "all")}
    for q in s.questions:
        top = rank(q)[:DEPTH]
        got = (top[:1] == [q.gold], q.gold in top)
        hits[q.group].append(got)
        hits["all"].append(got)
    return {
        g: {
            "r1": sum(a for a, _ in h) / len(h) if h else 0.0,
            "r5": sum(b for _, b in h) / len(h) if h else 0.0,
            "n": float(len(h)),
        }
        for g, h in hits.items()
    }


@contextmanager
def served(env: dict[str, str]) -> Iterator[Client]:
    """A real `pocketd serve` with `env` on a fresh data directory, and a client of it."""
    work = Path(tempfile.mkdtemp(prefix="pocketd-bilingual-"))
    srv = ServerProcess(work / "data", env=env)
    try:
        log(f"  server serving after {srv.wait_serving(timeout=300):.1f} s")
    except BaseException:
        srv.close()
        shutil.rmtree(work, ignore_errors=True)
        raise
    try:
        with Client(srv.target, timeout=120) as client:
            yield client
    finally:
        srv.stop()
        shutil.rmtree(work, ignore_errors=True)


Serve = Callable[[dict[str, str]], AbstractContextManager[Client]]


class Pocketd:
    """The set's memories in one namespace of a server, each one `fact`, written with one
    RememberBatch; each question a text-only Recall of the top 5 with `min_score` 0."""

    def __init__(self, client: Client, s: BilingualSet) -> None:
        self.client = client
        self.ours: dict[str, str] = {}  # pocketd memory id → dataset id
        self.decisions: Counter[str] = Counter()
        self.not_stored: list[tuple[str, str, str, str]] = []  # id, decision, into, reason
        t0 = time.perf_counter()
        results = client.remember_batch(
            [MemoryInput(NAMESPACE, m.text, kind="fact") for m in s.memories]
        )
        for m, r in zip(s.memories, results, strict=True):
            self.decisions[r.decision] += 1
            if r.decision == "stored":
                self.ours[r.memory_id] = m.id
            else:
                self.not_stored.append((m.id, r.decision, r.memory_id, r.reason))
        for mid, decision, into, _ in self.not_stored:
            if decision == "merged" and into not in self.ours:
                self.ours[into] = mid
        took = time.perf_counter() - t0
        log(f"  remembered {len(s.memories)} in {took:.1f} s: {dict(self.decisions)}")
        log(f"  indexes caught up after {wait_indexed(client, 120.0):.1f} s")

    def __call__(self, q: Question) -> list[str]:
        hits = self.client.recall(NAMESPACE, q.text, top_k=DEPTH, min_score=0.0).hits
        return [self.ours.get(h.memory.memory_id, "?") for h in hits]


@dataclass
class SetResult:
    about: str
    rows: dict[str, Figures] = field(default_factory=dict)
    spread: dict[str, dict[str, float]] = field(default_factory=dict)
    pocketd: dict[str, dict[str, Any]] = field(default_factory=dict)


def spread(dense: Dense, s: BilingualSet) -> dict[str, float]:
    """Mean cosines: background memory pairs (all, and per language pair) and question/gold
    pairs (all, and per group)."""
    pairs: dict[str, list[float]] = {"background": [], "zh-zh": [], "en-en": [], "zh-en": []}
    text = {m.id: m.text for m in s.memories}
    for a, b in combinations(s.background, 2):
        c = float(dense.vec[a] @ dense.vec[b])
        la, lb = lang(text[a]), lang(text[b])
        pairs["background"].append(c)
        pairs[f"{la}-{lb}" if la == lb else "zh-en"].append(c)
    gold: dict[str, list[float]] = {"gold": [], **{f"gold {g}": [] for g in s.groups}}
    for q in s.questions:
        c = dense.cosine(q.gold, q.text)
        gold["gold"].append(c)
        gold[f"gold {q.group}"].append(c)
    return {k: float(np.mean(v)) for k, v in {**pairs, **gold}.items() if v}


def load_encoder(name: str) -> Encoder | None:
    """The encoder, or None (logged) when it is not built here."""
    if name == "e5-small":
        try:
            return E5Encoder(threads=2)
        except E5UnavailableError as exc:
            log(f"e5-small skipped: {exc}")
            return None
    model_dir = ROOT / "models" / name
    if not (model_dir / "model.onnx").is_file():
        log(f"{name} skipped: models/{name} is missing")
        return None
    enc = OnnxTextEncoder(model_dir, threads=2, batch_size=32, max_tokens=256)
    return Symmetric(name, enc)


def run_set(s: BilingualSet, encoders: dict[str, Encoder], serve: Serve = served) -> SetResult:
    log(f"{s.name}: {len(s.memories)} memories, {len(s.questions)} questions")
    out = SetResult(about=s.about)
    bm25 = BM25(s.memories)
    in_process: dict[str, Ranker] = {}
    for name, enc in encoders.items():
        t0 = time.perf_counter()
        dense = Dense(enc, s.memories)
        log(f"  {name}: encoded in {time.perf_counter() - t0:.1f} s")
        in_process[f"hybrid {name}"] = hybrid(bm25, dense)
        in_process[f"dense {name}"] = dense
        out.spread[name] = spread(dense, s)
    in_process["bm25"] = bm25
    in_process["trivial"] = Bigram(s.memories)
    for name in encoders:
        if name in SERVER_ENV:
            out.rows[f"pocketd {name}"], out.pocketd[name] = run_pocketd(name, s, serve)
    out.rows.update({row: score(rank, s) for row, rank in in_process.items()})
    return out


def run_pocketd(name: str, s: BilingualSet, serve: Serve) -> tuple[Figures, dict[str, Any]]:
    log(f"  pocketd {name}: starting ({SERVER_ENV[name] or 'defaults'})")
    with serve(SERVER_ENV[name]) as client:
        srv = Pocketd(client, s)
        t0 = time.perf_counter()
        figures = score(srv, s)
        log(f"  {len(s.questions)} recalls in {time.perf_counter() - t0:.1f} s")
    gold = {q.gold for q in s.questions}
    info = {
        "decisions": dict(srv.decisions),
        "not_stored": [list(x) for x in srv.not_stored],
        "gold_held": len(gold & set(srv.ours.values())),
        "gold": len(gold),
    }
    return figures, info


def too_easy(rows: dict[str, Figures]) -> list[str]:
    """The groups and metrics where the trivial row is at least as high as every other row."""
    trivial = rows["trivial"]
    others = [f for row, f in rows.items() if row != "trivial"]
    return [
        f"{g} {k.upper()}"
        for g in trivial
        for k in ("r1", "r5")
        if others and trivial[g][k] >= max(f[g][k] for f in others)
    ]


def table(s: BilingualSet, r: SetResult) -> str:
    groups = (*s.groups, "all")
    n = {g: sum(1 for q in s.questions if q.group == g) for g in s.groups} | {
        "all": len(s.questions)
    }
    head = f"{'row':<16}" + "".join(f" | {g + ' (' + str(n[g]) + ')':^11}" for g in groups)
    sub = f"{'':<16}" + " | R@1   R@5 " * len(groups)
    lines = [head, sub, "-" * len(head)]
    for row, f in r.rows.items():
        lines.append(
            f"{row:<16}" + "".join(f" | {f[g]['r1']:.2f}  {f[g]['r5']:.2f}" for g in groups)
        )
    return "\n".join(lines)


def report(s: BilingualSet, r: SetResult) -> str:
    lines = [f"== {s.name}: {s.about}", table(s, r), ""]
    easy = too_easy(r.rows)
    lines.append(
        f"trivial at least as high as every other row (too easy): {', '.join(easy)}"
        if easy
        else "trivial is below the best row in every group"
    )
    if r.spread:
        lines += ["", "mean cosine: background memory pairs vs question/gold pairs"]
        keys = list(next(iter(r.spread.values())))
        lines.append(f"{'encoder':<9}" + "".join(f" {k:>11}" for k in keys))
        for name, c in r.spread.items():
            lines.append(f"{name:<9}" + "".join(f" {c.get(k, float('nan')):>11.3f}" for k in keys))
    for name, info in r.pocketd.items():
        lines.append("")
        lines.append(
            f"pocketd {name}: holds {info['gold_held']} of {info['gold']} gold memories;"
            f" decisions {info['decisions']}"
        )
        for mid, decision, into, reason in info["not_stored"]:
            merged = f" into {into}" if decision == "merged" else ""
            lines.append(f"  {mid} {decision}{merged}: {reason}")
    return "\n".join(lines)


def load_sets(names: Sequence[str]) -> list[BilingualSet]:
    sets: list[BilingualSet] = []
    for name in names:
        if name == "dev":
            sets.append(dev_set())
        elif BLIND_PATH.is_file():
            sets.append(blind_set())
        else:
            log(f"blind skipped: {BLIND_PATH} is missing")
    return sets


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench bilingual", description=__doc__)
    ap.add_argument("--json", type=Path, help="write the figures here")
    ap.add_argument("--sets", default=",".join(SETS), help="comma separated")
    ap.add_argument("--encoders", default=",".join(ENCODERS), help="comma separated")
    args = ap.parse_args(argv)
    set_names = [n.strip() for n in args.sets.split(",") if n.strip()]
    enc_names = [n.strip() for n in args.encoders.split(",") if n.strip()]
    unknown = [n for n in set_names if n not in SETS] + [n for n in enc_names if n not in ENCODERS]
    if unknown:
        ap.error(f"unknown {unknown}; sets: {', '.join(SETS)}; encoders: {', '.join(ENCODERS)}")
    sets = load_sets(set_names)
    encoders = {n: e for n in enc_names if (e := load_encoder(n)) is not None}
    if not sets or not encoders:
        log("no set or no encoder to run")
        return 1
    results = {s.name: run_set(s, encoders) for s in sets}
    print("\n\n".join(report(s, results[s.name]) for s in sets))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        payload = {name: vars(r) for name, r in results.items()}
        args.json.write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n")
        log(f"wrote {args.json}")
    return 0
