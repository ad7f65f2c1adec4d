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
the plan's pockets. A cold pocket, in a plan only when asked for (`query.plan`), is scanned whole
from its compressed segments. The keyword
channel is one tantivy BM25 query over the plan's pockets with the filter inside it; memories
not yet in BM25 are matched in the hot tier. Each channel then keeps its own best
`candidates_per_channel` (the vector channel across every pocket it searched, by its search
similarity fused with what the keyword channel listed, decayed, current first; an explicit
plan's deepest step keeps as many), and only those are completed (each gets both channels'
scores) and ranked: a plan of many small pockets, each searched at the whole depth, never
completes pockets × depth candidates.

Scales never depend on the other candidates, so a candidate's fused score is the same whichever
pockets are searched (a router can stop early with a sound bound): the vector score is the cosine
above `vector_floor`, rescaled to [0, 1]; the keyword score is BM25 over Σ idf of the query's
terms in the namespace, clipped to [0, 1]. Every step reports what it cost in cost units.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import msgspec

from server.core.clock import Clock
from server.core.deadline import Deadline
from server.core.memory.costs import CostModel
from server.core.memory.model import (
    PASSAGES,
    MemoryFilter,
    PlanStep,
    RecallQuery,
    RecallResult,
    StepReport,
    Vector,
)
from server.core.memory.ports import (
    HotTier,
    KeywordIndex,
    MetadataColumns,
    RecordStore,
    SpaceIndexSet,
    VectorIndexSet,
)
from server.core.memory.roles import RoleCues
from server.core.memory.script import script_of
from server.core.memory.timecues import cue_pattern, window
from server.core.query.channels import KeywordChannel, VectorChannel
from server.core.query.early_stop import EarlyStop
from server.core.query.hits import Hits
from server.core.query.plan import default_pockets, full_plan
from server.core.query.run import Run, Sources
from server.core.query.scoring import Scorer
from server.core.query.succession import Succession
from server.core.settings import MemorySettings


@dataclass(frozen=True)
class _Pocket:
    name: str
    size: int
    method: str


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
        spaces: SpaceIndexSet | None = None,
        space_scales: dict[str, tuple[float, float]] | None = None,
    ) -> None:
        """`spaces`: the named vector spaces' indexes (an image space's), each with its
        (floor, ceiling) in `space_scales` (a space not listed: the text space's)."""
        self._s = settings.hybrid_search
        self._costs = CostModel.from_settings(settings)
        self._cols = columns
        self._clock = clock
        src = Sources(
            self._s, columns, hot, vectors, keywords, store, self._costs, spaces, space_scales or {}
        )
        self._spaces = spaces
        self._scorer = Scorer(src, settings.retrieval)
        self._stop = EarlyStop(src, self._scorer)
        self._vector = VectorChannel(src, self._stop)
        self._keyword = KeywordChannel(src, settings.context)
        self._succession = Succession(src, settings.lifecycle.supersede)
        self._hits = Hits(src, self._scorer, self._succession)
        self._inherit = settings.lifecycle.supersede.enabled
        self._cues = tuple(c.lower() for c in self._s.image_cues)
        self._temporal = cue_pattern(settings.retrieval.temporal_cues)
        self._when = cue_pattern(settings.retrieval.when_cues)
        self._past = cue_pattern(settings.retrieval.past_cues)
        self._roles = RoleCues(settings.retrieval.agent_cues, settings.retrieval.asker_cues)

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
        self, namespace: str, ns_id: int, flt: MemoryFilter, top_k: int, include_cold: bool = False
    ) -> list[PlanStep]:
        """THE plan (`query.plan.full_plan`) over the pockets the filter allows (the cold tier's
        only with `include_cold`)."""
        cat = self._cols.catalog
        pockets = []
        for p in cat.allowed(ns_id, flt):
            key, size = cat.key(p), self._cols.pocket_size(p)
            pockets.append(_Pocket(key.name, size, self._costs.method(key.tier, size)))
        plan = default_pockets(pockets, include_cold)
        return full_plan(plan, self._s.candidates_per_channel, top_k)

    def space_dim(self, space: str) -> int | None:
        """A named space's dimension, once a vector of it is indexed."""
        return None if self._spaces is None else self._spaces.dim(space)

    def space_size(self, namespace: str, space: str) -> int:
        """How many memories of the namespace have a vector in the space."""
        return 0 if self._spaces is None else self._spaces.size(namespace, space)

    def _space_channel(self, run: Run) -> None:
        """Each space the query was encoded into, searched over the plan's pockets of that
        space at the channel's depth; a candidate's vector score is its best space's cosine
        (mapped onto the text scale). One report per space: pocket `@<space>`."""
        assert self._spaces is not None
        q, cat = run.q, self._cols.catalog
        names = [cat.key(p).name for p in run.pockets]
        depth = self._s.candidates_per_channel
        for space, qv in q.space_vectors.items():
            keys, sims = self._spaces.search(q.namespace, space, names, qv, depth)
            size = self._spaces.size(q.namespace, space)
            if len(keys):
                ok = run.mask(self._cols, keys)
                keys, sims = keys[ok], sims[ok]
            mapped = self._scorer.on_text_scale(space, sims).tolist()
            for k, c in zip(keys.tolist(), mapped, strict=True):
                if k not in run.vec or c > run.vec[k]:
                    run.vec[k] = c
                    run.space[k] = space
            units = self._costs.exact(size) * len(qv) / 384
            best = float(sims.max()) if len(sims) else 0.0
            run.reports.append(StepReport(f"@{space}", depth, "space", size, units, best))

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
        # With no obsolete memory in the namespace there is no match to pass on.
        hidden = (
            self._inherit
            and not q.include_obsolete
            and ns_id >= 0
            and self._cols.obsolete_count(ns_id) > 0
        )
        if hidden:  # the channels find them; their successors inherit their match
            q = msgspec.structs.replace(q, include_obsolete=True)
        run = Run(
            q,
            ns_id,
            now,
            ref,
            {},
            weights=(w_vec, w_kw),
            window=window(q.text, ref) if q.text else None,
            temporal=self.temporal(q),
            asks_when=self._when.search(q.text.lower()) is not None,
            script=script_of(q.text),
            role=self._roles.of(q.text),
            asks_past=self._past.search(q.text.lower()) is not None,
            hidden_obsolete=hidden,
        )
        if ns_id >= 0:
            plan = (
                self.default_plan(q.namespace, ns_id, q.filter, top_k, q.include_cold)
                if q.plan is None
                else q.plan
            )
            names = {
                self._cols.catalog.key(p).name: p for p in self._cols.catalog.of_namespace(ns_id)
            }
            run.pockets = {names[s.pocket]: s for s in plan if s.pocket in names}
            if q.text:
                deadline.check("the keyword channel")
                self._keyword.run(run, q.plan is None, deadline)
            if q.vector is None and vector is not None:
                q.vector = vector()
            if q.vector is not None:
                self._vector.run(run, q.vector, deadline)
            # The query's text vector also searches media memories' passages (if any).
            if (
                q.vector is not None
                and q.text
                and self._spaces is not None
                and PASSAGES not in q.space_vectors
                and self._spaces.size(q.namespace, PASSAGES)
            ):
                q.space_vectors[PASSAGES] = q.vector
            if q.space_vectors and self._spaces is not None:
                deadline.check("the named spaces")
                self._space_channel(run)
        deadline.check("ranking")
        found = len(run.vec), len(run.kw)  # by each channel, before both are completed
        # An explicit plan's depths are the client's: a step as deep as it asks is kept.
        deepest = max((s.depth for s in run.pockets.values()), default=0)
        self._scorer.keep_best_vectors(run, max(self._s.candidates_per_channel, top_k, deepest))
        self._succession.bring_heirs(run)
        self._scorer.complete(run, q.vector)
        self._scorer.complete_spaces(run)
        hits = self._hits.rank(run, top_k)
        vector_cost = sum(r.cost_units for r in run.reports)
        return RecallResult(
            hits=hits,
            vector_weight=w_vec,
            keyword_weight=w_kw,
            vector_candidates=found[0],
            keyword_candidates=found[1],
            took_micros=int((time.perf_counter() - t0) * 1e6),
            plan=run.reports,
            cost_units=vector_cost + run.keyword_cost,
            keyword_cost_units=run.keyword_cost,
        )
