"""The record store (server/adapters/sqlite_store.py): one transaction per change, a revision per
Put and Erase, tombstones for erased rows, rollback of a failing change, and durability across a
reopen."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import msgspec
import numpy as np
import pytest

from server.adapters.sqlite_store import CACHE_BYTES, SqliteRecordStore
from server.core.memory.changes import Applied, Cause, Erase, Put, Touch
from server.core.memory.model import Kind, Record, Tier, Vector
from tests.conftest import unit_vec

NS = "tenant"
DIM = 8


def rec(memory_id: str, ns: str = NS, **kw: object) -> Record:
    return Record(memory_id=memory_id, namespace=ns, kind=Kind.FACT, text=f"text {memory_id}", **kw)


def vec(seed: int) -> Vector:
    return unit_vec(np.random.default_rng(seed), DIM)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "records.sqlite3"


# Every test runs with no record cache, a tiny one (a few records) and the default: the cache
# must never change what the store returns.
@pytest.fixture(params=[0, 600, CACHE_BYTES], ids=["uncached", "tiny-cache", "cached"])
def store(path: Path, request: pytest.FixtureRequest) -> Iterator[SqliteRecordStore]:
    s = SqliteRecordStore(path, request.param)
    yield s
    s.close()


def insert(store: SqliteRecordStore, memory_id: str, seed: int = 0, **kw: object) -> Applied:
    (a,) = store.apply([Put(rec(memory_id, **kw), vec(seed), Cause.STORE)])
    return a


def test_a_put_of_key_0_inserts_a_row_with_a_new_key_and_revision(
    store: SqliteRecordStore,
) -> None:
    v = vec(1)
    (a,) = store.apply([Put(rec("a"), v, Cause.STORE)])
    assert a.rev == 1 and store.head_rev() == 1
    assert a.key > 0 and a.namespace == NS
    assert a.record is not None and a.record.key == a.key and a.record.memory_id == "a"
    assert a.vector is not None and np.array_equal(a.vector, v)
    got = store.get([a.key])
    assert got[a.key].text == "text a" and got[a.key].key == a.key
    stored = store.get_vectors([a.key])[a.key]
    assert stored.dtype == np.float32 and np.array_equal(stored, v)
    assert store.key_of(NS, "a") == a.key
    assert store.key_of("other", "a") is None

    (b,) = store.apply([Put(rec("b"), vec(2), Cause.STORE)])
    assert b.key != a.key and b.rev == 2


def test_a_put_by_key_updates_the_row_in_place(store: SqliteRecordStore) -> None:
    a = insert(store, "a", seed=1)
    assert a.record is not None
    new_vec = vec(2)
    changed = msgspec.structs.replace(a.record, text="rewritten", tier=Tier.WARM)
    (u,) = store.apply([Put(changed, new_vec, Cause.UPSERT)])
    assert (u.key, u.rev) == (a.key, 2)
    assert u.vector is not None and np.array_equal(u.vector, new_vec)
    got = store.get([a.key])[a.key]
    assert got.text == "rewritten" and got.tier == Tier.WARM
    assert np.array_equal(store.get_vectors([a.key])[a.key], new_vec)
    # Still one row: the update moved it to the new revision.
    rows = store.changes_since(0, 100)
    assert [(r.record.key, r.rev) for r in rows] == [(a.key, 2)]


def test_a_put_without_a_vector_keeps_the_stored_one_and_returns_it(
    store: SqliteRecordStore,
) -> None:
    original = vec(3)
    (a,) = store.apply([Put(rec("a"), original, Cause.STORE)])
    assert a.record is not None
    merged = msgspec.structs.replace(a.record, text="merged text", importance=5)
    (u,) = store.apply([Put(merged, None, Cause.MERGE)])
    assert u.vector is not None and np.array_equal(u.vector, original)
    assert np.array_equal(store.get_vectors([a.key])[a.key], original)
    assert store.get([a.key])[a.key].importance == 5
    (row,) = store.changes_since(1, 10)
    assert row.vector is not None and np.array_equal(row.vector, original)


def test_an_insert_without_a_vector_stores_none(store: SqliteRecordStore) -> None:
    (a,) = store.apply([Put(rec("a"), None, Cause.STORE)])
    assert a.vector is None
    assert store.get_vectors([a.key]) == {}
    assert a.key in store.get([a.key])


def test_an_erase_of_a_live_record_gets_a_revision_and_leaves_a_tombstone(
    store: SqliteRecordStore,
) -> None:
    a = insert(store, "a", seed=1)
    b = insert(store, "b", seed=2)
    (e,) = store.apply([Erase(a.key)])
    assert e == Applied(rev=3, key=a.key, namespace=NS, record=None, vector=None)
    assert store.head_rev() == 3
    assert store.get([a.key, b.key]).keys() == {b.key}
    assert store.get_vectors([a.key, b.key]).keys() == {b.key}
    assert store.key_of(NS, "a") is None
    assert store.key_of(NS, "a", include_deleted=True) == a.key
    assert [r.key for r in store.scan_live()] == [b.key]
    (tomb,) = store.changes_since(2, 10)
    assert tomb.deleted and tomb.rev == 3 and tomb.vector is None
    assert (tomb.record.key, tomb.record.namespace, tomb.record.memory_id) == (a.key, NS, "a")
    assert tomb.record.kind == Kind.FACT and tomb.record.text == ""


def test_an_erase_of_an_erased_or_unknown_key_is_skipped_without_a_revision(
    store: SqliteRecordStore,
) -> None:
    a = insert(store, "a")
    store.apply([Erase(a.key)])
    head = store.head_rev()
    assert store.apply([Erase(a.key), Erase(12345)]) == []
    assert store.head_rev() == head
    assert store.changes_since(head, 10) == []
    # A skipped erase leaves no gap: the next revision is the one after the head.
    out = store.apply([Erase(a.key), Put(rec("b"), vec(2), Cause.STORE), Erase(999)])
    assert [x.rev for x in out] == [head + 1]


def test_a_touch_adds_to_the_access_statistics_without_a_revision(
    store: SqliteRecordStore,
) -> None:
    a = insert(store, "a")
    head = store.head_rev()
    assert store.apply([Touch(a.key, 2, 100.0)]) == []
    assert store.apply([Touch(a.key, 3, 50.0)]) == []  # an older access does not move `last`
    got = store.get([a.key])[a.key]
    assert got.access_count == 5
    assert got.last_accessed_at == 100.0
    assert store.head_rev() == head
    assert store.changes_since(head, 10) == []
    store.apply([Touch(a.key, 1, 200.0)])
    assert store.get([a.key])[a.key].last_accessed_at == 200.0


def test_a_touch_of_an_erased_or_unknown_key_is_ignored(store: SqliteRecordStore) -> None:
    a = insert(store, "a")
    store.apply([Erase(a.key)])
    head = store.head_rev()
    assert store.apply([Touch(a.key, 4, 10.0), Touch(777, 1, 10.0)]) == []
    assert store.head_rev() == head
    assert store.get([a.key]) == {}
    assert store.key_of(NS, "a") is None  # not brought back
    (tomb,) = store.changes_since(head - 1, 10)
    assert tomb.deleted


def test_a_touch_in_the_same_change_sees_the_put_before_it(store: SqliteRecordStore) -> None:
    a = insert(store, "a")
    assert a.record is not None
    renamed = msgspec.structs.replace(a.record, text="new")
    out = store.apply([Put(renamed, None, Cause.UPSERT), Touch(a.key, 2, 5.0)])
    assert [x.rev for x in out] == [2]
    got = store.get([a.key])[a.key]
    assert got.text == "new" and got.access_count == 2


def test_revisions_strictly_increase_and_changes_since_follows_them(
    store: SqliteRecordStore,
) -> None:
    a = insert(store, "a", seed=1)
    b = insert(store, "b", seed=2)
    c = insert(store, "c", seed=3)
    assert a.record is not None
    out = store.apply(
        [
            Put(msgspec.structs.replace(a.record, text="a2"), None, Cause.UPSERT),
            Erase(b.key),
            Put(rec("d"), vec(4), Cause.STORE),
        ]
    )
    revs = [x.rev for x in out]
    assert revs == [4, 5, 6]
    d_key = out[2].key
    rows = store.changes_since(0, 100)
    assert [r.rev for r in rows] == [3, 4, 5, 6]
    assert [r.record.key for r in rows] == [c.key, a.key, b.key, d_key]
    assert [r.deleted for r in rows] == [False, False, True, False]
    assert rows[1].record.text == "a2"
    # Paging: `limit` rows after `rev`.
    assert [r.rev for r in store.changes_since(3, 2)] == [4, 5]
    assert [r.rev for r in store.changes_since(5, 2)] == [6]
    assert store.changes_since(6, 2) == []


def test_a_failing_change_rolls_back_entirely(store: SqliteRecordStore) -> None:
    a = insert(store, "a", seed=1)
    b = insert(store, "b", seed=2)
    assert a.record is not None
    head = store.head_rev()
    with pytest.raises(sqlite3.IntegrityError):
        store.apply(
            [
                Put(rec("c"), vec(3), Cause.STORE),
                Put(msgspec.structs.replace(a.record, text="changed"), vec(4), Cause.UPSERT),
                Erase(b.key),
                Touch(a.key, 9, 99.0),
                Put(rec("a"), vec(5), Cause.STORE),  # collides with a's (namespace, memory_id)
            ]
        )
    assert store.head_rev() == head
    assert store.changes_since(head, 10) == []
    assert store.key_of(NS, "c") is None
    got = store.get([a.key, b.key])
    assert got.keys() == {a.key, b.key}
    assert got[a.key].text == "text a" and got[a.key].access_count == 0
    assert np.array_equal(store.get_vectors([a.key])[a.key], vec(1))
    # The store keeps working, from the same head.
    (c,) = store.apply([Put(rec("c"), vec(3), Cause.STORE)])
    assert c.rev == head + 1


def test_the_same_memory_id_in_another_namespace_does_not_collide(
    store: SqliteRecordStore,
) -> None:
    a = insert(store, "a")
    other = insert(store, "a", ns="other")
    assert other.key != a.key
    assert store.key_of("other", "a") == other.key


def test_records_survive_close_and_reopen(path: Path) -> None:
    s = SqliteRecordStore(path)
    a = insert(s, "a", seed=1)
    b = insert(s, "b", seed=2)
    c = insert(s, "c", seed=3)
    assert a.record is not None
    s.apply([Put(msgspec.structs.replace(a.record, text="a2"), None, Cause.UPSERT)])
    s.apply([Erase(b.key), Touch(c.key, 3, 42.0)])
    head = s.head_rev()
    before = s.changes_since(0, 100)
    s.close()

    s2 = SqliteRecordStore(path)
    try:
        assert s2.head_rev() == head == 5
        got = s2.get([a.key, b.key, c.key])
        assert got.keys() == {a.key, c.key}
        assert got[a.key].text == "a2"
        assert got[c.key].access_count == 3 and got[c.key].last_accessed_at == 42.0
        vecs = s2.get_vectors([a.key, c.key])
        assert np.array_equal(vecs[a.key], vec(1)) and np.array_equal(vecs[c.key], vec(3))
        assert [r.key for r in s2.scan_live()] == [a.key, c.key]
        after = s2.changes_since(0, 100)
        assert [(r.record.key, r.rev, r.deleted) for r in after] == [
            (r.record.key, r.rev, r.deleted) for r in before
        ]
        assert s2.key_of(NS, "b", include_deleted=True) == b.key
        (d,) = s2.apply([Put(rec("d"), vec(4), Cause.STORE)])
        assert d.rev == head + 1
        assert d.key not in (a.key, b.key, c.key)
    finally:
        s2.close()


def test_reads_from_another_thread_see_committed_writes(store: SqliteRecordStore) -> None:
    a = insert(store, "a")
    seen: list[dict[int, Record]] = []
    t = threading.Thread(target=lambda: seen.append(store.get([a.key])))
    t.start()
    t.join()
    assert seen[0][a.key].memory_id == "a"


def test_a_put_by_a_key_that_has_no_row_fails_and_rolls_back(store: SqliteRecordStore) -> None:
    """It used to "succeed" with an Applied for a row that was never written, spending a
    revision that a restart handed out again."""
    a = insert(store, "a")
    head = store.head_rev()
    ghost = rec("x", key=999)
    with pytest.raises(KeyError):
        store.apply([Put(rec("b"), vec(1), Cause.STORE), Put(ghost, vec(2), Cause.UPSERT)])
    assert store.head_rev() == head and store.key_of(NS, "b") is None
    assert store.get([a.key])[a.key].memory_id == "a"


def test_a_put_without_a_vector_cannot_revive_an_erased_row(store: SqliteRecordStore) -> None:
    a = insert(store, "a")
    store.apply([Erase(a.key)])
    with pytest.raises(KeyError):
        store.apply([Put(rec("a", key=a.key), None, Cause.TIER_MOVE)])
    assert store.get([a.key]) == {}
    revived = store.apply([Put(rec("a", key=a.key), vec(3), Cause.UPSERT)])  # an upsert may
    assert revived[0].vector is not None and store.key_of(NS, "a") == a.key


def test_a_put_by_key_keeps_the_id_columns_in_step_with_the_record(
    store: SqliteRecordStore,
) -> None:
    a = insert(store, "a")
    store.apply([Put(rec("renamed", key=a.key), None, Cause.UPSERT)])
    assert store.key_of(NS, "renamed") == a.key and store.key_of(NS, "a") is None


def test_a_record_of_the_old_format_reads_as_warm(store: SqliteRecordStore) -> None:
    """Before tier was stored state every record was written as hot and had no stored time:
    such a data directory must not open with every memory in the hot tier."""
    old = rec("old", tier=Tier.HOT, updated_at=1_700_000_000.0)
    (a,) = store.apply([Put(old, vec(1), Cause.STORE)])
    got = store.get([a.key])[a.key]
    assert got.tier == Tier.WARM and got.stored_at == 1_700_000_000.0
    new = rec("new", tier=Tier.HOT, stored_at=1_800_000_000.0)
    (b,) = store.apply([Put(new, vec(2), Cause.STORE)])
    assert store.get([b.key])[b.key].tier == Tier.HOT  # the new format says what it means
    assert [r.record.tier for r in store.changes_since(0, 10)] == [Tier.WARM, Tier.HOT]


def test_reads_of_many_keys_stay_under_the_statement_variable_limit(
    store: SqliteRecordStore,
) -> None:
    keys = [insert(store, f"m{i}", i).key for i in range(3)]
    assert set(store.get(keys + list(range(10_000, 12_000)))) == set(keys)


def test_hits_are_served_from_memory_once_written_or_read(path: Path) -> None:
    store = SqliteRecordStore(path)
    a, b = insert(store, "a"), insert(store, "b")
    reads: list[str] = []
    store._reader().set_trace_callback(reads.append)  # this thread's reads of SQLite
    assert store.get([a.key, b.key])[b.key].text == "text b"
    assert reads == []  # both were written through
    store.close()
    again = SqliteRecordStore(path)
    again._reader().set_trace_callback(reads.append)
    again.get([a.key])
    assert len(reads) == 1  # a new process reads it once,
    assert again.get([a.key])[a.key].text == "text a"
    assert len(reads) == 1  # then holds it
    again.close()
