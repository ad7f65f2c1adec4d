"""Regression tests for write-path defects found by review (memory core v2, section 1): each
failed on the code before its fix."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from server.core.engine import MemoryEngine
from server.core.errors import NotFoundError
from server.core.memory.model import GateDecision, Kind, MemoryFilter, RecallQuery, Record
from server.core.memory.pockets import PocketCatalog, PocketScheme
from server.core.memory.state.columns import Columns
from server.core.settings import PocketSettings
from tests.conftest import unit_vec
from tests.unit.test_engine import NS, mem


def test_an_upsert_and_a_supersede_of_it_in_one_batch_keep_the_new_text(
    engine: MemoryEngine,
) -> None:
    engine.remember([mem("The VPN gateway is vpn-1", memory_id="gw")])
    engine.remember(
        [
            mem("The VPN gateway is vpn-2", memory_id="gw"),
            mem("The VPN gateway moved to vpn-3", supersedes=("gw",)),
        ]
    )
    rec, _ = engine.get(NS, "gw", False)
    assert rec.text == "The VPN gateway is vpn-2"  # the upsert's text, not the stored copy's
    assert rec.obsolete and rec.superseded_by


def test_forget_waits_for_a_merge_in_progress_and_wins(engine: MemoryEngine) -> None:
    """A merge reads the stored record, then writes it back: a Forget in between used to be
    undone, so Get returned the "forgotten" card number."""
    first = engine.remember([mem("Alice's card number is 4111 1111 1111 1111", Kind.FACT)])[0]
    store = engine._writer._store
    real_apply = store.apply
    forgot = threading.Event()
    errors: list[BaseException] = []

    def forget() -> None:
        try:
            engine.forget(NS, first.memory_id, None)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
        forgot.set()

    def write_during_forget(ops):  # type: ignore[no-untyped-def]
        store.apply = real_apply  # type: ignore[method-assign]  # only the merge is intercepted
        t = threading.Thread(target=forget)
        t.start()
        # Forget must not get through while the merge holds the write path. (If it could, it
        # usually would within this wait; a slow machine can only hide the old bug, never fail
        # the fixed code.)
        forgot.wait(0.5)
        applied = real_apply(ops)
        t_holder.append(t)
        return applied

    t_holder: list[threading.Thread] = []
    store.apply = write_during_forget  # type: ignore[method-assign]
    merged = engine.remember([mem("Alice's card number is 4111 1111 1111 1111.", Kind.FACT)])[0]
    assert merged.decision == GateDecision.MERGED
    t_holder[0].join(30)
    assert not errors
    with pytest.raises(NotFoundError):
        engine.get(NS, first.memory_id, False)
    hits = engine.recall(RecallQuery(namespace=NS, text="card number 4111", min_score=0.0)).hits
    assert first.memory_id not in [h.record.memory_id for h in hits]


def test_an_upsert_that_changes_kind_leaves_no_ghost_in_the_old_kind(
    engine: MemoryEngine,
) -> None:
    rng = np.random.default_rng(11)
    v = unit_vec(rng)
    engine.remember([mem("Dark mode on", Kind.PREFERENCE, v, memory_id="ui")])
    engine.indexer.catch_up()
    engine.remember([mem("Dark mode on", Kind.FACT, unit_vec(rng), memory_id="ui")])
    engine.indexer.catch_up()
    old_kind = engine._vectors.partition(NS, "preference/warm/text", False)
    assert old_kind is not None and len(old_kind) == 0  # the ghost is gone from the old index
    res = engine.recall(
        RecallQuery(
            namespace=NS, vector=v, filter=MemoryFilter(kinds=(Kind.PREFERENCE,)), min_score=0.0
        )
    )
    assert res.hits == []
    # A later near-duplicate of the old vector in the old kind is a new memory, not a merge.
    again = engine.remember([mem("Dark mode on", Kind.PREFERENCE, v)])[0]
    assert again.decision == GateDecision.STORED and again.memory_id != "ui"


def test_keys_beyond_the_metadata_arrays_are_simply_not_live() -> None:
    """After a restart an index can return a forgotten record's key beyond the arrays, until
    the indexer has replayed the deletion: that used to be an IndexError and INTERNAL."""
    cols = Columns(PocketCatalog(PocketScheme(PocketSettings())), capacity=4)
    cols.put(Record(memory_id="a", namespace="n", kind=Kind.FACT, key=1))
    ns_id = cols.ns_id("n")
    keys = np.array([1, 10_000, 3], dtype=np.int64)
    assert cols.mask(keys, ns_id, MemoryFilter(), 0.0, False, False).tolist() == [
        True,
        False,
        False,
    ]
    assert cols.current(keys).tolist() == [True, False, False]


def test_an_upsert_does_not_make_a_superseded_memory_current(engine: MemoryEngine) -> None:
    """Found by the state machine: rewriting a superseded memory by its id reset `obsolete`,
    a server-set field, so the old fact competed with its successor again."""
    engine.remember([mem("The deploy day is Monday", memory_id="day")])
    new = engine.remember([mem("The deploy day is now Thursday", supersedes=("day",))])[0]
    engine.remember([mem("The deploy day is Monday (per the old wiki)", memory_id="day")])
    rec, _ = engine.get(NS, "day", False)
    assert rec.text == "The deploy day is Monday (per the old wiki)"
    assert rec.obsolete and rec.superseded_by == new.memory_id


def test_an_upsert_and_a_merge_into_it_in_one_batch_keep_both(engine: MemoryEngine) -> None:
    engine.remember([mem("The VPN gateway is vpn-1", memory_id="gw")])
    engine.indexer.catch_up()
    up, merged = engine.remember(
        [mem("The VPN gateway is vpn-2", memory_id="gw"), mem("The VPN gateway is vpn-2.")]
    )
    assert up.memory_id == "gw"
    rec, _ = engine.get(NS, "gw", False)
    # The merge worked on the upserted copy, not on the stale stored one.
    assert rec.text.startswith("The VPN gateway is vpn-2"), rec.text
    assert merged.memory_id in ("gw", merged.memory_id)
    assert all(
        engine.get(NS, r.memory_id, False)[0].text.startswith("The VPN gateway is vpn-2")
        for r in (up, merged)
    )


def test_a_restatement_never_merges_into_what_the_same_batch_supersedes(
    engine: MemoryEngine,
) -> None:
    old = engine.remember([mem("The office wifi password is hunter2")])[0]
    engine.indexer.catch_up()
    _, restated = engine.remember(
        [
            mem("The office wifi password changed", supersedes=(old.memory_id,)),
            mem("The office wifi password is hunter2"),
        ]
    )
    assert restated.decision == GateDecision.STORED and restated.memory_id != old.memory_id
    hits = engine.recall(RecallQuery(namespace=NS, text="office wifi password hunter2")).hits
    assert restated.memory_id in [h.record.memory_id for h in hits]


def test_a_ghost_of_another_kind_is_no_merge_target(engine: MemoryEngine) -> None:
    rng = np.random.default_rng(12)
    v = unit_vec(rng)
    engine.remember([mem("Dark mode on", Kind.PREFERENCE, v, memory_id="ui")])
    engine.indexer.catch_up()
    engine.indexer.stop()  # the kind change is not indexed: the old index still has the vector
    engine.remember([mem("Dark mode on", Kind.FACT, unit_vec(rng), memory_id="ui")])
    again = engine.remember([mem("Dark mode on", Kind.PREFERENCE, v)])[0]
    assert again.decision == GateDecision.STORED and again.memory_id != "ui"
    assert engine.get(NS, "ui", False)[0].kind == Kind.FACT


def test_forgetting_a_record_whose_kind_changed_clears_every_index(engine: MemoryEngine) -> None:
    rng = np.random.default_rng(13)
    engine.remember([mem("Dark mode on", Kind.PREFERENCE, unit_vec(rng), memory_id="ui")])
    engine.indexer.catch_up()
    engine.remember([mem("Dark mode on", Kind.FACT, unit_vec(rng), memory_id="ui")])
    engine.forget(NS, "ui", None)
    engine.indexer.catch_up()
    for pocket in ("preference/warm/text", "fact/warm/text"):
        part = engine._vectors.partition(NS, pocket, False)
        assert part is None or len(part) == 0, pocket


def test_a_forgotten_turn_leaves_no_words_in_its_neighbours_context(engine: MemoryEngine) -> None:
    """Each turn is indexed with its neighbours' words as context: forgetting a turn must take
    its words out of the neighbours' context too, or it stays findable through them."""
    rng = np.random.default_rng(21)
    turns = [
        "Can you keep a secret?",
        "My card number is 4111 1111 1111 1111.",
        "I will keep it safe.",
    ]
    res = engine.remember(
        [mem(t, Kind.EPISODE, unit_vec(rng), session_id="s", speaker="u") for t in turns]
    )
    engine.indexer.catch_up()
    q = RecallQuery(namespace=NS, text="card number", vector=unit_vec(rng), min_score=0.0)
    hits = {h.record.text for h in engine.recall(q).hits}
    assert turns[0] in hits and turns[2] in hits  # found through their context
    engine.forget(NS, res[1].memory_id, None)
    engine.indexer.catch_up()
    hits = {h.record.text for h in engine.recall(q).hits if h.score.keyword_hit}
    assert hits == set()
