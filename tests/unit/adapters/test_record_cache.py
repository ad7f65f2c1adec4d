"""The record store's payload cache (server/adapters/record_cache.py): write-through, a read-through
put that a racing commit cancels, and a bound in bytes with the least recently used going first."""

from __future__ import annotations

from server.adapters.record_cache import OVERHEAD, RecordCache


def test_committed_payloads_are_held_and_forgotten_ones_dropped() -> None:
    cache = RecordCache(10_000)
    cache.committed({1: b"one", 2: b"two"})
    cache.committed({1: None, 2: b"TWO"})
    assert cache.get([1, 2, 3]) == ({2: b"TWO"}, [1, 3])
    assert cache.size_bytes == 3 + OVERHEAD


def test_a_read_racing_a_commit_of_its_record_is_not_held() -> None:
    cache = RecordCache(10_000)
    before = cache.changes()
    cache.committed({5: b"new"})  # committed while the old payload was being read
    cache.put({5: b"old", 6: b"six"}, before)
    # 5's read is stale; 6 was not written meanwhile, so its read is held.
    assert cache.get([5, 6]) == ({5: b"new", 6: b"six"}, [])
    cache.committed({6: None})  # forgotten meanwhile: an older read of it is not held either
    cache.put({6: b"six"}, before)
    assert cache.get([6]) == ({}, [6])
    cache.put({7: b"seven"}, before)  # far beyond every key written: never written since
    assert cache.get([7]) == ({7: b"seven"}, [])


def test_the_least_recently_used_go_first_at_the_byte_bound() -> None:
    cache = RecordCache(3 * (10 + OVERHEAD))
    cache.committed({1: b"a" * 10, 2: b"b" * 10, 3: b"c" * 10})
    cache.get([1])  # used: now the newest
    cache.committed({4: b"d" * 10})
    assert cache.get([1, 2, 3, 4])[1] == [2]
    assert cache.size_bytes <= 3 * (10 + OVERHEAD)
    empty = RecordCache(0)
    empty.committed({1: b"x"})
    assert len(empty) == 0 and empty.size_bytes == 0
