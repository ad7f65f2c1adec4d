"""`python -m bench bilingual [--json PATH] [--encoders use-m3,minilm]`: Chinese/English retrieval
inside pocketd, per text encoder, to choose (and justify) the default one.

The set is `bench.bilingual_data`: hand-written memories (one user's facts, preferences, devices,
health, travel, work incidents, in Chinese and in English, with near-topic distractors and 50
unrelated memories) and paraphrased questions in four groups: `zh` (Chinese asked in Chinese),
`en`, `cross` (asked in the other language) and `multi` (a memory of several clauses, asked
about one).

For each encoder whose model directory exists under models/ (use-m3: the default; minilm:
all-MiniLM-L6-v2, English only, `make models-minilm`):
- `pocketd`: a real `pocketd serve` on a fresh data directory, on its defaults except the
  encoder (minilm: `POCKETD__ENCODER__TEXT=minilm`, `POCKETD__MEMORY__EMBEDDING_DIM=384`). Every
  memory is one `fact` in one namespace, written with one RememberBatch (the write gate and
  near-duplicate merging decide what is kept: decisions other than "stored" are listed); after
  the indexes caught up, each question is a text-only Recall of the top 5 with `min_score` 0;
- `dense`: exact cosine over the same encoder's vectors, in process;
- `bm25`: bm25s (k1 1.5, b 0.75) over `bench.textproc.tokenize` (English stemmed without
  stopwords, Chinese segmented by jieba without function words). It does not depend on the
  encoder and is repeated under each one for reading the table.

R@k: the share of questions whose gold memory is in the top k. The encoder's spread is printed
too: the mean cosine of unrelated memory pairs (all pairs of `UNRELATED`, and per language pair)
against the mean cosine of question/gold pairs, per group. An encoder whose unrelated pairs score
about as high as its paraphrases cannot rank by meaning, whatever the thresholds; the gap also
says why the thresholds (vector floor, dedup cosine) are set per encoder in its manifest.

`--json PATH` writes {encoder: {retriever: {group: {"r1", "r5", "n"}}}} (groups: zh, en, cross,
multi, all).
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
from collections.abc import Callable, Sequence
from itertools import combinations
from pathlib import Path
from typing import Any

import bm25s
import numpy as np
import numpy.typing as npt

from bench.bilingual_data import GROUPS, MEMORIES, QUESTIONS, UNRELATED, Memory, Question
from bench.quality_retrievers import wait_indexed
from bench.server_proc import ROOT, ServerProcess
from bench.textproc import tokenize
from pocketd import Client, MemoryInput

NAMESPACE = "bilingual"
DEPTH = 5
ENCODERS = ("use-m3", "minilm")
ENV: dict[str, dict[str, str]] = {
    "use-m3": {},
    "minilm": {"POCKETD__ENCODER__TEXT": "minilm", "POCKETD__MEMORY__EMBEDDING_DIM": "384"},
}
RETRIEVERS = ("pocketd", "dense", "bm25")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")

Ranker = Callable[[Question], list[str]]
Figures = dict[str, dict[str, float]]  # group → {"r1", "r5", "n"}


def log(msg: str) -> None:
    print(f"[bilingual] {msg}", file=sys.stderr, flush=True)


def lang(text: str) -> str:
    return "zh" if _CJK.search(text) else "en"


def check_data() -> None:
    ids = [m.id for m in MEMORIES]
    dup = [i for i, c in Counter(ids).items() if c > 1]
    assert not dup, f"duplicate memory ids: {dup}"
    known = set(ids)
    for q in QUESTIONS:
        assert q.group in GROUPS, q
        assert q.gold in known, q


def score(rank: Ranker, questions: Sequence[Question]) -> Figures:
    """R@1 and R@5 per group and over all questions."""
    hits: dict[str, list[tuple[bool, bool]]] = {g: [] for g in (*GROUPS, "all")}
    for q in questions:
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


class Dense:
    """Exact cosine over the encoder's (unit) vectors."""

    def __init__(self, enc: OnnxTextEncoder, memories: Sequence[Memory]) -> None:
        self.enc = enc
        self.ids = [m.id for m in memories]
        self.vec = dict(zip(self.ids, self.encode([m.text for m in memories]), strict=True))
        self.mat = np.stack([self.vec[i] for i in self.ids])
        self._q: dict[str, npt.NDArray[np.float32]] = {}

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return np.asarray(self.enc.encode(list(texts)), dtype=np.float32)

    def query(self, text: str) -> npt.NDArray[np.float32]:
        if text not in self._q:
            self._q[text] = self.encode([text])[0]
        return self._q[text]

    def __call__(self, q: Question) -> list[str]:
        sims = self.mat @ self.query(q.text)
        return [self.ids[i] for i in np.argsort(-sims, kind="stable")[:DEPTH].tolist()]

    def cosine(self, a: str, b_text: str) -> float:
        return float(self.vec[a] @ self.query(b_text))


class BM25:
    """bm25s (k1 1.5, b 0.75) over `bench.textproc.tokenize`."""

    def __init__(self, memories: Sequence[Memory]) -> None:
        self.ids = [m.id for m in memories]
        self.index = bm25s.BM25(k1=1.5, b=0.75)
        self.index.index([tokenize(m.text) for m in memories], show_progress=False)

    def __call__(self, q: Question) -> list[str]:
        query = tokenize(q.text)
        if not query:
            return []
        docs, scores = self.index.retrieve([query], k=DEPTH, show_progress=False)
        return [
            self.ids[d] for d, s in zip(docs[0].tolist(), scores[0].tolist(), strict=True) if s > 0
        ]


class Pocketd:
    """A real `pocketd serve` with `env` on a fresh data directory, holding every memory."""

    def __init__(self, env: dict[str, str], memories: Sequence[Memory]) -> None:
        self.work = Path(tempfile.mkdtemp(prefix="pocketd-bilingual-"))
        self.srv = ServerProcess(self.work / "data", env=env)
        try:
            took = self.srv.wait_serving(timeout=300)
        except BaseException:
            self.srv.close()
            shutil.rmtree(self.work, ignore_errors=True)
            raise
        log(f"  server serving after {took:.1f} s")
        self.client = Client(self.srv.target, timeout=120)
        self.ours: dict[str, str] = {}  # pocketd memory id → dataset id
        self.decisions: Counter[str] = Counter()
        self.not_stored: list[tuple[str, str, str, str]] = []  # id, decision, into, reason
        t0 = time.perf_counter()
        results = self.client.remember_batch(
            [MemoryInput(NAMESPACE, m.text, kind="fact") for m in memories]
        )
        for m, r in zip(memories, results, strict=True):
            self.decisions[r.decision] += 1
            if r.decision == "stored":
                self.ours[r.memory_id] = m.id
            else:
                self.not_stored.append((m.id, r.decision, r.memory_id, r.reason))
        for mid, decision, into, _ in self.not_stored:
            if decision == "merged" and into not in self.ours:
                self.ours[into] = mid
        took = time.perf_counter() - t0
        log(f"  remembered {len(memories)} in {took:.1f} s: {dict(self.decisions)}")
        log(f"  indexes caught up after {self._wait_indexed():.1f} s")

    def _wait_indexed(self, timeout: float = 120.0) -> float:
        return wait_indexed(self.client, timeout)

    def __call__(self, q: Question) -> list[str]:
        hits = self.client.recall(NAMESPACE, q.text, top_k=DEPTH, min_score=0.0).hits
        return [self.ours.get(h.memory.memory_id, "?") for h in hits]

    def close(self) -> None:
        self.client.close()
        self.srv.stop()
        shutil.rmtree(self.work, ignore_errors=True)


def spread(dense: Dense) -> dict[str, float]:
    """Mean cosines: unrelated memory pairs (all, and per language pair) and question/gold
    pairs (all, and per group)."""
    pairs: dict[str, list[float]] = {"unrelated": [], "zh-zh": [], "en-en": [], "zh-en": []}
    for a, b in combinations(UNRELATED, 2):
        c = float(dense.vec[a.id] @ dense.vec[b.id])
        la, lb = lang(a.text), lang(b.text)
        pairs["unrelated"].append(c)
        pairs[f"{la}-{lb}" if la == lb else "zh-en"].append(c)
    gold: dict[str, list[float]] = {"gold": [], **{f"gold {g}": [] for g in GROUPS}}
    for q in QUESTIONS:
        c = dense.cosine(q.gold, q.text)
        gold["gold"].append(c)
        gold[f"gold {q.group}"].append(c)
    return {k: float(np.mean(v)) for k, v in {**pairs, **gold}.items() if v}


def run_encoder(name: str) -> tuple[dict[str, Figures], dict[str, float], list[Any]]:
    model_dir = ROOT / "models" / name
    log(f"{name}: in-process baselines")
    enc = OnnxTextEncoder(model_dir, threads=2, batch_size=32, max_tokens=256)
    dense = Dense(enc, MEMORIES)
    rankers: dict[str, Ranker] = {"dense": dense, "bm25": BM25(MEMORIES)}
    figures = {r: score(rk, QUESTIONS) for r, rk in rankers.items()}
    cosines = spread(dense)
    log(f"{name}: starting pocketd ({ENV[name] or 'defaults'})")
    srv = Pocketd(ENV[name], MEMORIES)
    try:
        t0 = time.perf_counter()
        figures = {"pocketd": score(srv, QUESTIONS), **figures}
        log(f"  {len(QUESTIONS)} recalls in {time.perf_counter() - t0:.1f} s")
        not_stored = [list(x) for x in srv.not_stored]
    finally:
        srv.close()
    return figures, cosines, not_stored


def table(results: dict[str, dict[str, Figures]]) -> str:
    groups = (*GROUPS, "all")
    any_fig = next(iter(next(iter(results.values())).values()))
    head = f"{'encoder':<8} {'retriever':<9}" + "".join(
        f" | {g + ' (' + str(int(any_fig[g]['n'])) + ')':^11}" for g in groups
    )
    sub = f"{'':<8} {'':<9}" + " | R@1   R@5 " * len(groups)
    lines = [head, sub, "-" * len(head)]
    for enc, by_retriever in results.items():
        for r in RETRIEVERS:
            f = by_retriever[r]
            lines.append(
                f"{enc:<8} {r:<9}"
                + "".join(f" | {f[g]['r1']:.2f}  {f[g]['r5']:.2f}" for g in groups)
            )
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench bilingual", description=__doc__)
    ap.add_argument("--json", type=Path, help="write the figures here")
    ap.add_argument("--encoders", default=",".join(ENCODERS), help="comma separated")
    args = ap.parse_args(argv)
    check_data()
    names = [n.strip() for n in args.encoders.split(",") if n.strip()]
    unknown = [n for n in names if n not in ENV]
    if unknown:
        ap.error(f"unknown encoders {unknown}; known: {', '.join(ENCODERS)}")
    log(f"{len(MEMORIES)} memories, {len(QUESTIONS)} questions")
    results: dict[str, dict[str, Figures]] = {}
    cosines: dict[str, dict[str, float]] = {}
    not_stored: dict[str, list[Any]] = {}
    for name in names:
        if not (ROOT / "models" / name / "model.onnx").is_file():
            log(f"{name}: models/{name} is missing, skipped")
            continue
        results[name], cosines[name], not_stored[name] = run_encoder(name)
    if not results:
        log("no encoder to run")
        return 1
    print(table(results))
    print()
    print("mean cosine (the encoder's spread): unrelated memory pairs vs question/gold pairs")
    keys = list(next(iter(cosines.values())))
    print(f"{'encoder':<8}" + "".join(f" {k:>11}" for k in keys))
    for name, c in cosines.items():
        print(f"{name:<8}" + "".join(f" {c[k]:>11.3f}" for k in keys))
    for name, rows in not_stored.items():
        print()
        if not rows:
            print(f"{name}: every memory was stored")
        for mid, decision, into, reason in rows:
            merged = f" into {into}" if decision == "merged" else ""
            print(f"{name}: {mid} {decision}{merged}: {reason}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
        log(f"wrote {args.json}")
    return 0
