"""The indexer's snapshot policy: by rows indexed, and by time once the server is idle."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable

import msgspec
import numpy as np
import pytest

from server.adapters.usearch_index import UsearchVectorIndex
from server.core.engine import MemoryEngine
from server.core.memory.model import IndexState, Kind, NewMemory, RecallQuery, Record
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


def test_pockets_are_built_in_parallel_and_a_failed_insert_is_retried(
    engine_factory: Callable[..., MemoryEngine], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each pocket's graph is built by a worker; an insert that fails fails its step, which is
    retried, so no row is marked indexed before its vector is in its graph."""
    eng = engine_factory(settings(add_workers=2), use_encoder=False)
    real = UsearchVectorIndex.add
    threads: set[str] = set()
    failures = [1]

    def add(self: UsearchVectorIndex, keys: np.ndarray, vectors: np.ndarray) -> None:
        threads.add(threading.current_thread().name)
        if failures[0]:
            failures[0] -= 1
            raise RuntimeError("disk full")
        real(self, keys, vectors)

    monkeypatch.setattr(UsearchVectorIndex, "add", add)
    rng = np.random.default_rng(1)
    vecs = [unit_vec(rng) for _ in range(40)]
    eng.remember(
        [
            NewMemory(
                record=Record(memory_id="", namespace="ix", kind=(Kind.FACT, Kind.SKILL)[i % 2]),
                vector=v,
                explicit_importance=3,
            )
            for i, v in enumerate(vecs)
        ]
    )
    indexed(eng)
    assert failures == [0] and all(t.startswith("pocketd-add") for t in threads)
    assert eng.hot.pending() == 0
    plan = eng.recall(RecallQuery("ix", vector=vecs[0])).plan  # a step scans its whole index
    assert {(s.pocket, s.scanned) for s in plan} == {
        ("fact/warm/text", 20),
        ("skill/warm/text", 20),
    }


def test_catch_up_beside_the_indexer_thread_steps_one_at_a_time(
    engine_factory: Callable[..., MemoryEngine],
) -> None:
    """`catch_up` (tests, shutdown, benches) used to step beside the indexer's own thread, and
    two snapshots raced for the manifest's temporary file."""
    eng = engine_factory(
        settings(batch_size=8, snapshot_rows=8, snapshot_fraction=0.0), use_encoder=False
    )
    errors: list[BaseException] = []

    def catch_up() -> None:
        try:
            for _ in range(20):
                eng.indexer.catch_up()
                eng.indexer.snapshot()
        except BaseException as exc:
            errors.append(exc)

    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads often, as a loaded machine does
    try:
        threads = [threading.Thread(target=catch_up) for _ in range(3)]
        for t in threads:
            t.start()
        for seed in range(20):
            write(eng, 40, seed)
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(before)
    assert not errors
    st = indexed(eng)
    assert st.indexed_rev == st.head_rev
