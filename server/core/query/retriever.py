"""Hybrid recall, run as a plan over pockets: vector and keyword candidates, fused and decayed in
the compiled kernels.

A plan is an ordered list of (pocket, depth) steps; the default visits every pocket of the
namespace that the filter allows. Each warm step searches its pocket's vectors: a selective
filter's matching rows exactly (numba, when they are few), a small pocket by a brute-force scan
of all its vectors (usearch's exact mode, SIMD over the stored f16, cheaper than copying them
out for numba; from `coarse_min_rows` vectors coarse to fine: its int8 codes scanned by numba,
then the best candidates reranked on their stored vectors), a large one by its HNSW graph,
over-fetching in proportion to the filter's selectivity (usearch cannot filter during search).
Hot pockets and every memory not yet indexed are scanned exactly in the hot tier, restricted to
the plan's pockets. The keyword
channel is one tantivy BM25 query over the plan's pockets with the filter inside it; memories
not yet in BM25 are matched in the hot tier.

Scales never depend on the other candidates, so a candidate's fused score is the same whichever
pockets are searched (a router can stop early with a sound bound): the vector score is the cosine
above `vector_floor`, rescaled to [0, 1]; the keyword score is BM25 over Σ idf of the query's
terms in the namespace, clipped to [0, 1]. Every step reports what it cost in cost units.
"""

from __future__ import annotations

import dataclasses
import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from kernels.decay import step_decay
from kernels.rank import rank_final
from kernels.scan import exact_topk
from server.core.clock import Clock
from server.core.deadline import Deadline
from server.core.memory.costs import CostModel
from server.core.memory.model import (
    Hit,
    Kind,
    MemoryFilter,
    PlanStep,
    RecallQuery,
    RecallResult,
    Score,
    StepReport,
    Tier,
    Vector,
)
from server.core.memory.ports import (
    HotTier,
    KeywordIndex,
    KeywordQuery,
    MetadataColumns,
    RecordStore,
    VectorIndexSet,
)
from server.core.memory.timecues import cue_pattern, window
from server.core.query.early_stop import COSINE_SLACK, Possible, best_cosine, ceilings
from server.core.query.plan import full_plan
from server.core.query.scoring import fused
from server.core.settings import MemorySettings

_DAY = 86_400.0
_DIGIT = re.compile(r"\d")
_LETTER = re.compile(r"[^\W\d_]")
KeyArray = npt.NDArray[np.int64]
# Searches of one pocket step (or of the keyword channel) in all, each four times deeper than the
# last, when the mask leaves fewer than its depth.
DEEPER = 3
# Warm steps between the early stop's recomputations of its bar, when the bound ahead is flat.
BAR_EVERY = 8


def exact_identifiers(terms: list[str]) -> tuple[str, ...]:
    """The analysed query terms that name one thing exactly: a digit with a letter (`e1234`,
    `rtx4090`) or a number of four digits or more (an order id)."""
    return tuple(
        t for t in dict.fromkeys(terms) if _DIGIT.search(t) and (_LETTER.search(t) or len(t) >= 4)
    )


@dataclass
class _Run:
    """The state of one recall while its plan runs."""

    q: RecallQuery
    ns_id: int
    now: float
    ref: float  # the reference time: `as_of`, else now
    pockets: dict[int, PlanStep]  # pocket id → its step
    vec: dict[int, float] = field(default_factory=dict)
    kw: dict[int, float] = field(default_factory=dict)
    exact: frozenset[int] = frozenset()
    reports: list[StepReport] = field(default_factory=list)
    keyword_cost: float = 0.0
    hnsw_vectors: int = 0  # in the plan's pockets searched by HNSW
    hot: set[int] = field(default_factory=set)  # keys the hot tier scored: exact, newest
    weights: tuple[float, float] = (0.5, 0.5)
    # The keyword query, its reference (Σ idf: the keyword scale), and the least score an
    # unlisted memory could have had on that scale (the lowest listed one if the list was full).
    kq: KeywordQuery | None = None
    reference: float = 0.0
    kw_tail: float = 0.0
    # Of the query, read once: its time cue's event-time window, and whether it asks "when".
    window: tuple[float, float] | None = None
    temporal: bool = False

    def add_vectors(self, keys: KeyArray, sims: npt.NDArray[np.float32]) -> None:
        """A warm pocket's candidates; the hot tier's score of a key stands (it is exact and
        holds the newest version of the memory)."""
        for k, sim in zip(keys.tolist(), sims.tolist(), strict=True):
            if k not in self.hot:
                self.vec[k] = sim

    def mask(self, cols: MetadataColumns, keys: KeyArray) -> npt.NDArray[np.bool_]:
        q = self.q
        m = cols.mask(keys, self.ns_id, q.filter, self.now, q.include_obsolete, q.include_expired)
        inside = keys < len(cols.pocket)
        m[inside] &= np.isin(cols.pocket[keys[inside]], list(self.pockets))
        return m


@dataclass(frozen=True)
class _Pocket:
    name: str
    size: int
    method: str


@dataclass(frozen=True)
class _Scores:
    keys: KeyArray
    cos: npt.NDArray[np.float32]
    b: npt.NDArray[np.float32]
    vh: npt.NDArray[np.bool_]
    kh: npt.NDArray[np.bool_]
    fused: npt.NDArray[np.float32]


class Retriever:
    """Runs one Recall over the hot tier and the warm indexes."""

    def __init__(
        self,
        settings: MemorySettings,
        columns: MetadataColumns,
        hot: HotTier,
        vectors: VectorIndexSet,
        keywords: KeywordIndex,
        store: RecordStore,
        clock: Clock,
    ) -> None:
        self._s = settings.hybrid_search
        self._p = settings.pockets
        self._costs = CostModel(settings.pockets, settings.hybrid_search.expansion_search)
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
        self._temporal = cue_pattern(d.temporal_cues)
        c = settings.context
        self._context_weights = tuple(
            (dist, c.weight(dist, c.keyword_weight))
            for dist in range(-c.turns, c.turns + 1)
            if c.weight(dist, c.keyword_weight) > 0
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

    def default_plan(
        self, namespace: str, ns_id: int, flt: MemoryFilter, top_k: int
    ) -> list[PlanStep]:
        """THE plan (`query.plan.full_plan`) over the pockets the filter allows."""
        cat = self._cols.catalog
        pockets = []
        for p in cat.allowed(ns_id, flt):
            key, size = cat.key(p), self._cols.pocket_size(p)
            pockets.append(_Pocket(key.name, size, self._costs.method(key.tier, size)))
        return full_plan(pockets, self._s.candidates_per_channel, top_k)

    def recall(
        self, q: RecallQuery, deadline: Deadline, vector: Callable[[], Vector] | None = None
    ) -> RecallResult:
        """`vector`: the query's vector when `q` has none yet, being computed meanwhile; it is
        asked for once the keyword channel has run."""
        t0 = time.perf_counter()
        now = self._clock.now()
        w_vec, w_kw = self.weights(q)
        top_k = q.top_k or self._s.top_k
        ns_id = self._cols.ns_id(q.namespace)
        ref = now if q.as_of is None else q.as_of
        run = _Run(
            q,
            ns_id,
            now,
            ref,
            {},
            weights=(w_vec, w_kw),
            window=window(q.text, ref) if q.text else None,
            temporal=self.temporal(q),
        )
        if ns_id >= 0:
            plan = (
                self.default_plan(q.namespace, ns_id, q.filter, top_k) if q.plan is None else q.plan
            )
            names = {
                self._cols.catalog.key(p).name: p for p in self._cols.catalog.of_namespace(ns_id)
            }
            run.pockets = {names[s.pocket]: s for s in plan if s.pocket in names}
            if q.text:
                deadline.check("the keyword channel")
                self._keyword_channel(run, q.plan is None, deadline)
            if q.vector is None and vector is not None:
                q.vector = vector()
            if q.vector is not None:
                self._vector_channel(run, q.vector, deadline)
        deadline.check("ranking")
        self._complete(run, q.vector)
        hits = self._rank(run, top_k)
        vector_cost = sum(r.cost_units for r in run.reports)
        return RecallResult(
            hits=hits,
            vector_weight=w_vec,
            keyword_weight=w_kw,
            vector_candidates=len(run.vec),
            keyword_candidates=len(run.kw),
            took_micros=int((time.perf_counter() - t0) * 1e6),
            plan=run.reports,
            cost_units=vector_cost + run.keyword_cost,
            keyword_cost_units=run.keyword_cost,
        )

    def _vector_channel(self, run: _Run, query: Vector, deadline: Deadline) -> None:
        q = run.q
        cat = self._cols.catalog
        selective = q.filter != MemoryFilter(kinds=q.filter.kinds)
        # The hot tier first: hot pockets and every unindexed memory of the plan's pockets.
        depth = max((s.depth for s in run.pockets.values()), default=0)
        if q.plan is None:  # the default plan: unindexed rows compete at the channel's depth
            depth = max(depth, self._s.candidates_per_channel)
        hk, hs = self._hot.scan(q.namespace, query, depth, lambda k: run.mask(self._cols, k))
        hot_seen = self._hot.count(q.namespace)
        for pid, step in run.pockets.items():
            if cat.key(pid).tier != Tier.HOT:
                part = self._vectors.partition(q.namespace, step.pocket, False)
                n = 0 if part is None else len(part)
                run.hnsw_vectors += n if self._costs.method(Tier.WARM, n) == "hnsw" else 0
        # A selective filter's matching rows, found in one pass over the columns for the whole
        # plan, then split by pocket.
        matching: dict[int, KeyArray] | None = None
        if selective:
            keys = self._cols.matching_keys(
                run.ns_id,
                list(run.pockets),
                q.filter,
                run.now,
                q.include_obsolete,
                q.include_expired,
            )
            of = self._cols.pocket[keys]
            matching = {pid: keys[of == pid] for pid in run.pockets}
        run.vec.update(zip(hk.tolist(), hs.tolist(), strict=True))
        run.hot = set(hk.tolist())
        stopped = False
        # The best any pocket from here on could reach (its ceiling does not change while the
        # plan runs: the keyword channel has run), computed once: the early stop's bound.
        ahead: list[float] = []
        if q.early_stop:
            warm = [pid for pid in run.pockets if cat.key(pid).tier != Tier.HOT]
            ceilings = self._ceilings(run, query, warm)
            ahead = list(np.maximum.accumulate(ceilings[::-1])[::-1]) if ceilings else []
        w, bar = 0, -math.inf  # warm steps so far; the early stop's bar
        for pid, step in run.pockets.items():
            key = cat.key(pid)
            if key.tier == Tier.HOT:
                run.reports.append(StepReport(step.pocket, step.depth, "hot", 0, 0.0))
                continue
            if q.early_stop and not stopped:
                # The bar only rises, so a stale one only stops later, never wrongly: it is
                # recomputed when the bound ahead falls, and every `BAR_EVERY` steps.
                if w == 0 or ahead[w] < ahead[w - 1] or w % BAR_EVERY == 0:
                    bar = self._bar(run)
                stopped = ahead[w] < bar
            w += 1
            if stopped:  # no memory of this pocket could enter the top k
                run.reports.append(StepReport(step.pocket, step.depth, "skipped", 0, 0.0))
                continue
            deadline.check("a vector pocket")
            mine = None if matching is None else matching[pid]
            run.reports.append(self._warm_step(run, pid, step, query, mine, deadline))
        # The hot scan's cost goes to the first step (it is one scan for the whole plan).
        if run.reports and hot_seen:
            r = run.reports[0]
            run.reports[0] = StepReport(
                r.pocket, r.depth, r.method, r.scanned + hot_seen, r.cost_units + hot_seen
            )

    def _warm_step(
        self,
        run: _Run,
        pid: int,
        step: PlanStep,
        query: Vector,
        matching: KeyArray | None,
        deadline: Deadline,
    ) -> StepReport:
        """One warm pocket's vector candidates; `matching`: a selective filter's rows of it."""
        q = run.q
        part = self._vectors.partition(q.namespace, step.pocket, False)
        size = 0 if part is None else len(part)
        if part is None or size == 0 or step.depth <= 0:
            return StepReport(step.pocket, step.depth, "exact", 0, 0.0)
        method = self._costs.method(Tier.WARM, size)
        if matching is not None:
            keys = matching
            if len(keys) == 0:
                return StepReport(step.pocket, step.depth, "exact", 0, 0.0)
            if len(keys) <= self._s.exact_scan_max_rows:
                mat = part.get(keys)
                idx, sims = exact_topk(mat, query, np.any(mat != 0, axis=1), step.depth)
                run.add_vectors(keys[idx], sims)
                cost = self._costs.exact(len(keys))
                best = float(sims.max()) if len(sims) else 0.0
                return StepReport(step.pocket, step.depth, "exact", len(keys), cost, best)
            fetch = math.ceil(step.depth * self._s.overfetch * size / len(keys))
        else:
            fetch = math.ceil(step.depth * self._s.overfetch)
        fetch, cost = min(fetch, size), 0.0
        if method == "coarse":  # a deep step can rerank so much that the exact scan is cheaper
            method = self._costs.scan(size, fetch)
        for _ in range(DEEPER):
            if method == "exact":  # a brute-force scan of the whole pocket: cheaper than its graph
                keys, sims = part.search(query, fetch, exact=True)
                cost += self._costs.exact(size)
            elif method == "coarse":  # its int8 codes, then the best candidates' own vectors
                keys, sims = part.coarse_search(query, fetch, self._costs.rerank(fetch))
                cost += self._costs.coarse(size, fetch)
            else:
                breadth = self._breadth(run, size)
                keys, sims = part.search(query, fetch, expansion=breadth)
                cost += self._costs.hnsw(size, fetch, breadth)
            # A key of another pocket is a ghost of a move the indexer has not replayed yet:
            # its vector here is the old one.
            keep = run.mask(self._cols, keys)
            of = self._cols.pocket
            inside = keys < len(of)  # keys beyond the arrays are not live (masked already)
            keep[inside] &= of[keys[inside]] == pid
            # The mask dropped so many (obsolete, expired or lagging rows) that fewer than the
            # depth are left although the pocket has more: search again, deeper, and once the
            # search would reach half the pocket, scan it exactly instead.
            if keep.sum() >= step.depth or len(keys) < fetch or fetch >= size:
                break
            deadline.check("a deeper vector search")
            fetch = min(size, fetch * 4)
            if method != "exact" and fetch * 2 >= size:  # the whole pocket: an exact scan
                method, fetch = "exact", size
        kept = sims[keep][: step.depth]
        run.add_vectors(keys[keep][: step.depth], kept)
        best = float(kept.max()) if len(kept) else 0.0
        return StepReport(step.pocket, step.depth, method, size, cost, best)

    def _breadth(self, run: _Run, size: int) -> int:
        """A shared search budget: the plan's HNSW pockets split `expansion_search` by size, so
        four pockets cost about what one index of them all would. Each gets at least
        `min_expansion_search`, plus `expansion_per_doubling` for each doubling of its size
        beyond `expansion_base_rows`: a larger graph needs a wider search for the same recall."""
        s = self._s
        total = run.hnsw_vectors
        share = size / total if total > size else 1.0
        doublings = max(0.0, math.log2(size / s.expansion_base_rows))
        floor = s.min_expansion_search + s.expansion_per_doubling * doublings
        return max(math.ceil(floor), math.ceil(s.expansion_search * share))

    def _context(self, run: _Run, key: int) -> tuple[KeyArray, KeyArray]:
        """A hit's neighbouring turns, left out like hits: obsolete and expired ones too unless
        the query asks for them."""
        q = run.q
        if q.context_turns <= 0:
            empty = np.empty(0, np.int64)
            return empty, empty
        before, after = self._cols.neighbours(key, q.context_turns)
        flt = MemoryFilter()

        def live(keys: KeyArray) -> KeyArray:
            ok = self._cols.mask(
                keys, run.ns_id, flt, run.now, q.include_obsolete, q.include_expired
            )
            return keys[ok]

        return live(before), live(after)

    def _keyword_channel(self, run: _Run, everything: bool, deadline: Deadline) -> None:
        q = run.q
        if not run.pockets:
            return
        depth = self._s.candidates_per_channel
        terms = self._keywords.analyze(q.text)
        ident = exact_identifiers(terms)
        pockets = None if everything else tuple(s.pocket for s in run.pockets.values())
        kq = KeywordQuery(
            namespace=q.namespace,
            text=q.text,
            count=depth,
            filter=q.filter,
            now=run.now,
            include_obsolete=q.include_obsolete,
            include_expired=q.include_expired,
            pockets=pockets,
            identifiers=ident,
            speaker_weight=self._s.speaker_weight,
            context_weights=self._context_weights,
            k1=self._s.bm25_k1,
            b=self._s.bm25_b,
        )
        for _ in range(DEEPER):
            # The filter is inside the tantivy query, so only the index's lag behind a
            # supersede or a Forget can drop a hit here; then it is asked again, deeper.
            res = self._keywords.search(kq)
            run.keyword_cost += self._costs.bm25(res.postings)
            keys = np.array([k for k, _ in res.hits], dtype=np.int64)
            keep = run.mask(self._cols, keys)
            if keep.sum() >= depth or len(keys) < kq.count:
                break
            deadline.check("a deeper keyword search")
            kq = dataclasses.replace(kq, count=kq.count * 4)
        run.kq = kq
        run.reference = sum(res.idf.values())
        if res.hits:
            norm = self._keyword_scale(run, np.array([s for _, s in res.hits], np.float64))
            run.kw.update(
                zip(keys[keep][:depth].tolist(), norm[keep][:depth].tolist(), strict=True)
            )
            if len(res.hits) >= kq.count:
                run.kw_tail = float(norm.min())
        # Unindexed memories: the weighted share of the query's terms, on the same scale. A
        # term the index has not seen yet is as rare as its rarest.
        unseen = max(res.idf.values(), default=1.0)
        weights = {t: res.idf.get(t, unseen) for t in terms}
        hk, hs = self._hot.keyword(q.namespace, weights, lambda k: run.mask(self._cols, k))
        for k, s in zip(hk.tolist(), hs.tolist(), strict=True):
            run.kw[k] = max(run.kw.get(k, 0.0), s)
        run.exact = res.exact | self._hot_exact(run, ident)

    def _hot_exact(self, run: _Run, ident: tuple[str, ...]) -> frozenset[int]:
        """Unindexed memories that hold every identifier of the query."""
        if not ident:
            return frozenset()
        hk, hs = self._hot.keyword(
            run.q.namespace, {t: 1.0 for t in ident}, lambda k: run.mask(self._cols, k)
        )
        return frozenset(int(k) for k, s in zip(hk.tolist(), hs.tolist(), strict=True) if s >= 1.0)

    def _floor(self, q: RecallQuery) -> float:
        return self._s.min_score if q.min_score is None else q.min_score

    @staticmethod
    def _keyword_scale(run: _Run, raw: npt.NDArray[np.float64]) -> npt.NDArray[np.float32]:
        """BM25 on the keyword channel's [0, 1] scale: over the query's reference, clipped."""
        if run.reference <= 0:
            return np.zeros(len(raw), np.float32)
        out: npt.NDArray[np.float32] = np.clip(raw / run.reference, 0.0, 1.0).astype(np.float32)
        return out

    def _complete(self, run: _Run, query: Vector | None) -> None:
        """Give every candidate both channels' scores, whichever channel found it, each
        computed one way: its cosine from its stored vector (the hot tier's row, else its
        pocket's index) in float32, whatever search found it, and its BM25 from the keyword
        index. A memory's score then depends on the query, the namespace and the memory,
        never on the plan, the search method or how deep its pocket was searched."""
        q = run.q
        if query is not None:
            qv = np.asarray(query, np.float32)
            keys = sorted(run.vec.keys() | run.kw.keys())
            cosines: dict[int, float] = {}
            held = self._hot.vectors(q.namespace, keys)
            if held:
                mat = np.stack([held[k] for k in held]).astype(np.float32)
                cosines.update(zip(held, (mat @ qv).tolist(), strict=True))
            by_pocket: dict[int, list[int]] = {}
            of = self._cols.pocket
            for k in keys:
                if k not in held and k < len(of) and of[k] >= 0:
                    by_pocket.setdefault(int(of[k]), []).append(k)
            cat = self._cols.catalog
            for pid, mine in by_pocket.items():
                part = self._vectors.partition(q.namespace, cat.key(pid).name, False)
                if part is None:
                    continue
                mat = part.get(np.array(mine, dtype=np.int64))
                present = np.any(mat != 0, axis=1).tolist()
                sims = (mat.astype(np.float32) @ qv).tolist()
                cosines.update((k, c) for k, ok, c in zip(mine, present, sims, strict=True) if ok)
            run.vec = cosines
        if run.kq is not None:
            missing = [k for k in run.vec if k not in run.kw]
            if missing:
                got = self._keywords.score(run.kq, missing)
                if got:
                    keys = list(got)
                    norm = self._keyword_scale(run, np.array([got[k] for k in keys], np.float64))
                    run.kw.update(zip(keys, norm.tolist(), strict=True))

    def _score(self, run: _Run) -> _Scores:
        """Every candidate's channels and fused score, by the one formula (`scoring`)."""
        vec, kw = run.vec, run.kw
        keys = np.array(sorted(vec.keys() | kw.keys()), dtype=np.int64)
        cos = np.array([vec.get(k, -1.0) for k in keys.tolist()], dtype=np.float32)
        b = np.array([kw.get(k, 0.0) for k in keys.tolist()], dtype=np.float32)
        c = self._cols
        exact = np.isin(keys, list(run.exact)) if run.exact else np.zeros(len(keys), np.bool_)
        if (span := run.window) is not None:
            inside = (c.created[keys] >= span[0]) & (c.created[keys] < span[1])
        else:
            inside = np.zeros(len(keys), np.bool_)
        # A "when" question wants a memory that says when: its answer type.
        when = c.says_when[keys] if run.temporal else np.zeros(len(keys), np.bool_)
        score = fused(self._s, run.weights, cos, b, exact, inside, when)
        vh = cos > self._s.floor  # a vector hit clears the floor
        kh = b > 0
        return _Scores(keys, cos, b, vh, kh, score)

    def _decay(self, run: _Run, keys: KeyArray) -> npt.NDArray[np.float32]:
        c = self._cols
        decays = np.isin(c.kind[keys], self._decay_kinds) & (not run.temporal)
        age = np.maximum(run.ref - c.refreshed[keys], 0.0)
        out: npt.NDArray[np.float32] = step_decay(age, decays, self._thresholds, self._factors)
        return out

    def _bar(self, run: _Run) -> float:
        """What a memory must beat to be returned: the relevance floor, or, once there are k
        current memories above it, the k-th final score among them (scores only rise as more
        pockets are searched, so the bar only rises). A pocket whose ceiling is below it can
        be skipped."""
        q = run.q
        sc = self._score(run)
        top_k = q.top_k or self._s.top_k
        bar = self._floor(q)
        live = (sc.fused >= bar) & ~self._cols.obsolete[sc.keys]
        if live.sum() >= top_k:
            final = sc.fused[live] * self._decay(run, sc.keys[live])
            bar = max(bar, float(np.partition(final, len(final) - top_k)[len(final) - top_k]))
        return bar

    def _ceilings(self, run: _Run, query: Vector, pids: list[int]) -> list[float]:
        """The highest score any memory of each pocket could reach (see `bounds`)."""
        q = run.q
        of = self._cols.pocket
        best_kw: dict[int, float] = {}  # pocket → its best listed keyword score
        for k, score in run.kw.items():
            if k < len(of):
                p = int(of[k])
                best_kw[p] = max(best_kw.get(p, 0.0), score)
        exact = {int(of[k]) for k in run.exact if k < len(of)}
        span = run.window
        out: list[Possible] = []
        for pid in pids:
            part = self._vectors.partition(q.namespace, self._cols.catalog.key(pid).name, False)
            cap = None if part is None else part.cap()
            times = self._cols.pocket_span(pid)  # every event time ever put in the pocket
            possible = Possible(
                cosine=-1.0 if cap is None else best_cosine(query, *cap) + COSINE_SLACK,
                # an unlisted memory of it scores at most the list's lowest, if it was full
                keyword=max(best_kw.get(pid, 0.0), run.kw_tail),
                exact=pid in exact,
                in_window=span is not None
                and (times is None or (times[0] < span[1] and times[1] >= span[0])),
                says_when=run.temporal,
            )
            out.append(possible)
        return ceilings(self._s, run.weights, out)

    def _rank(self, run: _Run, top_k: int) -> list[Hit]:
        q, vec = run.q, run.vec
        sc = self._score(run)
        keys, cos, b, vh, kh, fused = sc.keys, sc.cos, sc.b, sc.vh, sc.kh, sc.fused
        if len(keys) == 0:
            return []
        c = self._cols
        relevant = fused >= self._floor(q)
        if not relevant.all():
            keys, fused, cos = keys[relevant], fused[relevant], cos[relevant]
            b, vh, kh = b[relevant], vh[relevant], kh[relevant]
            if len(keys) == 0:
                return []
        decay = self._decay(run, keys)
        order, final = rank_final(fused, decay, c.obsolete[keys], top_k)
        chosen = [int(keys[i]) for i in order]
        context = {k: self._context(run, k) for k in chosen}
        around = sorted({int(n) for b, a in context.values() for n in (*b, *a)})
        records = self._store.get(chosen + around)
        vectors = self._store.get_vectors(chosen) if q.include_vectors else {}
        cat = c.catalog
        hits: list[Hit] = []
        for i in order.tolist():
            key = int(keys[i])
            rec = records.get(key)
            if rec is None:  # forgotten between ranking and reading
                continue
            hits.append(
                Hit(
                    record=rec,
                    score=Score(
                        vector=max(float(cos[i]), 0.0) if key in vec else 0.0,
                        bm25=float(b[i]),
                        fused=float(fused[i]),
                        decay=float(decay[i]),
                        final=float(final[i]),
                        vector_hit=bool(vh[i]),
                        keyword_hit=bool(kh[i]),
                        exact_hit=key in run.exact,
                    ),
                    vector=vectors.get(key),
                    pocket=cat.key(int(c.pocket[key])).name,
                    context=[
                        records[int(n)]
                        for n in (*context[key][0], *context[key][1])
                        if int(n) in records
                    ],
                )
            )
        return hits
