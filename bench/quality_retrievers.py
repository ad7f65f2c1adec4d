"""The retrievers `bench quality` compares, each over the same turns and the same questions.

Every retriever gets the same inputs per turn: its words as text, and its speaker and event time
as fields (pocketd gets the session id and the position in the session too, which no baseline
here reads). The in-process baselines index a `Document` per turn: the words alone (no speaker
or date glued into the text), with `speaker` and `time` beside them. `HybridFields` is the
baseline that reads those fields, as an afternoon's build would (`bench.quality_fields`); the
others read the text only. pocketd gets the words as the memory's text and the fields as fields
of its own.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

import bm25s
import numpy as np
import numpy.typing as npt

from bench.dialogs import Turn
from bench.encoder import bench_encoder
from bench.quality_data import Corpus, K, Probe, Ranker, by_namespace
from bench.quality_fields import named_dates, named_speakers, utc_date
from bench.server_proc import ServerProcess
from bench.textproc import add_words, tokenize
from pocketd import Client, MemoryInput
from server.core.memory.ports import TextEncoder

DEPTH = max(K)
FUSION_DEPTH = 100  # each channel's candidates for the hybrid
SPEAKER_BOOST = 0.5  # added to the fused score of a named speaker's turns (not tuned)
DATE_BOOST = 0.5  # added to the fused score of the turns on a named day or month (not tuned)
Scored = list[tuple[str, float]]  # turn ids with their scores, best first
Q = TypeVar("Q")  # a query: what a channel reads (the hybrid only hands it on)
_Q_in = TypeVar("_Q_in", contravariant=True)


def log(msg: str) -> None:
    print(f"[quality] {msg}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Document:
    """What the in-process baselines index per turn: the words as text, the speaker and the
    event time as fields."""

    turn_id: str
    text: str
    speaker: str
    time: float


def documents(corpus: Corpus) -> dict[str, list[Document]]:
    """Per namespace, its turns as documents, in the corpus's order."""
    return {
        ns: [Document(t.turn_id, t.text, t.speaker, t.time) for t in turns]
        for ns, turns in by_namespace(corpus.turns).items()
    }


def bm25_index(texts: Sequence[str]) -> bm25s.BM25:
    """bm25s (k1 1.5, b 0.75, its defaults) over `bench.textproc.tokenize` of each text."""
    index = bm25s.BM25(k1=1.5, b=0.75)
    index.index([tokenize(t) for t in texts], show_progress=False)
    return index


def bm25_top(index: bm25s.BM25, ids: Sequence[str], text: str, depth: int) -> Scored:
    """The best `depth` of `ids` (the index's documents, in order) for the query `text`, with
    their scores; documents that share no term with it are left out."""
    query = tokenize(text)
    if not query:
        return []
    docs, scores = index.retrieve([query], k=min(depth, len(ids)), show_progress=False)
    pairs = zip(docs[0].tolist(), scores[0].tolist(), strict=True)
    return [(ids[d], s) for d, s in pairs if s > 0]


def top(ids: Sequence[str], scores: npt.NDArray[np.floating], depth: int) -> Scored:
    """The `depth` best-scored of `ids`, best first (ties: the ids' order)."""
    order = np.argsort(-scores, kind="stable")[:depth]
    return [(ids[i], float(scores[i])) for i in order.tolist()]


class BM25:
    """bm25s (k1 1.5, b 0.75, its defaults) per namespace over `bench.textproc.tokenize` of the
    words: stemmed, stopwords removed, Chinese segmented by jieba (which is taught the speakers'
    names first, so that a question naming one is segmented well)."""

    def __init__(self, corpus: Corpus) -> None:
        self.docs = documents(corpus)
        self.ids = {ns: [d.turn_id for d in docs] for ns, docs in self.docs.items()}
        add_words({t.speaker for t in corpus.turns})
        self.indexes = {ns: bm25_index([d.text for d in docs]) for ns, docs in self.docs.items()}

    def scored(self, p: Probe, depth: int) -> Scored:
        return bm25_top(self.indexes[p.namespace], self.ids[p.namespace], p.text, depth)

    def __call__(self, p: Probe) -> list[str]:
        return [t for t, _ in self.scored(p, DEPTH)]


class Dense:
    """Exact cosine over an encoder's vectors of the words (`bench.encoder.bench_encoder()`,
    the server's default, unless one is given)."""

    def __init__(self, corpus: Corpus, encoder: TextEncoder | None = None) -> None:
        self.enc = bench_encoder() if encoder is None else encoder
        manifest = getattr(self.enc, "manifest", None)
        self.model = str(getattr(manifest, "name", type(self.enc).__name__))
        self.docs = documents(corpus)
        self.ids = {ns: [d.turn_id for d in docs] for ns, docs in self.docs.items()}
        self.mats: dict[str, npt.NDArray[np.float32]] = {
            ns: np.asarray(self.enc.encode([d.text for d in docs]))
            for ns, docs in self.docs.items()
        }
        self._queries: dict[str, npt.NDArray[np.float32]] = {}
        texts = sorted({p.text for p in corpus.probes})
        if texts:
            self._queries = dict(zip(texts, np.asarray(self.enc.encode(texts)), strict=True))

    def scored(self, p: Probe, depth: int) -> Scored:
        q = self._queries.get(p.text)
        if q is None:
            q = self._queries[p.text] = np.asarray(self.enc.encode([p.text]))[0]
        return top(self.ids[p.namespace], self.mats[p.namespace] @ q, depth)

    def __call__(self, p: Probe) -> list[str]:
        return [t for t, _ in self.scored(p, DEPTH)]


def _min_max(hits: Scored) -> dict[str, float]:
    if not hits:
        return {}
    lo, hi = min(s for _, s in hits), max(s for _, s in hits)
    return {t: 1.0 if hi == lo else (s - lo) / (hi - lo) for t, s in hits}


class Channel(Protocol[_Q_in]):
    """What the hybrid reads of a channel: its best `depth` ids for a query, with their scores
    (`BM25` and `Dense` above, or `bench.bilingual_rankers`' over a `Question`)."""

    def scored(self, query: _Q_in, depth: int, /) -> Scored: ...


class Hybrid(Generic[Q]):
    """The generic hybrid: `BM25` and `Dense` above, each min-max normalised over its own top
    100, fused 0.5/0.5 (a turn missing from a channel scores 0 there). Not tuned."""

    def __init__(self, bm25: Channel[Q], dense: Channel[Q]) -> None:
        self.bm25, self.dense = bm25, dense

    def fused(self, p: Q) -> tuple[dict[str, float], dict[str, int]]:
        """The fused scores of the channels' candidates, and the dense order (for ties)."""
        dense = self.dense.scored(p, FUSION_DEPTH)
        b, d = _min_max(self.bm25.scored(p, FUSION_DEPTH)), _min_max(dense)
        order = {t: i for i, (t, _) in enumerate(dense)}
        return {t: 0.5 * b.get(t, 0.0) + 0.5 * d.get(t, 0.0) for t in b.keys() | d.keys()}, order

    @staticmethod
    def ranked(fused: dict[str, float], order: dict[str, int]) -> list[str]:
        return sorted(fused, key=lambda t: (-fused[t], order.get(t, len(order)), t))[:DEPTH]

    def __call__(self, p: Q) -> list[str]:
        return self.ranked(*self.fused(p))


class HybridFields:
    """The hybrid plus the two fields, as an afternoon's build reads them
    (`bench.quality_fields`): when the question names a speaker of the namespace, +0.5 to
    that speaker's turns; when it names a day or a month (or "yesterday", "last week" against
    its `as_of`), +0.5 to the turns whose event time falls in it. A boosted turn joins the
    candidates even when neither channel found it. Fixed boosts, not tuned."""

    def __init__(self, hybrid: Hybrid[Probe]) -> None:
        self.hybrid = hybrid
        assert isinstance(hybrid.dense, Dense)  # the fields are read from its documents
        self.docs = hybrid.dense.docs
        self.speakers = {ns: {d.speaker for d in docs} for ns, docs in self.docs.items()}

    def __call__(self, p: Probe) -> list[str]:
        fused, order = self.hybrid.fused(p)
        speakers = named_speakers(p.text, self.speakers[p.namespace])
        dates = named_dates(p.text, p.as_of)
        if speakers or dates:
            for d in self.docs[p.namespace]:
                boost = SPEAKER_BOOST if d.speaker in speakers else 0.0
                if dates and any(w.matches(utc_date(d.time)) for w in dates):
                    boost += DATE_BOOST
                if boost:
                    fused[d.turn_id] = fused.get(d.turn_id, 0.0) + boost
        return Hybrid.ranked(fused, order)


class Oracle:
    """The evidence itself, first: one turn of each evidence group (the best R@k can be)."""

    def __call__(self, p: Probe) -> list[str]:
        return [g[0] for g in p.evidence][:DEPTH]


class Ceiling:
    """The evidence pocketd still holds, first: one held turn of each evidence group whose
    turn some stored memory maps to (`Pocketd.held`). The best R@k pocketd could reach after
    its write gate and merging."""

    def __init__(self, held: set[str]) -> None:
        self.held = held

    def __call__(self, p: Probe) -> list[str]:
        kept = [next((t for t in g if t in self.held), None) for g in p.evidence]
        return [t for t in kept if t is not None][:DEPTH]


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

    def __init__(
        self,
        keep: bool = False,
        work: Path | None = None,
        config: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        """`work`: a directory to serve from and keep (its `data` and the turn map `turns.json`
        saved by `save`), so that a later server with other query settings (`config`, a pocketd
        YAML file; `env`, `POCKETD__…` variables) reads the same stored memories without
        importing them again."""
        self.work = work or Path(tempfile.mkdtemp(prefix="pocketd-quality-"))
        self.keep = keep or work is not None
        self.work.mkdir(parents=True, exist_ok=True)
        self.config = config
        self.srv = ServerProcess(self.work / "data", env=env, config=config)
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

    def reopen(self, env: dict[str, str] | None = None) -> None:
        """Serve the same stored memories from a new server with `env` (`POCKETD__…`
        variables): the same data directory, turn map and labels."""
        self.client.close()
        self.srv.stop()
        self.srv = ServerProcess(self.work / "data", env=env, config=self.config)
        self.srv.wait_serving(timeout=300)
        self.client = Client(self.srv.target, timeout=120)
        self._wait_indexed()

    @property
    def saved(self) -> bool:
        """Whether `work` holds an import saved by `save` (then `load` replaces `add`)."""
        return (self.work / "turns.json").exists()

    def save(self) -> None:
        (self.work / "turns.json").write_text(
            json.dumps({"turn_of": self.turn_of, "imports": self.imports})
        )

    def load(self) -> None:
        saved = json.loads((self.work / "turns.json").read_text())
        self.turn_of, self.imports = saved["turn_of"], saved["imports"]
        self._wait_indexed()

    @property
    def held(self) -> set[str]:
        """The turns some stored memory maps to (a merged memory: its newest turn only)."""
        return set(self.turn_of.values())

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


def baselines(corpus: Corpus, info: dict[str, Any]) -> dict[str, Ranker]:
    """The in-process baselines over `corpus`: "hybrid+fields", "hybrid", "bm25", "dense",
    "trivial" (`info` gets the dense encoder's name)."""
    log(f"baselines: indexing {len(corpus.turns)} turns (bm25, dense)")
    bm25 = BM25(corpus)
    dense = Dense(corpus)
    info["dense_encoder"] = dense.model
    hybrid = Hybrid(bm25, dense)
    return {
        "hybrid+fields": HybridFields(hybrid),
        "hybrid": hybrid,
        "bm25": bm25,
        "dense": dense,
        "trivial": Trivial(corpus),
    }


def import_summary(imp: dict[str, float]) -> str:
    """One of `Pocketd.imports` in words: speed, index wait, the gate's drops, merging's folds."""
    return (
        f"{imp['turns_per_second']:.0f} turns/s ({imp['seconds']:.1f} s, then"
        f" {imp['index_wait_seconds']:.1f} s for the indexes), {imp['rejected_by_gate']:.0f} of"
        f" {imp['turns']:.0f} turns rejected by the gate, {imp['turns_folded_by_merging']:.0f}"
        " folded into others by merging"
    )
