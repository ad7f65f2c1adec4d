"""The metadata columns (server/core/memory/columns.py): rows put, followed and dropped, filter
masks, keys beyond the arrays, pocket sizes, and each session's turn list."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from server.core.memory.changes import Applied
from server.core.memory.model import Kind, MemoryFilter, Modality, Record, Tier
from server.core.memory.pockets import PocketCatalog, PocketScheme
from server.core.memory.state.columns import Columns
from server.core.settings import PocketSettings
from tests.conftest import DAY

NS = "tenant"
NOW = 1_800_000_000.0


def columns() -> Columns:
    return Columns(PocketCatalog(PocketScheme(PocketSettings())))


def rec(key: int, ns: str = NS, **kw: object) -> Record:
    kind = kw.pop("kind", Kind.FACT)
    created = kw.pop("created_at", NOW - DAY)
    return Record(memory_id=f"m{key}", namespace=ns, kind=kind, key=key, created_at=created, **kw)


def ks(*keys: int) -> npt.NDArray[np.int64]:
    return np.array(keys, dtype=np.int64)


def live(cols: Columns, keys: npt.NDArray[np.int64], ns: str = NS) -> list[int]:
    m = cols.mask(keys, cols.ns_id(ns), MemoryFilter(), NOW, True, True)
    return keys[m].tolist()


def test_put_follow_and_drop_keep_rows_live_or_not() -> None:
    cols = columns()
    pocket = cols.put(rec(3, tier=Tier.WARM))
    assert cols.catalog.key(pocket).name == "fact/warm/text"
    assert cols.ns_id(NS) == 0 and cols.ns_id("never") == -2
    cols.follow([Applied(1, 4, NS, rec(4, kind=Kind.PREFERENCE), None)])
    assert cols.current(ks(3, 4, 5)).tolist() == [True, True, False]
    assert cols.current(ks(3, 4), kind=int(Kind.PREFERENCE)).tolist() == [False, True]
    assert int(cols.kind[4]) == int(Kind.PREFERENCE)
    cols.follow([Applied(2, 3, NS, None, None)])
    assert cols.current(ks(3, 4)).tolist() == [False, True]
    assert live(cols, ks(3, 4)) == [4]
    cols.drop(10**6)  # beyond the arrays: nothing to do
    # Putting it again brings it back, with its new fields.
    cols.put(rec(3, kind=Kind.SKILL, tier=Tier.HOT))
    assert cols.current(ks(3), kind=int(Kind.SKILL)).tolist() == [True]
    assert cols.catalog.key(int(cols.pocket[3])).name == "skill/hot/text"


def test_an_obsolete_row_is_not_current() -> None:
    cols = columns()
    cols.put(rec(1, obsolete=True))
    cols.put(rec(2))
    assert cols.current(ks(1, 2)).tolist() == [False, True]


def test_namespaces_are_interned_in_order() -> None:
    cols = columns()
    cols.put(rec(1, ns="a"))
    cols.put(rec(2, ns="b"))
    cols.put(rec(3, ns="a"))
    assert cols.namespaces() == {"a": 0, "b": 1}
    assert live(cols, ks(1, 2, 3), "a") == [1, 3]
    assert live(cols, ks(1, 2, 3), "b") == [2]
    assert live(cols, ks(1, 2, 3), "never") == []


@pytest.fixture
def filtered() -> Columns:
    cols = columns()
    for r in (
        rec(1, kind=Kind.FACT, session_id="s1", importance=2, tags=("red",)),
        rec(2, kind=Kind.PREFERENCE, session_id="s2", importance=4),
        rec(3, created_at=NOW - 10 * DAY, tags=("green", "blue")),
        rec(4, created_at=NOW - 5 * DAY, importance=5),
        rec(5, obsolete=True),
        rec(6, expires_at=NOW - 1.0),
        rec(7, expires_at=NOW),  # expires exactly now: expired
        rec(8, expires_at=NOW + DAY, modality=Modality.IMAGE),
        rec(9, ns="other"),
    ):
        cols.put(r)
    return cols


ALL = ks(*range(1, 10))


@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        (MemoryFilter(), [1, 2, 3, 4, 8]),
        (MemoryFilter(kinds=(Kind.PREFERENCE,)), [2]),
        (MemoryFilter(kinds=(Kind.PREFERENCE, Kind.FACT)), [1, 2, 3, 4, 8]),
        (MemoryFilter(modalities=(Modality.IMAGE,)), [8]),
        (MemoryFilter(session_id="s1"), [1]),
        (MemoryFilter(session_id="never"), []),
        (MemoryFilter(tags=("red",)), [1]),
        (MemoryFilter(tags=("red", "blue")), [1, 3]),
        (MemoryFilter(tags=("none",)), []),
        (MemoryFilter(min_importance=4), [2, 4]),
        # created_after is inclusive, created_before exclusive.
        (MemoryFilter(created_after=NOW - 5 * DAY), [1, 2, 4, 8]),
        (MemoryFilter(created_before=NOW - 5 * DAY), [3]),
        (MemoryFilter(created_after=NOW - 10 * DAY, created_before=NOW - 2 * DAY), [3, 4]),
        (MemoryFilter(kinds=(Kind.FACT,), min_importance=3, tags=("green",)), [3]),
    ],
)
def test_mask_applies_each_filter_field(
    filtered: Columns, flt: MemoryFilter, expected: list[int]
) -> None:
    m = filtered.mask(ALL, filtered.ns_id(NS), flt, NOW, False, False)
    assert ALL[m].tolist() == expected
    got = filtered.matching_keys(filtered.ns_id(NS), None, flt, NOW, False, False)
    assert got.tolist() == expected


def test_mask_includes_obsolete_and_expired_only_when_asked(filtered: Columns) -> None:
    ns = filtered.ns_id(NS)
    flt = MemoryFilter()
    assert ALL[filtered.mask(ALL, ns, flt, NOW, True, False)].tolist() == [1, 2, 3, 4, 5, 8]
    assert ALL[filtered.mask(ALL, ns, flt, NOW, False, True)].tolist() == [1, 2, 3, 4, 6, 7, 8]
    assert ALL[filtered.mask(ALL, ns, flt, NOW, True, True)].tolist() == list(range(1, 9))
    # Expiry is relative to `now`.
    later = filtered.mask(ALL, ns, flt, NOW + 2 * DAY, False, False)
    assert ALL[later].tolist() == [1, 2, 3, 4]
    assert ALL[filtered.mask(ALL, filtered.ns_id("other"), flt, NOW, True, True)].tolist() == [9]


def test_keys_beyond_the_arrays_are_not_live(filtered: Columns) -> None:
    ns = filtered.ns_id(NS)
    beyond = len(filtered.ns) + 5
    keys = ks(1, beyond, 2, 10**7)
    m = filtered.mask(keys, ns, MemoryFilter(), NOW, True, True)
    assert m.tolist() == [True, False, True, False]
    assert filtered.current(keys).tolist() == [True, False, True, False]
    assert filtered.neighbours(beyond, 3)[0].tolist() == []


def test_a_missing_slot_key_of_minus_one_is_not_live() -> None:
    """usearch pads a short result with -1; as an index it is the last slot of the arrays."""
    cols = columns()
    last = len(cols.ns) - 1
    cols.put(Record(memory_id="last", namespace=NS, kind=Kind.FACT, key=last))
    keys = ks(-1, last)
    assert cols.mask(keys, cols.ns_id(NS), MemoryFilter(), NOW, False, False).tolist() == [
        False,
        True,
    ]
    assert cols.current(keys).tolist() == [False, True]


def test_the_arrays_grow_for_a_large_key() -> None:
    cols = columns()
    cols.put(rec(1))
    big = len(cols.ns) + 100
    cols.put(rec(big, importance=5))
    assert len(cols.ns) > big
    assert cols.current(ks(1, big, big - 1)).tolist() == [True, True, False]
    got = cols.mask(ks(1, big), cols.ns_id(NS), MemoryFilter(min_importance=5), NOW, False, False)
    assert got.tolist() == [False, True]
    assert np.isinf(cols.expires[big - 1]) and cols.pocket[big - 1] == -1


def test_matching_keys_restricts_to_pockets(filtered: Columns) -> None:
    ns = filtered.ns_id(NS)
    pref = int(filtered.pocket[2])
    got = filtered.matching_keys(ns, [pref], MemoryFilter(), NOW, False, False)
    assert got.tolist() == [2]
    assert filtered.matching_keys(ns, [], MemoryFilter(), NOW, False, False).tolist() == []


def test_pocket_sizes_count_the_live_rows_of_each_pocket() -> None:
    cols = columns()
    specs: list[tuple[Kind, Tier]] = [
        (Kind.FACT, Tier.WARM),
        (Kind.FACT, Tier.WARM),
        (Kind.FACT, Tier.HOT),
        (Kind.PREFERENCE, Tier.WARM),
        (Kind.EPISODE, Tier.HOT),
        (Kind.EPISODE, Tier.HOT),
    ]
    for key, (kind, tier) in enumerate(specs, start=1):
        cols.put(rec(key, kind=kind, tier=tier))
    cols.put(rec(20, ns="other"))
    cols.drop(2)
    cols.drop(6)
    ns = cols.ns_id(NS)
    sizes = cols.pocket_sizes(ns, len(cols.catalog))
    assert sizes.dtype == np.int64 and len(sizes) == len(cols.catalog)
    assert int(sizes.sum()) == 4
    by_name = {cols.catalog.key(p).name: int(n) for p, n in enumerate(sizes) if n}
    assert by_name == {
        "fact/warm/text": 1,
        "fact/hot/text": 1,
        "preference/warm/text": 1,
        f"episode/hot/text/{cols.catalog.key(int(cols.pocket[5])).bucket}": 1,
    }
    other = cols.pocket_sizes(cols.ns_id("other"), len(cols.catalog))
    assert int(other.sum()) == 1 and int(other[int(cols.pocket[20])]) == 1


def session_columns() -> Columns:
    cols = columns()
    # Put out of turn order, so the lists must be ordered by turn, not by insertion.
    for key, turn in ((10, 2), (11, 0), (12, 5), (13, 1)):
        cols.put(rec(key, session_id="s1", turn=turn))
    cols.put(rec(20, session_id="s2", turn=0))
    cols.put(rec(30, ns="other", session_id="s1", turn=7))
    cols.put(rec(40, session_id="s1"))  # no turn
    return cols


def test_next_turn_is_one_past_the_largest_turn_of_the_session() -> None:
    cols = session_columns()
    ns = cols.ns_id(NS)
    assert cols.next_turn(ns, "s1") == 6
    assert cols.next_turn(ns, "s2") == 1
    assert cols.next_turn(ns, "new") == 0
    assert cols.next_turn(cols.ns_id("other"), "s1") == 8
    assert cols.session_keys(ns, "s1").tolist() == [11, 13, 10, 12]


def test_neighbours_are_in_turn_order() -> None:
    cols = session_columns()
    before, after = cols.neighbours(10, 1)  # turn 2
    assert (before.tolist(), after.tolist()) == ([13], [12])
    before, after = cols.neighbours(10, 5)
    assert (before.tolist(), after.tolist()) == ([11, 13], [12])
    before, after = cols.neighbours(11, 2)  # turn 0
    assert (before.tolist(), after.tolist()) == ([], [13, 10])
    assert cols.neighbours(20, 3)[0].tolist() == [] and cols.neighbours(20, 3)[1].tolist() == []
    assert cols.neighbours(10, 0)[1].tolist() == []
    assert cols.neighbours(40, 2)[0].tolist() == [] and cols.neighbours(40, 2)[1].tolist() == []
    # The same session name in another namespace is another session.
    assert cols.neighbours(30, 5)[0].tolist() == []


def test_a_record_moved_to_another_session_or_dropped_leaves_its_old_session() -> None:
    cols = session_columns()
    ns = cols.ns_id(NS)
    cols.put(rec(12, session_id="s2", turn=1))  # turn 5 of s1 moves to s2
    assert cols.next_turn(ns, "s1") == 3
    assert cols.next_turn(ns, "s2") == 2
    assert cols.neighbours(10, 2)[1].tolist() == []
    assert cols.neighbours(20, 1)[1].tolist() == [12]
    assert cols.session_keys(ns, "s1").tolist() == [11, 13, 10]

    cols.drop(13)
    assert cols.neighbours(10, 1)[0].tolist() == [11]
    assert cols.session_keys(ns, "s1").tolist() == [11, 10]
    assert cols.neighbours(13, 1)[0].tolist() == []  # a dropped row has no neighbours

    # A rewrite in place (same session, new turn) is listed once, at its new turn.
    cols.put(rec(11, session_id="s1", turn=9))
    assert cols.session_keys(ns, "s1").tolist() == [10, 11]
    assert cols.next_turn(ns, "s1") == 10
    # Losing its turn takes it out of the list.
    cols.put(rec(10, session_id="s1"))
    assert cols.session_keys(ns, "s1").tolist() == [11]


def test_readers_never_see_arrays_of_two_sizes_while_they_grow() -> None:
    """Readers take no lock; the arrays grow one by one, `ns` last."""
    import threading

    cols = columns()
    errors: list[BaseException] = []
    done = threading.Event()

    def read() -> None:
        while not done.is_set():
            try:
                cols.matching_keys(cols.ns_id(NS), [0], MemoryFilter(), NOW, True, True)
            except BaseException as exc:  # reported below
                errors.append(exc)
                return

    t = threading.Thread(target=read)
    t.start()
    for key in range(1, 40_000, 7):
        cols.put(Record(memory_id=f"m{key}", namespace=NS, kind=Kind.FACT, key=key))
    done.set()
    t.join()
    assert errors == []


def test_a_pocket_span_is_an_envelope_of_every_event_time_put_in_it() -> None:
    cols = columns()
    for key, created in ((1, 500.0), (2, 100.0), (3, 900.0)):
        cols.put(rec(key, created_at=created))
    pid = int(cols.pocket[1])
    assert cols.pocket_span(pid) == (100.0, 900.0)
    cols.drop(3)  # leaving does not narrow it: it stays a true bound for what is left
    assert cols.pocket_span(pid) == (100.0, 900.0)
    cols.put(rec(4, created_at=50.0))
    assert cols.pocket_span(pid) == (50.0, 900.0)
    assert cols.pocket_span(pid + 99) is None
