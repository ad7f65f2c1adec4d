"""The retrievers `bench quality` compares, each over the same turns and the same questions.

Every retriever gets, per turn: its words, its speaker, its session id and its event time (and
so the turns' order). The in-process baselines read a turn as the transcript line
"speaker: words" (`bench.dialogs.transcript`); pocketd gets the words as the memory's text and the
speaker, session, event time and position in the session as fields of their own.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import bm25s
import numpy as np
import numpy.typing as npt

from bench.dialogs import Turn, transcript
from bench.encoder import bench_encoder
from bench.quality_data import Corpus, K, Probe, by_namespace
from bench.server_proc import ServerProcess
from bench.textproc import add_words, tokenize
from pocketd import Client, MemoryInput

DEPTH = max(K)
FUSION_DEPTH = 100  # each channel's candidates for the hybrid
Scored = list[tuple[str, float]]  # turn ids with their scores, best first


def log(msg: str) -> None:
    print(f"[quality] {msg}", file=sys.stderr, flush=True)


class BM25:
    """bm25s (k1 1.5, b 0.75, its defaults) per namespace over `bench.textproc.tokenize` of
    "speaker: words": stemmed, stopwords removed, Chinese segmented by jieba (which is taught
    the speakers' names first)."""

    def __init__(self, corpus: Corpus) -> None:
        self.indexes: dict[str, tuple[bm25s.BM25, list[str]]] = {}
        add_words({t.speaker for t in corpus.turns})
        for ns, turns in by_namespace(corpus.turns).items():
            index = bm25s.BM25(k1=1.5, b=0.75)
            index.index([tokenize(transcript(t)) for t in turns], show_progress=False)
            self.indexes[ns] = (index, [t.turn_id for t in turns])

    def scored(self, p: Probe, depth: int) -> Scored:
        index, ids = self.indexes[p.namespace]
        query = tokenize(p.text)
        if not query:
            return []
        docs, scores = index.retrieve([query], k=min(depth, len(ids)), show_progress=False)
        return [
            (ids[d], s) for d, s in zip(docs[0].tolist(), scores[0].tolist(), strict=True) if s > 0
        ]

    def __call__(self, p: Probe) -> list[str]:
        return [t for t, _ in self.scored(p, DEPTH)]


class Dense:
    """Exact cosine over `bench.encoder.bench_encoder()`'s vectors of "speaker: words"."""

    def __init__(self, corpus: Corpus) -> None:
        self.enc = bench_encoder()
        manifest = getattr(self.enc, "manifest", None)
        self.model = str(getattr(manifest, "name", type(self.enc).__name__))
        self.ids: dict[str, list[str]] = {}
        self.mats: dict[str, npt.NDArray[np.float32]] = {}
        for ns, turns in by_namespace(corpus.turns).items():
            self.ids[ns] = [t.turn_id for t in turns]
            self.mats[ns] = np.asarray(self.enc.encode([transcript(t) for t in turns]))
        self._queries: dict[str, npt.NDArray[np.float32]] = {}
        texts = sorted({p.text for p in corpus.probes})
        if texts:
            self._queries = dict(zip(texts, np.asarray(self.enc.encode(texts)), strict=True))

    def scored(self, p: Probe, depth: int) -> Scored:
        q = self._queries.get(p.text)
        if q is None:
            q = self._queries[p.text] = np.asarray(self.enc.encode([p.text]))[0]
        sims = self.mats[p.namespace] @ q
        order = np.argsort(-sims, kind="stable")[:depth]
        ids = self.ids[p.namespace]
        return [(ids[i], float(sims[i])) for i in order.tolist()]

    def __call__(self, p: Probe) -> list[str]:
        return [t for t, _ in self.scored(p, DEPTH)]


def _min_max(hits: Scored) -> dict[str, float]:
    if not hits:
        return {}
    lo, hi = min(s for _, s in hits), max(s for _, s in hits)
    return {t: 1.0 if hi == lo else (s - lo) / (hi - lo) for t, s in hits}


class Hybrid:
    """The generic hybrid: `BM25` and `Dense` above, each min-max normalised over its own top
    100, fused 0.5/0.5 (a turn missing from a channel scores 0 there). Not tuned."""

    def __init__(self, bm25: BM25, dense: Dense) -> None:
        self.bm25, self.dense = bm25, dense

    def __call__(self, p: Probe) -> list[str]:
        dense = self.dense.scored(p, FUSION_DEPTH)
        b, d = _min_max(self.bm25.scored(p, FUSION_DEPTH)), _min_max(dense)
        order = {t: i for i, (t, _) in enumerate(dense)}  # ties: the dense order
        fused = {t: 0.5 * b.get(t, 0.0) + 0.5 * d.get(t, 0.0) for t in b.keys() | d.keys()}
        ranked = sorted(fused, key=lambda t: (-fused[t], order.get(t, len(order)), t))
        return ranked[:DEPTH]


class Trivial:
    """A fixed policy with no retrieval: the conversation's 10 most recent turns before the
    question, newest first (R@5: the 5 most recent). It shows a workload where recency wins."""

    def __init__(self, corpus: Corpus) -> None:
        self.turns = {
            ns: sorted(turns, key=lambda t: -t.time)
            for ns, turns in by_namespace(corpus.turns).items()
        }

    def __call__(self, p: Probe) -> list[str]:
        return [t.turn_id for t in self.turns[p.namespace] if t.time <= p.as_of][:DEPTH]


def wait_indexed(client: Client, timeout: float = 120.0) -> float:
    """Wait until the server's warm indexes have caught up (recall then sees the steady state);
    return the seconds waited."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        if client.stats().index.pending == 0:
            break
        time.sleep(0.2)
    return time.perf_counter() - t0


class Pocketd:
    """A real `pocketd serve` on its defaults (no settings overridden). `add` imports a corpus:
    one RememberBatch per session, each turn an episode with its words as the text and its
    speaker, session id, event time and position in the session as fields (the write gate and
    near-duplicate merging decide what is kept). Each question is a text-only Recall of the top
    10, `as_of` its probe's time, with `min_score` 0 so that the relevance floor does not cut a
    list the baselines would return in full."""

    def __init__(self, keep: bool = False) -> None:
        self.work = Path(tempfile.mkdtemp(prefix="pocketd-quality-"))
        self.keep = keep
        self.srv = ServerProcess(self.work / "data")
        try:
            self.srv.wait_serving(timeout=300)
        except BaseException:
            self.srv.close()
            shutil.rmtree(self.work, ignore_errors=True)
            raise
        self.client = Client(self.srv.target, timeout=120)
        self.turn_of: dict[str, str] = {}  # memory id → the turn whose words it holds
        self.imports: dict[str, dict[str, float]] = {}
        self.short_lists: dict[str, int] = defaultdict(int)  # recalls under 10 hits, per label

    def add(self, corpus: Corpus, label: str) -> None:
        sessions: dict[str, list[Turn]] = defaultdict(list)
        for t in corpus.turns:
            sessions[t.session_id].append(t)
        t0 = time.perf_counter()
        rejected = stored = 0
        mapped_before = len(self.turn_of)
        for turns in sessions.values():
            results = self.client.remember_batch(
                [
                    MemoryInput(
                        t.namespace,
                        t.text,
                        kind="episode",
                        session_id=t.session_id,
                        speaker=t.speaker,
                        occurred_at=t.time,
                        turn=t.index,
                    )
                    for t in turns
                ]
            )
            for t, r in zip(turns, results, strict=True):
                if r.stored:  # stored or merged: a merge overwrites the words with the newest
                    self.turn_of[r.memory_id] = t.turn_id
                    stored += 1
                else:
                    rejected += 1
        seconds = time.perf_counter() - t0
        waited = self._wait_indexed()
        self.imports[label] = {
            "turns": float(len(corpus.turns)),
            "seconds": seconds,
            "turns_per_second": len(corpus.turns) / seconds if seconds else 0.0,
            "rejected_by_gate": float(rejected),
            "turns_folded_by_merging": float(stored - (len(self.turn_of) - mapped_before)),
            "index_wait_seconds": waited,
        }

    def _wait_indexed(self, timeout: float = 120.0) -> float:
        return wait_indexed(self.client, timeout)

    def ranker(self, label: str) -> Pocketd.Bound:
        return Pocketd.Bound(self, label)

    class Bound:
        def __init__(self, owner: Pocketd, label: str) -> None:
            self.owner, self.label = owner, label

        def __call__(self, p: Probe) -> list[str]:
            o = self.owner
            hits = o.client.recall(
                p.namespace, p.text, top_k=DEPTH, as_of=p.as_of, min_score=0.0
            ).hits
            if len(hits) < DEPTH:
                o.short_lists[self.label] += 1
            return [o.turn_of[h.memory.memory_id] for h in hits if h.memory.memory_id in o.turn_of]

    def close(self) -> None:
        self.client.close()
        self.srv.stop()
        if not self.keep:
            shutil.rmtree(self.work, ignore_errors=True)
