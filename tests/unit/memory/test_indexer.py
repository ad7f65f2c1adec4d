"""The indexer's snapshot policy: by rows indexed, and by time once the server is idle."""

from __future__ import annotations

from collections.abc import Callable

import msgspec
import numpy as np

from server.core.memory.engine import MemoryEngine
from server.core.memory.model import IndexState, Kind, NewMemory, Record
from server.core.settings import MemorySettings
from tests.conftest import unit_vec, wait_for


def settings(**index: object) -> MemorySettings:
    s = MemorySettings()
    return msgspec.structs.replace(s, index=msgspec.structs.replace(s.index, **index))


def write(engine: MemoryEngine, n: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    engine.remember(
        [
            NewMemory(
                record=Record(memory_id="", namespace="ix", kind=Kind.FACT),
                vector=unit_vec(rng),
                explicit_importance=3,
            )
            for _ in range(n)
        ]
    )


def indexed(eng: MemoryEngine) -> IndexState:
    """The index state once the indexer has caught up with every write."""
    wait_for(lambda: eng.index_state().indexed_rev == eng.index_state().head_rev)
    return eng.index_state()


def test_a_snapshot_follows_every_snapshot_rows_indexed(
    engine_factory: Callable[..., MemoryEngine],
) -> None:
    eng = engine_factory(
        settings(batch_size=16, snapshot_rows=32, snapshot_fraction=0.0, snapshot_seconds=3600.0),
        use_encoder=False,
    )
    write(eng, 100)
    st = indexed(eng)
    assert st.snapshot_rev > 0, "no snapshot although 100 rows were indexed"
    assert st.unsnapshotted < 32 + 16
    assert st.indexed_rev - st.snapshot_rev == st.unsnapshotted


def test_the_snapshot_interval_grows_with_the_index(
    engine_factory: Callable[..., MemoryEngine],
) -> None:
    eng = engine_factory(
        settings(batch_size=16, snapshot_rows=16, snapshot_fraction=1.0, snapshot_seconds=3600.0),
        use_encoder=False,
    )
    write(eng, 64)
    st = indexed(eng)
    # Steps of 16 rows: the first reaches 1.0 x the index (16 rows) and snapshots; after it the
    # index is 32, 48, 64 rows, and 16, 32, 48 rows since the snapshot never reach its size.
    assert st.snapshot_rev == 16 and st.unsnapshotted == 48


def test_an_idle_server_snapshots_after_snapshot_seconds(
    engine_factory: Callable[..., MemoryEngine],
) -> None:
    eng = engine_factory(
        settings(snapshot_rows=1 << 30, snapshot_fraction=0.0, snapshot_seconds=2.0),
        use_encoder=False,
    )
    write(eng, 10)
    head = eng.index_state().head_rev
    # Indexed at once, snapshotted only once the indexer has been idle for snapshot_seconds.
    wait_for(lambda: eng.index_state().snapshot_rev == head)
    assert eng.index_state().unsnapshotted == 0
