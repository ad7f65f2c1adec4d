"""Hybrid recall: vector and keyword candidates, fused and decayed in the compiled kernels.

Vector channel: an exact scan of the hot tier, plus the warm HNSW index of each (namespace, kind)
partition. usearch cannot filter during search, so:
- with no filter beyond the defaults (obsolete and expired memories out), over-fetch
  `overfetch × candidates_per_channel` and filter the result;
- with a filter, count the partition's matching rows from the metadata columns: at most
  `exact_scan_max_rows` are scanned exactly (so a selective filter never starves the ANN result);
  otherwise over-fetch in proportion to the filter's selectivity.

Keyword channel: tantivy BM25 restricted to the namespace, filtered, then divided by its best
score; memories not yet in the BM25 index are matched in the hot tier.

Both channels keep `candidates_per_channel` (≥ 50) candidates, so a hit strong in one channel
is not lost before fusion.
"""

from __future__ import annotations

import math
import re
import time

import numpy as np

from kernels.decay import step_decay
from kernels.fusion import fuse, normalise_by_max
from kernels.rank import rank_final
from kernels.scan import exact_topk
from server.core.deadline import Deadline
from server.core.memory.columns import Columns
from server.core.memory.hot import HotTier
from server.core.memory.model import (
    Hit,
    Kind,
    MemoryFilter,
    RecallQuery,
    RecallResult,
    Score,
    Tier,
    Vector,
)
from server.core.memory.ports import Clock, KeywordIndex, RecordStore, VectorIndexSet
from server.core.settings import MemorySettings

_DAY = 86_400.0
_KINDS = [k for k in Kind if k != Kind.UNSPECIFIED]


class Retriever:
    """Runs one Recall over the hot tier and the warm indexes."""

    def __init__(
        self,
        settings: MemorySettings,
        columns: Columns,
        hot: HotTier,
        vectors: VectorIndexSet,
        keywords: KeywordIndex,
        store: RecordStore,
        clock: Clock,
    ) -> None:
        self._s = settings.hybrid_search
        self._cols = columns
        self._hot = hot
        self._vectors = vectors
        self._keywords = keywords
        self._store = store
        self._clock = clock
        d = settings.retrieval
        self._decay_kinds = np.array([int(Kind[k.upper()]) for k in d.kinds], dtype=np.int8)
        self._thresholds = np.array([x * _DAY for x in d.after_days], dtype=np.float64)
        self._factors = np.array(d.factors, dtype=np.float32)
        self._cues = tuple(c.lower() for c in self._s.image_cues)
        # Latin cues are whole words ("ago" is not in "Chicago"); CJK ones are substrings.
        self._temporal = re.compile(
            "|".join(
                rf"\b{re.escape(c.lower())}\b" if c.isascii() else re.escape(c)
                for c in d.temporal_cues
            )
            or r"(?!)"
        )

    def weights(self, q: RecallQuery) -> tuple[float, float]:
        """(vector, keyword) weights: the image pair when the query has an image or an image cue."""
        text = q.text.lower()
        if q.image_query or any(c in text for c in self._cues):
            return self._s.image_vector_weight, self._s.image_keyword_weight
        return self._s.vector_weight, self._s.keyword_weight

    def temporal(self, q: RecallQuery) -> bool:
        """A question about time: it asks for the old memory itself, so nothing decays."""
        return self._temporal.search(q.text.lower()) is not None

    def recall(self, q: RecallQuery, deadline: Deadline) -> RecallResult:
        t0 = time.perf_counter()
        now = self._clock.now()
        w_vec, w_kw = self.weights(q)
        top_k = q.top_k or self._s.top_k
        ns_id = self._cols.ns_id(q.namespace)
        vec: dict[int, float] = {}
        kw: dict[int, float] = {}
        if ns_id >= 0:

            def mask_fn(keys: np.ndarray) -> np.ndarray:  # type: ignore[type-arg]
                return self._cols.mask(
                    keys, ns_id, q.filter, now, q.include_obsolete, q.include_expired
                )

            if q.vector is not None:
                vec = self._vector_channel(q, q.vector, ns_id, now, mask_fn, deadline)
            if q.text:
                deadline.check("the keyword channel")
                kw = self._keyword_channel(q, mask_fn)
        deadline.check("ranking")
        hits = self._rank(q, vec, kw, w_vec, w_kw, top_k, now)
        return RecallResult(
            hits=hits,
            vector_weight=w_vec,
            keyword_weight=w_kw,
            vector_candidates=len(vec),
            keyword_candidates=len(kw),
            took_micros=int((time.perf_counter() - t0) * 1e6),
        )

    def _vector_channel(  # type: ignore[no-untyped-def]
        self, q: RecallQuery, query: Vector, ns_id: int, now: float, mask_fn, deadline: Deadline
    ):
        depth = self._s.candidates_per_channel
        out: dict[int, float] = {}
        kinds = q.filter.kinds or tuple(_KINDS)
        selective = q.filter != MemoryFilter(kinds=q.filter.kinds)
        for kind in kinds:
            deadline.check("a vector partition")
            part = self._vectors.partition(q.namespace, int(kind), False)
            if part is None or len(part) == 0:
                continue
            size = len(part)
            fetch = math.ceil(depth * self._s.overfetch)
            if selective:
                keys = self._cols.matching_keys(
                    ns_id, int(kind), q.filter, now, q.include_obsolete, q.include_expired
                )
                if len(keys) == 0:
                    continue
                if len(keys) <= self._s.exact_scan_max_rows:
                    mat = part.get(keys)
                    idx, sims = exact_topk(mat, query, np.any(mat != 0, axis=1), depth)
                    out.update(zip(keys[idx].tolist(), sims.tolist(), strict=True))
                    continue
                fetch = math.ceil(fetch * size / len(keys))
            keys, sims = part.search(query, min(fetch, size))
            keep = mask_fn(keys)
            keys, sims = keys[keep][:depth], sims[keep][:depth]
            out.update(zip(keys.tolist(), sims.tolist(), strict=True))
        # The hot tier is exact and holds the newest version of a memory: it overrides the ANN.
        hk, hs = self._hot.scan(q.namespace, query, depth, mask_fn)
        out.update(zip(hk.tolist(), hs.tolist(), strict=True))
        return out

    def _keyword_channel(self, q: RecallQuery, mask_fn) -> dict[int, float]:  # type: ignore[no-untyped-def]
        depth = self._s.candidates_per_channel
        found = self._keywords.search(q.namespace, q.text, math.ceil(depth * self._s.overfetch))
        out: dict[int, float] = {}
        if found:
            keys = np.array([k for k, _ in found], dtype=np.int64)
            raw = np.array([s for _, s in found], dtype=np.float32)
            keep = mask_fn(keys)
            keys, raw = keys[keep][:depth], raw[keep][:depth]
            norm = normalise_by_max(raw, np.ones(len(raw), dtype=np.bool_))
            out.update(zip(keys.tolist(), norm.tolist(), strict=True))
        hk, hs = self._hot.keyword(q.namespace, self._keywords.analyze(q.text), mask_fn)
        for k, s in zip(hk.tolist(), hs.tolist(), strict=True):
            out[k] = max(out.get(k, 0.0), s)
        return out

    def _rank(
        self,
        q: RecallQuery,
        vec: dict[int, float],
        kw: dict[int, float],
        w_vec: float,
        w_kw: float,
        top_k: int,
        now: float,
    ) -> list[Hit]:
        keys = np.array(sorted(vec.keys() | kw.keys()), dtype=np.int64)
        if len(keys) == 0:
            return []
        v = np.array([max(vec.get(k, 0.0), 0.0) for k in keys.tolist()], dtype=np.float32)
        b = np.array([kw.get(k, 0.0) for k in keys.tolist()], dtype=np.float32)
        vh = np.array([k in vec for k in keys.tolist()], dtype=np.bool_)
        kh = np.array([k in kw for k in keys.tolist()], dtype=np.bool_)
        fused = fuse(v, b, vh, kh, w_vec, w_kw, self._s.both_boost)
        floor = self._s.min_score if q.min_score is None else q.min_score
        relevant = fused >= floor
        if not relevant.all():
            keys, fused = keys[relevant], fused[relevant]
            v, b, vh, kh = v[relevant], b[relevant], vh[relevant], kh[relevant]
            if len(keys) == 0:
                return []
        c = self._cols
        decays = np.isin(c.kind[keys], self._decay_kinds) & (not self.temporal(q))
        decay = step_decay(now - c.refreshed[keys], decays, self._thresholds, self._factors)
        order, final = rank_final(fused, decay, c.obsolete[keys], top_k)
        chosen = [int(keys[i]) for i in order]
        records = self._store.get(chosen)
        vectors = self._store.get_vectors(chosen) if q.include_vectors else {}
        hits: list[Hit] = []
        for i in order.tolist():
            key = int(keys[i])
            rec = records.get(key)
            if rec is None:  # forgotten between ranking and reading
                continue
            rec.tier = Tier.HOT if self._hot.contains(key) else Tier.WARM
            hits.append(
                Hit(
                    record=rec,
                    score=Score(
                        vector=float(v[i]) if vh[i] else 0.0,
                        bm25=float(b[i]),
                        fused=float(fused[i]),
                        decay=float(decay[i]),
                        final=float(final[i]),
                        vector_hit=bool(vh[i]),
                        keyword_hit=bool(kh[i]),
                    ),
                    vector=vectors.get(key),
                )
            )
        return hits
