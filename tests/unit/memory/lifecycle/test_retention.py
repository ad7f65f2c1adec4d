"""Forgetting over simulated months (server/core/memory/lifecycle/retention.py): warm memories of
low retention move to cold, important or often used ones stay warm, young ones never move; a cold
memory is still read by Get and found only by a Recall that asks for the cold tier; past
`expires_at` a memory is erased from every tier, the cold one too; a cold memory is erased for its
age alone only with `retention.cold_max_age_days`."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from server.core.engine import MemoryEngine
from server.core.errors import NotFoundError
from server.core.memory.model import Kind, RecallQuery, Tier
from tests.conftest import FakeClock
from tests.unit.memory.lifecycle.lifecycle_kit import (
    DAY,
    MONTH,
    lifecycle_settings,
    maintain,
    recalled,
    tiers,
)
from tests.unit.test_engine import NS, mem

PLAIN = "The shared drive for the design team is mounted at /mnt/design"
IMPORTANT = "Carol is severely allergic to peanuts"
USED = "The build server's admin console listens on port 8443"


def test_an_unused_memory_of_low_importance_moves_to_cold_after_months(
    engine_factory: Callable[..., MemoryEngine], clock: FakeClock
) -> None:
    engine = engine_factory(lifecycle_settings())
    plain, important, used = (
        r.memory_id
        for r in engine.remember(
            [mem(PLAIN, importance=3), mem(IMPORTANT, importance=5), mem(USED, importance=3)]
        )
    )
    engine.indexer.catch_up()
    for _ in range(12):  # an agent keeps reading this one
        engine.get(NS, used, False)
    engine.access.flush()
    # Two months unused: retention 0.5·0.5 + 0.5·0.25 = 0.375, still above the 0.3 threshold.
    clock.advance(2 * MONTH)
    assert maintain(engine).moved_to_cold == 0
    assert set(tiers(engine).values()) == {Tier.WARM}
    # Four months: freshness 1/16 leaves 0.28 < 0.3. Importance 5 keeps the allergy at 0.5 or
    # more whatever its age; twelve accesses keep the port's freshness at 0.77.
    clock.advance(2 * MONTH)
    report = maintain(engine)
    assert report.moved_to_cold == 1
    assert tiers(engine) == {plain: Tier.COLD, important: Tier.WARM, used: Tier.WARM}
    # Moved once: the next run finds nothing more to move.
    assert maintain(engine).moved_to_cold == 0

    # Get reads the archived memory as it was, Recall finds it only when asked to search cold.
    rec, vec = engine.get(NS, plain, True)
    assert rec.tier == Tier.COLD and rec.text == PLAIN and vec is not None
    assert plain not in recalled(engine, "Where is the design team's shared drive mounted?")
    assert plain in recalled(
        engine, "Where is the design team's shared drive mounted?", include_cold=True
    )
    # Found by its vector alone as well: the archive keeps it (and nothing warm holds it).
    assert plain not in [
        h.record.memory_id for h in engine.recall(RecallQuery(namespace=NS, vector=vec)).hits
    ]
    hits = engine.recall(RecallQuery(namespace=NS, vector=vec, include_cold=True)).hits
    assert hits[0].record.memory_id == plain


def test_retention_counts_from_the_last_access(
    engine_factory: Callable[..., MemoryEngine], clock: FakeClock
) -> None:
    """A memory read now and then stays fresh; the same memory left alone goes cold."""
    engine = engine_factory(lifecycle_settings())
    read, left = (
        r.memory_id
        for r in engine.remember(
            [mem("The VPN certificate is renewed by Ops"), mem("Guests use the side entrance")]
        )
    )
    for _ in range(6):  # six months, a read of one of them each month
        clock.advance(MONTH)
        engine.get(NS, read, False)
        engine.access.flush()
        maintain(engine)
    assert tiers(engine) == {read: Tier.WARM, left: Tier.COLD}


def test_nothing_younger_than_min_age_days_moves(
    engine_factory: Callable[..., MemoryEngine], clock: FakeClock
) -> None:
    """With a threshold that every memory is below, age since storing alone decides; an imported
    memory about an old event is young when it arrives."""
    engine = engine_factory(lifecycle_settings(retention={"threshold": 1.0, "min_age_days": 14}))
    first = engine.remember([mem("The office plants are watered on Mondays")])[0].memory_id
    clock.advance(10 * DAY)
    imported = engine.remember(
        [mem("The company was founded in a garage", created_at=clock.now() - 4000 * DAY)]
    )[0].memory_id
    clock.advance(5 * DAY)  # first: 15 days old; imported: 5 days since pocketd stored it
    assert maintain(engine).moved_to_cold == 1
    assert tiers(engine) == {first: Tier.COLD, imported: Tier.WARM}
    clock.advance(8 * DAY)  # 13 days: still too young
    assert maintain(engine).moved_to_cold == 0
    clock.advance(2 * DAY)
    assert maintain(engine).moved_to_cold == 1
    assert tiers(engine) == {first: Tier.COLD, imported: Tier.COLD}


def gone(engine: MemoryEngine, memory_id: str) -> bool:
    """Erased: Get is NOT_FOUND, and no Recall (even of the cold and the expired) returns it."""
    with pytest.raises(NotFoundError):
        engine.get(NS, memory_id, False)
    return memory_id not in recalled(
        engine, "retention test", include_cold=True, include_expired=True
    )


def test_expiry_erases_from_every_tier(
    engine_factory: Callable[..., MemoryEngine], clock: FakeClock
) -> None:
    # The session stays hot all along (a TTL longer than the test), so its turn expires hot.
    engine = engine_factory(lifecycle_settings(hot={"ttl_seconds": 365 * DAY}))
    until = clock.now() + 5 * MONTH
    hot, warm, cold, kept = (
        r.memory_id
        for r in engine.remember(
            [
                mem("retention test: the agent opened the deploy runbook", Kind.EPISODE,
                    session_id="s1", expires_at=until),
                mem("retention test: the deploy key rotates quarterly", importance=5,
                    expires_at=until),
                mem("retention test: the old deploy host was atlas-3", importance=3,
                    expires_at=until),
                mem("retention test: the deploy window is Tuesday morning", importance=5),
            ]
        )
    )  # fmt: skip
    clock.advance(4 * MONTH)  # the unimportant one is archived first
    report = maintain(engine)
    assert (report.moved_to_cold, report.expired) == (1, 0)
    assert tiers(engine) == {hot: Tier.HOT, warm: Tier.WARM, cold: Tier.COLD, kept: Tier.WARM}
    # What `gone` asks finds each of them while they live.
    assert {hot, warm, cold, kept} <= set(recalled(engine, "retention test", include_cold=True))
    clock.advance(MONTH - DAY)
    assert maintain(engine).expired == 0
    clock.advance(2 * DAY)
    report = maintain(engine)
    assert report.expired == 3
    assert gone(engine, warm) and gone(engine, hot) and gone(engine, cold)
    assert engine.stats(NS).namespaces[0].record_count == 1
    assert set(tiers(engine)) == {kept}
    assert maintain(engine).expired == 0


@pytest.mark.parametrize("max_age", [None, 300.0])
def test_a_cold_memory_is_deleted_for_age_only_when_configured(
    engine_factory: Callable[..., MemoryEngine], clock: FakeClock, max_age: float | None
) -> None:
    engine = engine_factory(lifecycle_settings(retention={"cold_max_age_days": max_age}))
    old, kept = (
        r.memory_id
        for r in engine.remember(
            [
                mem("retention test: the old deploy host was atlas-3", importance=3),
                mem("retention test: the deploy window is Tuesday morning", importance=5),
            ]
        )
    )
    clock.advance(4 * MONTH)
    assert maintain(engine).moved_to_cold == 1
    assert tiers(engine) == {old: Tier.COLD, kept: Tier.WARM}
    clock.advance(8 * MONTH)  # past 300 days since stored; expires_at is 3650 days away
    report = maintain(engine)
    if max_age is None:  # the archive keeps it, however old: Get still reads it
        assert report.expired == 0
        assert engine.get(NS, old, False)[0].tier == Tier.COLD
    else:
        assert report.expired == 1 and gone(engine, old)
    assert engine.get(NS, kept, False)[0].tier == Tier.WARM


def test_an_obsolete_memory_stays_warm_for_questions_about_the_past(
    engine_factory: Callable[..., MemoryEngine], clock: FakeClock
) -> None:
    """An old value is what a question about the past asks for, with `include_obsolete` (which
    searches no cold pocket): retention leaves it warm while an unused current one goes cold."""
    engine = engine_factory(lifecycle_settings())
    old = engine.remember([mem("The office wifi channel is 1", importance=3)])[0]
    clock.advance(DAY)
    new = engine.remember([mem("The office wifi channel is 6", importance=3)])[0]
    assert [s.memory_id for s in new.superseded] == [old.memory_id]
    plain = engine.remember([mem(PLAIN, importance=3)])[0]
    clock.advance(5 * MONTH)
    assert maintain(engine).moved_to_cold == 2  # the new value and the plain one, unused
    got = tiers(engine)
    assert got[old.memory_id] == Tier.WARM
    assert got[new.memory_id] == Tier.COLD and got[plain.memory_id] == Tier.COLD
    asked = recalled(engine, "which wifi channel did the office use before?", include_obsolete=True)
    assert old.memory_id in asked[:5]
