"""Reconciliation against authoritative facts (seed 000 §4.3; server/core/memory/lifecycle/
reconcile.py) and its undoing: an official "the new version supports Android" makes the stored "the
app does not support Android" obsolete (reason "reconcile"); a dry run decides without writing; a
memory on another topic is not touched; Unsupersede makes it current again."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from server.core.deadline import no_deadline
from server.core.engine import MemoryEngine
from server.core.errors import NotFoundError
from server.core.memory.model import NewMemory, SourceType
from tests.conftest import DAY, FakeClock
from tests.unit.memory.lifecycle.lifecycle_kit import lifecycle_settings, recalled, records
from tests.unit.test_engine import NS, mem

STORED = "The app does not support Android"
ELSEWHERE = "The old app version does not support Android"
UNRELATED = "The app's release notes are published every Thursday"
OFFICIAL = "The new version supports Android"
QUESTION = "Does the app support Android?"


def official(text: str = OFFICIAL, topic: str = "platforms") -> NewMemory:
    return mem(text, topic=topic, source_type=SourceType.OFFICIAL_DOCUMENT)


@pytest.fixture
def stocked(
    engine_factory: Callable[..., MemoryEngine], clock: FakeClock
) -> tuple[MemoryEngine, str, str, str]:
    """An engine holding the stale claim, the same claim on another topic and an unrelated fact
    of the claim's topic, said a month ago: (engine, stale, elsewhere, unrelated)."""
    engine = engine_factory(lifecycle_settings())
    said = clock.now() - 30 * DAY
    stale, elsewhere, unrelated = (
        r.memory_id
        for r in engine.remember(
            [
                mem(STORED, topic="platforms", created_at=said),
                mem(ELSEWHERE, topic="legacy-desktop", created_at=said),
                mem(UNRELATED, topic="platforms", created_at=said),
            ]
        )
    )
    engine.indexer.catch_up()
    return engine, stale, elsewhere, unrelated


def test_a_dry_run_decides_without_writing(stocked: tuple[MemoryEngine, str, str, str]) -> None:
    engine, stale, elsewhere, unrelated = stocked
    before = records(engine)
    res = engine.reconcile(NS, [official()], True, no_deadline())
    assert not res.applied and res.fact_ids == []
    verdicts = {d.memory_id: d for d in res.decisions}
    assert verdicts[stale].supersede and verdicts[stale].fact_index == 0
    assert "value:negation" in verdicts[stale].reason
    assert verdicts[stale].text == STORED
    # Weighed and kept, each with its reason.
    for kept in (elsewhere, unrelated):
        if kept in verdicts:
            assert not verdicts[kept].supersede and verdicts[kept].reason
    assert "another topic" in verdicts[elsewhere].reason
    assert records(engine) == before  # nothing stored, nothing marked


def test_reconcile_marks_the_contradicted_memory_obsolete_and_unsupersede_restores_it(
    stocked: tuple[MemoryEngine, str, str, str],
) -> None:
    engine, stale, elsewhere, unrelated = stocked
    res = engine.reconcile(NS, [official()], False, no_deadline())
    assert res.applied and len(res.fact_ids) == 1
    fact = res.fact_ids[0]
    assert [d.memory_id for d in res.decisions if d.supersede] == [stale]
    recs = records(engine)
    assert recs[fact].text == OFFICIAL and recs[fact].source_type == SourceType.OFFICIAL_DOCUMENT
    assert not recs[fact].obsolete
    old = recs[stale]
    assert (old.obsolete, old.superseded_by, old.supersede_reason) == (True, fact, "reconcile")
    # Another topic, and a memory of the topic that states no other value: untouched.
    for kept in (elsewhere, unrelated):
        assert not recs[kept].obsolete and recs[kept].superseded_by == ""
    engine.indexer.catch_up()
    assert stale not in recalled(engine, QUESTION)
    assert recalled(engine, QUESTION)[0] == fact
    past = recalled(engine, QUESTION, include_obsolete=True)
    assert past.index(fact) < past.index(stale)

    # Reversible: the same memory is current again, without a successor or a reason.
    assert engine.unsupersede(NS, [stale], no_deadline()) == [stale]
    back = records(engine)[stale]
    assert (back.obsolete, back.superseded_by, back.supersede_reason) == (False, "", "")
    engine.indexer.catch_up()
    assert stale in recalled(engine, QUESTION)
    # Current already: nothing to restore.
    assert engine.unsupersede(NS, [stale, fact], no_deadline()) == []


def test_a_second_reconcile_of_the_same_fact_finds_nothing_more(
    stocked: tuple[MemoryEngine, str, str, str],
) -> None:
    engine, _, _, _ = stocked
    engine.reconcile(NS, [official()], False, no_deadline())
    engine.indexer.catch_up()
    again = engine.reconcile(NS, [official()], True, no_deadline())
    assert [d for d in again.decisions if d.supersede] == []


def test_an_unknown_id_in_unsupersede_changes_nothing(
    stocked: tuple[MemoryEngine, str, str, str],
) -> None:
    engine, stale, _, _ = stocked
    engine.reconcile(NS, [official()], False, no_deadline())
    with pytest.raises(NotFoundError) as err:
        engine.unsupersede(NS, [stale, "no-such-memory"], no_deadline())
    where = err.value.where
    assert where is not None and where.part == "memory_ids"
    assert 1 in (where.item, where.index)  # the second id named
    assert records(engine)[stale].obsolete  # refused before anything changed
