"""Pockets: the scheme and catalog (server/core/memory/pockets.py), and recall as a plan over them
through the engine: sizes, costs, plans that name pockets, the keyword channel restricted inside
tantivy, and fusion scales that do not move with what else is searched."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable

import msgspec
import numpy as np
import pytest

from server.core.deadline import no_deadline
from server.core.engine import MemoryEngine
from server.core.memory.costs import CostModel
from server.core.memory.model import (
    Kind,
    MemoryFilter,
    Modality,
    PlanStep,
    RecallQuery,
    Record,
    Tier,
    Vector,
)
from server.core.memory.pockets import (
    PocketCatalog,
    PocketKey,
    PocketScheme,
    bucket_of,
    bucket_span,
)
from server.core.query.run import Run
from server.core.query.scoring import Scorer
from server.core.settings import MemorySettings, PocketSettings
from tests.conftest import DAY, FakeClock, near, unit_vec
from tests.unit.test_engine import NS, mem

T0 = dt.datetime(2026, 11, 30, 12, tzinfo=dt.UTC).timestamp()  # a Monday, ISO week 2026-W49


@pytest.mark.parametrize(
    ("granularity", "label"),
    [("week", "2026-W49"), ("month", "2026-11"), ("day", "2026-11-30"), ("none", "")],
)
def test_buckets_label_and_span_the_event_time(granularity: str, label: str) -> None:
    assert bucket_of(T0, granularity) == label
    start, end = bucket_span(label)
    assert start <= T0 < end
    if label:
        assert bucket_of(start, granularity) == label
        assert bucket_of(end, granularity) != label
        assert bucket_of(start - 1, granularity) != label


def test_iso_weeks_cross_the_year_boundary() -> None:
    jan1 = dt.datetime(2027, 1, 1, tzinfo=dt.UTC).timestamp()  # a Friday: ISO week 2026-W53
    assert bucket_of(jan1, "week") == "2026-W53"
    start, end = bucket_span("2026-W53")
    assert start <= jan1 < end


def test_the_scheme_buckets_only_episodes_and_observations() -> None:
    scheme = PocketScheme(PocketSettings())
    ep = Record(memory_id="a", namespace="n", kind=Kind.EPISODE, created_at=T0, tier=Tier.HOT)
    fact = Record(memory_id="b", namespace="n", kind=Kind.FACT, created_at=T0, tier=Tier.WARM)
    assert scheme.key_of(ep).name == "episode/hot/text/2026-W49"
    assert scheme.key_of(fact).name == "fact/warm/text"


def test_the_catalog_interns_per_namespace_and_filters_by_kind_modality_and_time() -> None:
    cat = PocketCatalog(PocketScheme(PocketSettings()))
    week = PocketKey(Kind.EPISODE, Tier.WARM, Modality.TEXT, "2026-W49")
    older = PocketKey(Kind.EPISODE, Tier.WARM, Modality.TEXT, "2026-W40")
    img = PocketKey(Kind.FACT, Tier.WARM, Modality.IMAGE)
    a, b, c = cat.intern(0, week), cat.intern(0, older), cat.intern(0, img)
    assert cat.intern(0, week) == a and cat.intern(1, week) not in (a, b, c)
    assert set(cat.of_namespace(0)) == {a, b, c}
    assert cat.allowed(0, MemoryFilter(kinds=(Kind.EPISODE,))) == sorted(
        [a, b], key=lambda p: cat.key(p)
    )
    assert cat.allowed(0, MemoryFilter(modalities=(Modality.IMAGE,))) == [c]
    recent = cat.allowed(0, MemoryFilter(created_after=T0 - DAY))
    assert a in recent and b not in recent and c in recent  # an unbucketed pocket has no span


def _pockets(engine: MemoryEngine) -> dict[str, int]:
    ns = engine.stats(NS).namespaces
    return {p.name: p.size for p in ns[0].pockets} if ns else {}


def test_stats_lists_pockets_whose_sizes_sum_to_the_live_count(
    engine: MemoryEngine, clock: FakeClock
) -> None:
    rng = np.random.default_rng(1)
    engine.remember(
        [
            mem("Alice's laptop is a ThinkPad", Kind.FACT, unit_vec(rng)),
            mem("Alice prefers dark mode", Kind.PREFERENCE, unit_vec(rng)),
            mem("We talked about the trip", Kind.EPISODE, unit_vec(rng), session_id="s1"),
            mem(
                "Last year's trip to Oslo",
                Kind.EPISODE,
                unit_vec(rng),
                session_id="s0",
                created_at=clock.t - 400 * DAY,
            ),
        ]
    )
    engine.indexer.catch_up()
    sizes = _pockets(engine)
    week_now = bucket_of(clock.t, "week")
    week_then = bucket_of(clock.t - 400 * DAY, "week")
    assert sizes == {
        "fact/warm/text": 1,
        "preference/warm/text": 1,
        f"episode/hot/text/{week_now}": 1,  # a recent turn is hot
        f"episode/warm/text/{week_then}": 1,  # imported history is warm on arrival
    }
    st = engine.stats(NS).namespaces[0]
    assert sum(sizes.values()) == st.record_count
    assert {t.tier: t.count for t in st.tiers} == {Tier.HOT: 1, Tier.WARM: 3, Tier.COLD: 0}
    for p in st.pockets:
        assert p.method in {"exact", "hot"} and p.cost_per_vector == 1.0 and p.search_cost == 1.0
        assert p.oldest <= p.newest and p.radius == pytest.approx(0.0, abs=1e-3)
        assert p.centroid is not None and np.linalg.norm(p.centroid) == pytest.approx(1.0)


def test_hot_memories_move_to_warm_after_the_ttl_and_change_pocket(
    engine: MemoryEngine, clock: FakeClock
) -> None:
    rng = np.random.default_rng(2)
    v = unit_vec(rng)
    r = engine.remember([mem("We talked about the trip", Kind.EPISODE, v, session_id="s1")])[0]
    assert r.tier == Tier.HOT
    engine.indexer.catch_up()
    assert engine._writer.move_tiers(no_deadline()) == 0  # not yet due
    clock.advance(engine._s.hot.ttl_seconds + 1)
    assert engine._writer.move_tiers(no_deadline()) == 0  # s1 is still the current session
    w = unit_vec(rng)
    later = engine.remember([mem("The printer needs new toner", Kind.EPISODE, w, session_id="s2")])[
        0
    ]
    assert later.tier == Tier.HOT
    assert engine._writer.move_tiers(no_deadline()) == 1  # s2 began: s1 is past
    engine.forget(NS, later.memory_id, None)
    engine.indexer.catch_up()
    week = bucket_of(r.expires_at or 0, "week")  # unused: the bucket is of the event time
    del week
    rec, _ = engine.get(NS, r.memory_id, False)
    assert rec.tier == Tier.WARM
    name = engine.columns.catalog.scheme.key_of(rec).name
    assert _pockets(engine) == {name: 1} and name.startswith("episode/warm/text/")
    part = engine._vectors.partition(NS, name, False)
    assert part is not None and len(part) == 1
    assert not engine.hot.contains(engine._store.key_of(NS, r.memory_id) or 0)
    hits = engine.recall(RecallQuery(namespace=NS, vector=v)).hits
    assert [h.record.memory_id for h in hits] == [r.memory_id] and hits[0].pocket == name


def test_a_plan_searches_only_the_pockets_it_names_and_reports_their_cost(
    engine: MemoryEngine,
) -> None:
    rng = np.random.default_rng(3)
    v = unit_vec(rng)
    engine.remember(
        [
            mem("The VPN password rotates monthly", Kind.FACT, v),
            mem("Prefers the VPN on at all times", Kind.PREFERENCE, v),
        ]
    )
    engine.indexer.catch_up()
    full = engine.recall(RecallQuery(namespace=NS, vector=v, text="VPN", top_k=5))
    assert {h.pocket for h in full.hits} == {"fact/warm/text", "preference/warm/text"}
    assert {s.pocket for s in full.plan} == {"fact/warm/text", "preference/warm/text"}
    assert full.cost_units == pytest.approx(
        sum(s.cost_units for s in full.plan) + full.keyword_cost_units
    )
    assert full.keyword_cost_units > 0 and all(s.scanned == 1 for s in full.plan)
    one = engine.recall(
        RecallQuery(namespace=NS, vector=v, text="VPN", plan=[PlanStep("fact/warm/text", 10)])
    )
    assert [h.pocket for h in one.hits] == ["fact/warm/text"]  # BM25 is restricted too
    assert [s.pocket for s in one.plan] == ["fact/warm/text"]
    missing = engine.recall(
        RecallQuery(namespace=NS, vector=v, text="VPN", plan=[PlanStep("skill/warm/text", 10)])
    )
    assert missing.hits == [] and missing.plan == []


def test_a_fused_score_does_not_change_when_another_pocket_is_searched(
    engine: MemoryEngine,
) -> None:
    """The router's early stop needs it: BM25 used to be divided by the query's best hit."""
    rng = np.random.default_rng(4)
    v = unit_vec(rng)
    engine.remember(
        [
            mem("Deploys go out on Tuesdays after review", Kind.FACT, v),
            mem("Deploys deploys deploys: the deploy checklist for deploys", Kind.SKILL, v),
        ]
    )
    engine.indexer.catch_up()
    q = dict(namespace=NS, text="deploys review", vector=v, min_score=0.0)
    alone = engine.recall(RecallQuery(**q, plan=[PlanStep("fact/warm/text", 64)])).hits  # type: ignore[arg-type]
    both = engine.recall(RecallQuery(**q)).hits  # type: ignore[arg-type]
    fact = next(h for h in both if h.pocket == "fact/warm/text")
    assert alone[0].score.fused == pytest.approx(fact.score.fused, rel=1e-6)
    assert alone[0].score.bm25 == pytest.approx(fact.score.bm25, rel=1e-6)


def test_a_selective_filter_still_gets_keyword_candidates(engine: MemoryEngine) -> None:
    """The filter is part of the tantivy query: 300 unfiltered matches used to fill the
    over-fetch, and the one in session s9 was filtered out after it."""
    rng = np.random.default_rng(5)
    engine.remember(
        [
            mem(f"Invoice {i} was paid by bank transfer", Kind.FACT, unit_vec(rng), session_id="s1")
            for i in range(300)
        ]
        + [mem("Invoice paid by card, finally", Kind.FACT, unit_vec(rng), session_id="s9")]
    )
    engine.indexer.catch_up()
    res = engine.recall(
        RecallQuery(namespace=NS, text="invoice paid", filter=MemoryFilter(session_id="s9"))
    )
    assert [h.record.text for h in res.hits] == ["Invoice paid by card, finally"]
    assert res.keyword_candidates == 1


def test_keyword_statistics_are_per_namespace(engine: MemoryEngine) -> None:
    """Another tenant's memories must not shift a namespace's BM25 scores (nor leak through
    them): not its document frequencies, not its average length."""
    rng = np.random.default_rng(6)
    engine.remember([mem("The quarterly report is due Friday", Kind.FACT, unit_vec(rng))])
    engine.remember([mem("Lunch was pasta", Kind.FACT, unit_vec(rng))])
    engine.indexer.catch_up()

    def score() -> float:
        hits = engine.recall(RecallQuery(namespace=NS, text="quarterly report")).hits
        return hits[0].score.bm25

    before = score()
    other = "tenant-b:bob"
    engine.remember(
        [
            mem(
                f"quarterly report number {i} of the long series",
                Kind.FACT,
                unit_vec(rng),
                namespace=other,
            )
            for i in range(50)
        ]
    )
    engine.indexer.catch_up()
    assert score() == pytest.approx(before, rel=1e-5)


def test_the_both_boost_needs_a_vector_hit_above_the_floor(engine: MemoryEngine) -> None:
    """In a small namespace every memory is a vector candidate, at any cosine: a keyword hit
    used to get the both-channels boost even at cosine -1. (At cosine -1 the vector does not
    back the keyword match either: it counts at `keyword_unbacked_share`.)"""
    rng = np.random.default_rng(7)
    v = unit_vec(rng)
    engine.remember([mem("The wifi password is on the fridge", Kind.FACT, -v)])
    engine.indexer.catch_up()
    hit = engine.recall(RecallQuery(namespace=NS, text="wifi password", vector=v)).hits[0]
    assert hit.score.keyword_hit and not hit.score.vector_hit
    unbacked = MemorySettings().hybrid_search.keyword_unbacked_share
    assert hit.score.fused == pytest.approx(0.5 * unbacked * hit.score.bm25, rel=1e-5)


def test_the_holder_of_an_exact_identifier_is_never_outranked_by_topic_words(
    engine: MemoryEngine,
) -> None:
    rng = np.random.default_rng(8)
    q = unit_vec(rng)
    engine.remember(
        [
            mem("Build error E1234 was a full disk", Kind.SKILL, unit_vec(rng)),
            mem("Build error build error: the build failed, error in the build", Kind.SKILL, q),
        ]
    )
    engine.indexer.catch_up()
    hits = engine.recall(RecallQuery(namespace=NS, text="build error E1234", vector=q)).hits
    assert hits[0].record.text.startswith("Build error E1234")
    assert hits[0].score.exact_hit and not hits[1].score.exact_hit
    # Before indexing, the hot tier gives the same signal.
    engine.remember([mem("Error E7777 came from the proxy", Kind.SKILL, unit_vec(rng))])
    hits = engine.recall(RecallQuery(namespace=NS, text="build error E7777", vector=q)).hits
    assert hits[0].record.text.startswith("Error E7777") and hits[0].score.exact_hit


def test_the_default_plan_shares_the_vector_budget_by_pocket_size(
    engine_factory: Callable[..., MemoryEngine],
) -> None:
    """HNSW pockets split `candidates_per_channel` by size, each at least top_k: four pockets
    used to fetch 64 each, four times the one index they replaced. A pocket scanned exactly
    costs the same at any depth and keeps all 64."""
    s = MemorySettings()
    s = msgspec.structs.replace(s, pockets=msgspec.structs.replace(s.pockets, exact_max_rows=30))
    engine = engine_factory(s)
    rng = np.random.default_rng(9)
    engine.remember(
        [mem(f"fact {i}", Kind.FACT, unit_vec(rng), importance=3) for i in range(60)]
        + [mem(f"pref {i}", Kind.PREFERENCE, unit_vec(rng), importance=3) for i in range(40)]
        + [mem(f"skill {i}", Kind.SKILL, unit_vec(rng), importance=3) for i in range(10)]
    )
    engine.indexer.catch_up()
    v = unit_vec(rng)
    depths = {st.pocket: st.depth for st in engine.recall(RecallQuery(NS, vector=v)).plan}
    # 64 × 60/100 and 64 × 40/100 by HNSW; the 10 skills exactly.
    assert depths == {"fact/warm/text": 39, "preference/warm/text": 26, "skill/warm/text": 64}
    deep = engine.recall(RecallQuery(NS, vector=v, top_k=30)).plan
    assert {st.pocket: st.depth for st in deep}["preference/warm/text"] == 30


def test_only_the_vector_channels_best_are_completed(
    engine_factory: Callable[..., MemoryEngine], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Small pockets are scanned whole at the channel's depth, so a plan of many returns
    pockets × depth candidates; only the channel's best `candidates_per_channel` across them go
    on to be completed and ranked (the load test's 44 weekly pockets completed 2,800), and they
    are the best the whole namespace holds."""
    engine = engine_factory(MemorySettings())  # candidates_per_channel: 64
    rng = np.random.default_rng(11)
    kinds = (Kind.FACT, Kind.PREFERENCE, Kind.SKILL, Kind.OBSERVATION)
    v = unit_vec(rng)
    items = [
        mem(f"{k.name} {i}", k, near(v, rng, 0.08 + 0.001 * (4 * i + j)), importance=3)
        for j, k in enumerate(kinds)
        for i in range(70)
    ]
    engine.remember(items)
    engine.indexer.catch_up()
    completed: list[int] = []
    complete = Scorer.complete

    def spy(self: Scorer, run: Run, query: Vector | None) -> None:
        completed.append(len(run.vec))
        complete(self, run, query)

    monkeypatch.setattr(Scorer, "complete", spy)
    res = engine.recall(RecallQuery(NS, vector=v, top_k=5, min_score=0.0))
    assert len(res.plan) == 4 and res.vector_candidates == 256  # four pockets, 64 each
    assert completed == [64]
    # The same hits, with the same scores, as completing every candidate.
    monkeypatch.setattr(Scorer, "keep_best_vectors", lambda self, run, count: None)
    whole = engine.recall(RecallQuery(NS, vector=v, top_k=5, min_score=0.0))
    assert completed == [64, 256]
    assert [h.record.memory_id for h in res.hits] == [h.record.memory_id for h in whole.hits]
    for got, want in zip(res.hits, whole.hits, strict=True):  # float32 sums in another order
        assert got.score.final == pytest.approx(want.score.final, abs=1e-6)
    vectors = np.stack([it.vector for it in items if it.vector is not None])
    best = {items[i].record.text for i in np.argsort(-(vectors @ v))[:5]}
    assert {h.record.text for h in res.hits} == best


def test_the_cut_keeps_a_fresh_memory_below_many_decayed_ones(
    engine_factory: Callable[..., MemoryEngine],
    clock: FakeClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """70 facts 40 days old (decayed) lie closer to the query than one fresh skill of another
    pocket: by cosine alone the cut would keep 64 facts and drop the skill, which ranks first."""
    engine = engine_factory(MemorySettings())
    rng = np.random.default_rng(12)
    v = unit_vec(rng)
    engine.remember(
        [mem(f"old fact {i}", Kind.FACT, near(v, rng, 0.05), importance=3) for i in range(70)]
    )
    clock.advance(40 * DAY)
    engine.remember([mem("fresh skill", Kind.SKILL, near(v, rng, 0.08), importance=3)])
    engine.indexer.catch_up()
    q = RecallQuery(NS, vector=v, top_k=1, min_score=0.0)
    res = engine.recall(q)
    every = engine.recall(msgspec.structs.replace(q, top_k=71)).hits
    skill = next(h.score.vector for h in every if h.record.text == "fresh skill")
    assert sum(h.score.vector > skill for h in every) >= 64  # cut last by cosine
    monkeypatch.setattr(Scorer, "keep_best_vectors", lambda self, run, count: None)
    whole = engine.recall(q)
    assert whole.hits[0].record.text == "fresh skill"
    assert res.hits[0].record.text == "fresh skill"


def test_an_explicit_plans_depth_is_kept(
    engine_factory: Callable[..., MemoryEngine], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client's plan step asks for 100 candidates of its pocket: the cut keeps 100."""
    engine = engine_factory(MemorySettings())
    rng = np.random.default_rng(13)
    v = unit_vec(rng)
    engine.remember(
        [mem(f"fact {i}", Kind.FACT, near(v, rng, 0.1), importance=3) for i in range(120)]
    )
    engine.indexer.catch_up()
    completed: list[int] = []
    complete = Scorer.complete

    def spy(self: Scorer, run: Run, query: Vector | None) -> None:
        completed.append(len(run.vec))
        complete(self, run, query)

    monkeypatch.setattr(Scorer, "complete", spy)
    engine.recall(RecallQuery(NS, vector=v, plan=[PlanStep("fact/warm/text", 100)]))
    assert completed == [100]


def test_a_pocket_search_goes_deeper_when_the_mask_drops_its_candidates(
    engine: MemoryEngine, clock: FakeClock
) -> None:
    """The 30 nearest memories have expired: a step of depth 5 over-fetches 10, all masked,
    and must search again rather than return nothing."""
    rng = np.random.default_rng(10)
    v = unit_vec(rng)
    soon = clock.now() + 10
    engine.remember(
        [mem(f"gone {i}", Kind.FACT, near(v, rng, 0.05), expires_at=soon) for i in range(30)]
        + [mem(f"kept {i}", Kind.FACT, near(v, rng, 0.6)) for i in range(10)]
    )
    engine.indexer.catch_up()
    clock.advance(100)
    res = engine.recall(
        RecallQuery(NS, vector=v, min_score=0.0, plan=[PlanStep("fact/warm/text", 5)])
    )
    assert len(res.hits) == 5 and all(h.record.text.startswith("kept") for h in res.hits)
    assert res.vector_candidates == 5


def test_the_keyword_channel_asks_again_when_the_index_lags_a_forget(
    engine: MemoryEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The 70 best BM25 matches are forgotten but still in tantivy (the indexer is held): the
    first 64 candidates are all masked, so the channel must ask for more."""
    rng = np.random.default_rng(11)
    engine.remember(
        [mem(f"zebra {i}", Kind.FACT, unit_vec(rng), memory_id=f"z{i}") for i in range(70)]
        + [
            mem(
                f"zebra seen {i} near the long winding river bank at dusk", Kind.FACT, unit_vec(rng)
            )
            for i in range(10)
        ]
    )
    engine.indexer.catch_up()
    monkeypatch.setattr(engine.indexer, "step", lambda: 0)
    for i in range(70):
        assert engine.forget(NS, f"z{i}", None) == 1
    res = engine.recall(RecallQuery(NS, text="zebra", vector=unit_vec(rng), top_k=10))
    assert res.keyword_candidates == 10
    assert {h.record.text.split()[1] for h in res.hits} == {"seen"}


def test_a_larger_graph_is_searched_wider(engine_factory: Callable[..., MemoryEngine]) -> None:
    """At least `min_expansion_search`, plus `expansion_per_doubling` per doubling beyond
    `expansion_base_rows`; the step's cost units show the breadth it used."""
    s = MemorySettings()
    s = msgspec.structs.replace(
        s,
        pockets=msgspec.structs.replace(s.pockets, exact_max_rows=0),
        hybrid_search=msgspec.structs.replace(
            s.hybrid_search,
            min_expansion_search=64,
            expansion_per_doubling=50.0,
            expansion_base_rows=25,
        ),
    )
    engine = engine_factory(s)
    rng = np.random.default_rng(12)
    engine.remember([mem(f"row {i}", Kind.FACT, unit_vec(rng)) for i in range(100)])
    engine.indexer.catch_up()
    (step,) = engine.recall(RecallQuery(NS, vector=unit_vec(rng), top_k=5)).plan
    assert step.method == "hnsw" and step.scanned == 100
    costs = CostModel(s.pockets, s.hybrid_search.expansion_search)
    assert step.cost_units == pytest.approx(costs.hnsw(100, 128, 64 + 2 * 50))  # 100 = 25 × 2²


def test_an_identifier_holder_below_the_keyword_depth_still_gets_its_signal(
    engine: MemoryEngine,
) -> None:
    """100 short records share the query's topic words and outrank, in BM25, one long record
    holding E7777; the vector channel finds that holder, and it must keep its exact boost."""
    rng = np.random.default_rng(13)
    q = unit_vec(rng)
    filler = " ".join(f"filler{i}" for i in range(120))
    engine.remember(
        [mem(f"build error failed deploy retry {i}", Kind.SKILL, unit_vec(rng)) for i in range(100)]
        + [mem(f"{filler} E7777 {filler}", Kind.SKILL, q)]
    )
    engine.indexer.catch_up()
    res = engine.recall(RecallQuery(NS, text="build error failed deploy retry E7777", vector=q))
    assert res.hits[0].record.text.startswith("filler0") and res.hits[0].score.exact_hit


def test_a_memory_moved_to_another_pocket_is_not_scored_by_its_old_vector(
    engine: MemoryEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An upsert changes a fact into a skill with another vector while the indexer is held: the
    fact pocket's index still has the old vector (cosine 1 with the query). With more unindexed
    rows than the hot scan keeps, only the pocket check keeps that ghost out."""
    rng = np.random.default_rng(14)
    v = unit_vec(rng)
    engine.remember(
        [mem("the original", Kind.FACT, v, memory_id="moved"), mem("a fact", Kind.FACT, -v)]
    )
    engine.indexer.catch_up()
    monkeypatch.setattr(engine.indexer, "step", lambda: 0)
    engine.remember(
        [mem("the moved one", Kind.SKILL, -v, memory_id="moved")]
        + [mem(f"filler {i}", Kind.SKILL, near(v, rng, 0.3)) for i in range(100)]
    )
    hits = engine.recall(RecallQuery(NS, vector=v, top_k=200, min_score=0.0)).hits
    moved = [h for h in hits if h.record.memory_id == "moved"]
    assert not moved or moved[0].score.vector < 0.5  # its cosine is -1 now, never the old 1


def test_a_mid_sized_pocket_is_searched_coarse_to_fine(
    engine_factory: Callable[..., MemoryEngine],
) -> None:
    """A pocket scanned whole (at most `exact_max_rows`) of at least `coarse_min_rows`: int8
    codes, then a rerank on the stored vectors; the hits are the exact scan's, and the cost is
    the coarse model's, below the exact scan's (else the step scans exactly)."""
    s = MemorySettings()
    s = msgspec.structs.replace(
        s,
        pockets=msgspec.structs.replace(s.pockets, exact_max_rows=4000, coarse_min_rows=1000),
        # Random vectors: every cosine counts, so the ranking is the exact scan's order.
        hybrid_search=msgspec.structs.replace(s.hybrid_search, vector_floor=-1.0),
    )
    engine = engine_factory(s)
    rng = np.random.default_rng(15)
    vecs = [unit_vec(rng) for _ in range(1500)]
    engine.remember([mem(f"fact {i}", Kind.FACT, v, importance=3) for i, v in enumerate(vecs)])
    engine.indexer.catch_up()
    q = near(vecs[7], rng, 0.02)
    res = engine.recall(RecallQuery(NS, vector=q, top_k=5, min_score=0.0))
    (step,) = res.plan
    assert step.method == "coarse" and step.scanned == 1500
    costs = CostModel(s.pockets, s.hybrid_search.expansion_search)
    fetch = min(1500, math.ceil(step.depth * s.hybrid_search.overfetch))  # the over-fetch
    assert step.cost_units == pytest.approx(costs.coarse(1500, fetch))
    assert step.cost_units < costs.exact(1500)
    truth = np.argsort(-(np.stack(vecs) @ q))[:5]
    assert [h.record.text for h in res.hits] == [f"fact {i}" for i in truth]


def test_the_current_session_stays_one_hot_pocket_whatever_its_age(
    engine: MemoryEngine, clock: FakeClock
) -> None:
    """A session stays hot past the TTL while it is the namespace's latest hot session; a late
    turn of it arrives hot whatever its event time, while imported history arrives warm; once
    another session begins, its old turns move to warm."""
    rng = np.random.default_rng(3)
    ttl = engine._s.hot.ttl_seconds
    old = clock.t - 2 * DAY
    history = engine.remember(
        [
            mem(
                "We compared two laptops",
                Kind.EPISODE,
                unit_vec(rng),
                session_id="past",
                created_at=old,
            )
        ]
    )[0]
    assert history.tier == Tier.WARM  # imported history, beyond the session window
    first = engine.remember(
        [mem("We planned the Kyoto trip", Kind.EPISODE, unit_vec(rng), session_id="now")]
    )
    assert first[0].tier == Tier.HOT
    clock.advance(3 * ttl)
    late = engine.remember(
        [
            mem(
                "The hotel is near the station",
                Kind.EPISODE,
                unit_vec(rng),
                session_id="now",
                created_at=old,
            )
        ]
    )[0]
    assert late.tier == Tier.HOT  # a turn of the current session, however old
    assert engine._writer.move_tiers(no_deadline()) == 0
    engine.indexer.catch_up()
    hot = {n: c for n, c in _pockets(engine).items() if "/hot/" in n}
    assert sum(hot.values()) == 2
    engine.remember(
        [mem("The dentist moved my appointment", Kind.EPISODE, unit_vec(rng), session_id="next")]
    )
    assert engine._writer.move_tiers(no_deadline()) == 2  # "now" is past: both turns move
    for mid in (first[0].memory_id, late.memory_id):
        assert engine.get(NS, mid, False)[0].tier == Tier.WARM


def test_a_late_sent_latest_session_is_current_and_older_ones_are_not(
    engine: MemoryEngine, clock: FakeClock
) -> None:
    """A conversation sent hours late (within `hot.session_window_seconds`) begins the current
    session when it is the namespace's latest; a turn older than the latest is history."""
    rng = np.random.default_rng(4)
    hours = 3600.0
    latest = engine.remember(
        [mem("We picked the blue sofa", Kind.EPISODE, unit_vec(rng), session_id="today",
             created_at=clock.t - 2 * hours)]
    )[0]  # fmt: skip
    assert latest.tier == Tier.HOT
    earlier = engine.remember(
        [mem("The plumber comes on Monday", Kind.EPISODE, unit_vec(rng), session_id="morning",
             created_at=clock.t - 5 * hours)]
    )[0]  # fmt: skip
    assert earlier.tier == Tier.WARM  # older than the latest turn: a past session
    again = engine.remember(
        [mem("And the green cushions", Kind.EPISODE, unit_vec(rng), session_id="today",
             created_at=clock.t - 1.5 * hours)]
    )[0]  # fmt: skip
    assert again.tier == Tier.HOT
    assert engine._writer.move_tiers(no_deadline()) == 0  # the current session stays
