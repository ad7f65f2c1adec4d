"""Access statistics: Recall hits and Get are counted off the read path and folded in."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import msgspec
import numpy as np

from server.core.engine import MemoryEngine
from server.core.memory.model import Kind, RecallQuery
from server.core.settings import MemorySettings
from tests.conftest import FakeClock, open_engine, unit_vec, wait_for
from tests.unit.test_engine import NS, mem


def test_recall_hits_and_gets_are_counted(engine: MemoryEngine, clock: FakeClock) -> None:
    a, b = engine.remember([mem("The VPN host is vpn-3"), mem("Lunch is at noon", Kind.FACT)])
    head = engine.index_state().head_rev
    for _ in range(3):
        hits = engine.recall(RecallQuery(namespace=NS, text="VPN host", top_k=1)).hits
        assert [h.record.memory_id for h in hits] == [a.memory_id]
    clock.advance(60)
    engine.get(NS, b.memory_id, False)
    engine.access.flush()
    got_a, _ = engine.get(NS, a.memory_id, False)
    got_b, _ = engine.get(NS, b.memory_id, False)
    assert got_a.access_count == 3 and got_b.access_count == 1
    assert got_b.last_accessed_at == clock.now() and got_a.last_accessed_at == clock.now() - 60
    assert engine.index_state().head_rev == head  # no new revision: nothing is re-indexed


def test_a_forgotten_record_is_not_brought_back_by_its_counts(engine: MemoryEngine) -> None:
    r = engine.remember([mem("Temporary access code 7781")])[0]
    engine.get(NS, r.memory_id, False)
    engine.forget(NS, r.memory_id, None)
    engine.access.flush()  # the count of a record forgotten since its read is dropped
    assert engine._store.key_of(NS, r.memory_id) is None
    assert engine._store.key_of(NS, r.memory_id, include_deleted=True) is not None


def test_counts_are_flushed_in_the_background_and_survive_a_restart(
    tmp_path: Path, clock: FakeClock, engine_factory: Callable[..., MemoryEngine]
) -> None:
    s = msgspec.structs.replace(MemorySettings(), access_flush_seconds=0.05)
    eng = engine_factory(s, use_encoder=False)
    v = unit_vec(np.random.default_rng(2))
    r = eng.remember([mem("", Kind.OBSERVATION, v)])[0]
    eng.get(NS, r.memory_id, False)
    eng.get(NS, r.memory_id, False)
    wait_for(
        lambda: (
            eng._store.get([eng._store.key_of(NS, r.memory_id) or 0]).popitem()[1].access_count == 2
        )
    )
    eng.get(NS, r.memory_id, False)
    eng.close()  # the last count is flushed on close
    again = open_engine(tmp_path / "data", None, clock, s)
    try:
        rec, _ = again.get(NS, r.memory_id, False)
        assert rec.access_count == 3
    finally:
        again.close()
