"""The cold tier as a Recall sees it: a pocket of the archive (server/adapters/cold_segments.py),
priced high (server/core/memory/costs.py), left out of THE plan unless the query asks for it or
the router's safety net widens to it (server/core/query/plan.py, server/core/routing/router.py),
scanned by the vector channel as method `cold` and kept out of the keyword channel otherwise
(server/core/query/channels.py); Get reads it as any record."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import msgspec
import numpy as np
import pytest

from server.adapters.cold_segments import ColdVectorIndex
from server.core.engine import MemoryEngine
from server.core.memory.changes import Cause, Put
from server.core.memory.costs import CostModel
from server.core.memory.model import PocketStats, RecallQuery, RecallResult, Tier
from server.core.memory.ports import KeywordQuery, KeywordResult
from server.core.query.plan import default_pockets, full_plan
from server.core.settings import ColdSettings, LifecycleSettings, MemorySettings, PocketSettings
from tests.conftest import FakeClock, unit_vec
from tests.unit.routing.test_router import router
from tests.unit.test_engine import NS, mem

COLD = "fact/cold/text"
WARM = "fact/warm/text"


@pytest.fixture
def engine_with_archive(engine_factory: Callable[..., MemoryEngine]) -> Callable[[], MemoryEngine]:
    """Engines whose vector indexes keep the cold pockets in the archive beside them, as
    `server.app.build_engine` (and tests.conftest.open_engine) open them."""
    return engine_factory


def archive(engine: MemoryEngine, memory_ids: Sequence[str]) -> None:
    """What the retention pass does to a memory below its threshold: a Put of tier cold (cause
    TIER_MOVE) through the writer's lock and publish."""
    w = engine._writer
    keys = [engine._store.key_of(NS, m) for m in memory_ids]
    with w._lock:
        now = engine._clock.now()
        moved = [
            Put(msgspec.structs.replace(r, tier=Tier.COLD, updated_at=now), None, Cause.TIER_MOVE)
            for r in engine._store.get([k for k in keys if k is not None]).values()
        ]
        w._commit(moved)
    engine.indexer.catch_up()


def found(res: RecallResult) -> list[str]:
    return [h.record.memory_id for h in res.hits]


def cold_steps(res: RecallResult) -> list[str]:
    return [r.method for r in res.plan if "/cold/" in r.pocket]


@pytest.fixture
def stocked(
    engine_with_archive: Callable[[], MemoryEngine],
) -> tuple[MemoryEngine, str, np.ndarray]:
    """An engine with three facts, one of them archived: (engine, its id, its vector)."""
    engine = engine_with_archive()
    rng = np.random.default_rng(11)
    v = [unit_vec(rng) for _ in range(3)]
    written = engine.remember(
        [
            mem("Alice is allergic to penicillin, prescription QX7731", vector=v[0]),
            mem("The garden gate is painted green", vector=v[1]),
            mem("Bob drinks his tea without sugar", vector=v[2]),
        ]
    )
    engine.indexer.catch_up()
    archive(engine, [written[0].memory_id])
    return engine, written[0].memory_id, v[0]


def test_a_cold_memory_is_searched_only_when_the_query_asks(
    stocked: tuple[MemoryEngine, str, np.ndarray],
) -> None:
    engine, archived, vector = stocked
    part = engine._vectors.partition(NS, COLD, False)
    assert isinstance(part, ColdVectorIndex) and len(part) == 1
    assert len(engine._vectors.partition(NS, WARM, False) or ()) == 2  # it left the warm index
    # Get reads it, as any record.
    rec, _ = engine.get(NS, archived, False)
    assert rec.tier == Tier.COLD
    # Neither channel finds it by default: not its own vector, nor its one identifier.
    q = RecallQuery(NS, text="penicillin prescription QX7731", vector=vector)
    default = engine.recall(q)
    assert archived not in found(default) and cold_steps(default) == []
    assert archived not in found(engine.recall(RecallQuery(NS, text="QX7731")))
    asked = engine.recall(msgspec.structs.replace(q, include_cold=True))
    assert found(asked)[0] == archived
    [step] = [r for r in asked.plan if r.pocket == COLD]
    assert (step.method, step.scanned) == ("cold", 1)
    assert step.cost_units == ColdSettings().units_per_vector
    assert step.best == pytest.approx(1.0, abs=2e-3)
    # The keyword channel alone reaches it too, once asked.
    kw = engine.recall(RecallQuery(NS, text="QX7731", include_cold=True))
    assert found(kw)[:1] == [archived]


def test_the_keyword_query_leaves_the_archive_out_unless_asked(
    stocked: tuple[MemoryEngine, str, np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    engine, _, _ = stocked
    asked: list[tuple[str, ...] | None] = []
    search = engine._keywords.search

    def spy(kq: KeywordQuery) -> KeywordResult:
        asked.append(kq.pockets)
        return search(kq)

    monkeypatch.setattr(engine._keywords, "search", spy)
    engine.recall(RecallQuery(NS, text="QX7731 garden"))
    # The default plan's pockets, named: the archive's documents never fill its list.
    assert asked and all(p is not None and COLD not in p and WARM in p for p in asked)
    asked.clear()
    engine.recall(RecallQuery(NS, text="QX7731 garden", include_cold=True))
    assert asked == [None]  # every pocket of the namespace: nothing to leave out


def test_the_cold_pocket_is_listed_at_its_price(
    stocked: tuple[MemoryEngine, str, np.ndarray],
) -> None:
    engine, _, _ = stocked
    [ns] = engine.stats(NS).namespaces
    assert {t.tier: t.count for t in ns.tiers}[Tier.COLD] == 1
    by_name = {p.name: p for p in ns.pockets}
    cold, warm = by_name[COLD], by_name[WARM]
    assert (cold.method, cold.size) == ("cold", 1)
    assert cold.cost_per_vector == ColdSettings().units_per_vector > warm.cost_per_vector


def test_the_archive_survives_a_restart(
    stocked: tuple[MemoryEngine, str, np.ndarray],
    engine_with_archive: Callable[[], MemoryEngine],
) -> None:
    engine, archived, vector = stocked
    engine.close()
    again = engine_with_archive()
    part = again._vectors.partition(NS, COLD, False)
    assert isinstance(part, ColdVectorIndex) and len(part) == 1
    q = RecallQuery(NS, text="penicillin", vector=vector, include_cold=True)
    assert found(again.recall(q))[0] == archived
    assert archived not in found(again.recall(msgspec.structs.replace(q, include_cold=False)))


def test_the_safety_net_widens_to_the_archive_and_nothing_else_does(
    stocked: tuple[MemoryEngine, str, np.ndarray], clock: FakeClock
) -> None:
    engine, archived, vector = stocked
    r = router(engine, policy="heuristic")
    critical = RecallQuery(NS, text="which medication am I allergic to", vector=vector)
    d = r.decide(critical, vector, clock.now())
    assert d.widened.startswith("safety") and COLD in {s.pocket for s in d.steps}
    assert COLD not in {p.name for p in d.context.pockets}  # not a routed candidate
    engine.planner = r
    try:
        assert found(engine.recall(critical))[0] == archived
        plain = RecallQuery(NS, text="what colour is the garden gate", vector=vector)
        assert COLD not in {s.pocket for s in r.decide(plain, vector, clock.now()).steps}
        assert cold_steps(engine.recall(plain)) == []
        # The full policy and the confidence floor keep to THE plan.
        for policy in ("full", "heuristic"):
            floor = router(engine, policy=policy, min_confidence=0.99)
            d = floor.decide(plain, vector, clock.now())
            assert COLD not in {s.pocket for s in d.steps}, (policy, d.widened)
        # Asked for, the archive is a candidate, priced as it is.
        asked = r.context(msgspec.structs.replace(plain, include_cold=True), vector, clock.now())
        [cold] = [p for p in asked.pockets if p.name == COLD]
        assert cold.method == "cold" and COLD in {s.pocket for s in asked.full}
    finally:
        engine.planner = None


def test_a_cold_pocket_costs_its_price_per_vector_at_any_depth() -> None:
    memory = msgspec.structs.replace(
        MemorySettings(),
        lifecycle=LifecycleSettings(cold=ColdSettings(units_per_vector=50.0)),
    )
    c = CostModel.from_settings(memory)
    assert c.method(Tier.COLD, 10) == "cold" and c.method(Tier.WARM, 10) != "cold"
    for size in (1, 100, 100_000):
        for depth in (1, 64):
            assert c.search(Tier.COLD, size, depth) == 50.0 * size
            assert c.search(Tier.COLD, size, depth) > c.search(Tier.WARM, size, depth)
        assert c.per_vector(Tier.COLD, size) == 50.0 > c.per_vector(Tier.WARM, size)
    assert CostModel(PocketSettings(), 128).cold(3) == 3 * ColdSettings().units_per_vector


def stats(name: str, method: str, size: int) -> PocketStats:
    tier = name.split("/")[1]
    return PocketStats(
        name, 1, Tier[tier.upper()], 1, "", size, method, 1.0, float(size), 0.0, 0.0, 0.0
    )  # type: ignore[arg-type]


def test_the_plan_leaves_the_archive_out_unless_asked() -> None:
    pockets = [stats(WARM, "hnsw", 10_000), stats(COLD, "cold", 50_000), stats("a/hot/t", "hot", 5)]
    assert [p.name for p in default_pockets(pockets, False)] == [WARM, "a/hot/t"]
    assert default_pockets(pockets, True) == pockets
    # Asked for, a cold pocket keeps the whole depth, and the graph's share is as it was.
    without = {s.pocket: s.depth for s in full_plan(default_pockets(pockets, False), 64, 5)}
    within = {s.pocket: s.depth for s in full_plan(pockets, 64, 5)}
    assert within == {**without, COLD: 64}
