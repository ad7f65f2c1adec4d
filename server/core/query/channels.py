"""The two channels of a Recall: the vector channel (the hot tier's exact scan, then each warm
step by an exact scan, coarse to fine or HNSW, and each cold step by a scan of its archive) and
the keyword channel (one BM25 query over the plan's pockets, and the hot tier's unindexed
memories)."""

from __future__ import annotations

import dataclasses
import math
import re

import numpy as np

from kernels.scan import exact_topk
from server.core.deadline import Deadline
from server.core.memory.model import MemoryFilter, PlanStep, StepReport, Tier, Vector
from server.core.memory.ports import KeywordQuery
from server.core.query.early_stop import EarlyStop
from server.core.query.run import KeyArray, Reader, Run, Sources
from server.core.query.scoring import keyword_scale
from server.core.settings import ContextSettings

_DIGIT = re.compile(r"\d")
_LETTER = re.compile(r"[^\W\d_]")
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


class VectorChannel(Reader):
    def __init__(self, src: Sources, stop: EarlyStop) -> None:
        super().__init__(src)
        self._stop = stop

    def run(self, run: Run, query: Vector, deadline: Deadline) -> None:
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
            if (tier := cat.key(pid).tier) != Tier.HOT:
                part = self._vectors.partition(q.namespace, step.pocket, False)
                n = 0 if part is None else len(part)
                run.hnsw_vectors += n if self._costs.method(tier, n) == "hnsw" else 0
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
            ceilings = self._stop.ceilings(run, query, warm)
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
                    bar = self._stop.bar(run)
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
        run: Run,
        pid: int,
        step: PlanStep,
        query: Vector,
        matching: KeyArray | None,
        deadline: Deadline,
    ) -> StepReport:
        """One warm or cold pocket's vector candidates; `matching`: a selective filter's rows of
        it. A cold pocket is scanned whole (or its matching rows read), as an exact step is, and
        reports method `cold` at the archive's price."""
        q = run.q
        tier = self._cols.catalog.key(pid).tier
        scan = "cold" if tier == Tier.COLD else "exact"  # how its rows are scanned exactly
        part = self._vectors.partition(q.namespace, step.pocket, False)
        size = 0 if part is None else len(part)
        if part is None or size == 0 or step.depth <= 0:
            return StepReport(step.pocket, step.depth, scan, 0, 0.0)
        method = self._costs.method(tier, size)
        if matching is not None:
            keys = matching
            if len(keys) == 0:
                return StepReport(step.pocket, step.depth, scan, 0, 0.0)
            if len(keys) <= self._s.exact_scan_max_rows:
                mat = part.get(keys)
                idx, sims = exact_topk(mat, query, np.any(mat != 0, axis=1), step.depth)
                run.add_vectors(keys[idx], sims)
                cost = self._costs.of(scan, len(keys), step.depth)
                best = float(sims.max()) if len(sims) else 0.0
                return StepReport(step.pocket, step.depth, scan, len(keys), cost, best)
            fetch = math.ceil(step.depth * self._s.overfetch * size / len(keys))
        else:
            fetch = math.ceil(step.depth * self._s.overfetch)
        fetch, cost = min(fetch, size), 0.0
        if method == "coarse":  # a deep step can rerank so much that the exact scan is cheaper
            method = self._costs.scan(size, fetch)
        for _ in range(DEEPER):
            if method in ("exact", "cold"):  # the whole pocket (a warm one: cheaper than its graph)
                keys, sims = part.search(query, fetch, exact=True)
                cost += self._costs.of(method, size, fetch)
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
            # An archive is decompressed whole by every scan: the next one keeps all it finds.
            fetch = size if method == "cold" else min(size, fetch * 4)
            if method in ("coarse", "hnsw") and fetch * 2 >= size:  # the whole pocket, exactly
                method, fetch = "exact", size
        kept = sims[keep][: step.depth]
        run.add_vectors(keys[keep][: step.depth], kept)
        best = float(kept.max()) if len(kept) else 0.0
        return StepReport(step.pocket, step.depth, method, size, cost, best)

    def _breadth(self, run: Run, size: int) -> int:
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


class KeywordChannel(Reader):
    def __init__(self, src: Sources, context: ContextSettings) -> None:
        super().__init__(src)
        c = context
        self._context_weights = tuple(
            (dist, c.weight(dist, c.keyword_weight))
            for dist in range(-c.turns, c.turns + 1)
            if c.weight(dist, c.keyword_weight) > 0
        )

    def run(self, run: Run, everything: bool, deadline: Deadline) -> None:
        q = run.q
        if not run.pockets:
            return
        depth = self._s.candidates_per_channel
        terms = self._keywords.analyze(q.text)
        ident = exact_identifiers(terms)
        # The default plan leaves the cold pockets out: so must the BM25 query, or their
        # documents would fill the list that the mask then empties.
        everything = everything and not self._cold_left_out(run)
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
            unseen_weight=self._s.unseen_term_weight,
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
            norm = keyword_scale(run, np.array([s for _, s in res.hits], np.float64))
            run.kw.update(
                zip(keys[keep][:depth].tolist(), norm[keep][:depth].tolist(), strict=True)
            )
            if len(res.hits) >= kq.count or keep.sum() > depth:
                # The first stage only approximates the rescoring: an unlisted memory (or one
                # cut at the depth) may score anything, so a full list bounds nothing.
                run.kw_full = True
        # Unindexed memories: the weighted share of the query's terms, on the same scale. A
        # term the index has not seen yet is as rare as its rarest.
        unseen = max(res.idf.values(), default=1.0)
        weights = {t: res.idf.get(t, unseen) for t in terms}
        hk, hs = self._hot.keyword(q.namespace, weights, lambda k: run.mask(self._cols, k))
        # The hot tier holds the newest version of what it scores: its share stands (the index
        # may still hold an older version of a memory written again), as its vector does.
        run.kw.update(zip(hk.tolist(), hs.tolist(), strict=True))
        run.exact = res.exact | self._hot_exact(run, ident)

    def _cold_left_out(self, run: Run) -> bool:
        """Whether the namespace has a cold pocket that the plan does not search."""
        cat = self._cols.catalog
        return any(
            p not in run.pockets and cat.key(p).tier == Tier.COLD
            for p in cat.of_namespace(run.ns_id)
        )

    def _hot_exact(self, run: Run, ident: tuple[str, ...]) -> frozenset[int]:
        """Unindexed memories that hold every identifier of the query."""
        if not ident:
            return frozenset()
        hk, hs = self._hot.keyword(
            run.q.namespace, {t: 1.0 for t in ident}, lambda k: run.mask(self._cols, k)
        )
        return frozenset(int(k) for k, s in zip(hk.tolist(), hs.tolist(), strict=True) if s >= 1.0)
