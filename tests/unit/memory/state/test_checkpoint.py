"""The metadata columns' checkpoint (server/core/memory/state/checkpoint.py, with the snapshot
file of server/adapters/columns_file.py): a snapshot restores every observable part of the
columns, a start-up replays the store's changes since it, and a snapshot that belongs to another
store or pocket scheme, or cannot be read, falls back to a scan of the store."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import msgspec
import numpy as np
import pytest

from server.adapters.columns_file import ColumnsFile
from server.adapters.sqlite_store import SqliteRecordStore
from server.core.memory.changes import Cause, Erase, Put
from server.core.memory.model import Kind, MemoryFilter, Record, Tier
from server.core.memory.pockets import PocketCatalog, PocketScheme
from server.core.memory.ports import ColumnsSnapshot
from server.core.memory.state.checkpoint import Checkpoint
from server.core.memory.state.columns import ARRAYS, Columns
from server.core.settings import PocketSettings
from tests.conftest import DAY, unit_vec

NOW = 1_800_000_000.0


def columns(settings: PocketSettings | None = None) -> Columns:
    return Columns(PocketCatalog(PocketScheme(settings or PocketSettings())))


def records(n: int) -> list[Record]:
    """Facts, tagged preferences and episode turns of two sessions over two weeks, in two
    namespaces."""
    out = []
    for i in range(n):
        kind = (Kind.FACT, Kind.PREFERENCE, Kind.EPISODE)[i % 3]
        out.append(
            Record(
                memory_id=f"m{i}",
                namespace=("a", "b")[i % 2],
                kind=kind,
                text=f"text {i}",
                created_at=NOW - (i % 14) * DAY,
                stored_at=NOW,  # as the writer stores it (without, it reads as an old record)
                session_id=f"s{i % 2}" if kind == Kind.EPISODE else "",
                turn=i if kind == Kind.EPISODE else -1,
                tags=("x", "y") if kind == Kind.PREFERENCE else (),
                tier=Tier.HOT if i % 7 == 0 and kind == Kind.EPISODE else Tier.WARM,
                expires_at=NOW + DAY if i % 5 == 0 else None,
            )
        )
    return out


def _same_nan(v: object) -> object:
    """NaN (a never-accessed memory's last access) as a value equal to itself."""
    return "nan" if isinstance(v, float) and v != v else v


def state(cols: Columns) -> dict[str, object]:
    """What the columns answer, by names rather than ids."""
    live = np.nonzero(cols.ns >= 0)[0].tolist()
    ns_name = {v: k for k, v in cols.namespaces().items()}
    return {
        "rows": {
            k: (
                ns_name[int(cols.ns[k])],
                cols.catalog.key(int(cols.pocket[k])).name,
                *(
                    _same_nan(getattr(cols, name)[k].item())
                    for name in ARRAYS
                    if name not in ("ns", "pocket")
                ),
                cols.tags.get(k),
                [a.tolist() for a in cols.neighbours(k, 2)],
            )
            for k in live
        },
        "sizes": {cols.catalog.key(p).name: cols.pocket_size(p) for p in range(len(cols.catalog))},
        "spans": {cols.catalog.key(p).name: cols.pocket_span(p) for p in range(len(cols.catalog))},
        "matching": cols.matching_keys(
            cols.ns_id("a"), None, MemoryFilter(tags=("x",)), NOW, False, False
        ).tolist(),
        "rev": cols.rev,
        "current": {ns: cols.current_session(i) for ns, i in cols.namespaces().items()},
    }


@pytest.fixture
def store(tmp_path: Path) -> SqliteRecordStore:
    return SqliteRecordStore(tmp_path / "records.sqlite3")


def write(store: SqliteRecordStore, cols: Columns, recs: list[Record]) -> list[int]:
    applied = store.apply(
        [Put(r, unit_vec(np.random.default_rng(i), 4), Cause.STORE) for i, r in enumerate(recs)]
    )
    cols.follow(applied)
    return [a.key for a in applied]


def test_a_snapshot_through_the_file_restores_everything_the_columns_answer(
    tmp_path: Path, store: SqliteRecordStore
) -> None:
    cols = columns()
    keys = write(store, cols, records(60))
    cols.follow(store.apply([Erase(keys[4]), Erase(keys[9])]))  # leave holes
    snap = cols.snapshot()
    ColumnsFile(tmp_path / "columns").save(snap)
    got = ColumnsFile(tmp_path / "columns").load()
    assert got is not None
    again = columns()
    again.restore(got)
    assert state(again) == state(cols)
    assert again.next_turn(again.ns_id("a"), "s0") == cols.next_turn(cols.ns_id("a"), "s0")
    with pytest.raises(ValueError, match="empty"):
        again.restore(got)
    with pytest.raises(ValueError, match="pocket scheme"):
        columns(msgspec.structs.replace(PocketSettings(), time_bucket="day")).restore(got)


def test_a_start_up_replays_the_changes_since_the_snapshot(
    tmp_path: Path, store: SqliteRecordStore
) -> None:
    file = ColumnsFile(tmp_path / "columns")
    cols = columns()
    keys = write(store, cols, records(30))
    Checkpoint(cols, store, file, 60.0).save()
    # After the snapshot: new rows, a changed one, a forgotten one.
    write(store, cols, records(45)[30:])
    changed = store.get([keys[3]])[keys[3]]
    cols.follow(
        store.apply([Put(msgspec.structs.replace(changed, kind=Kind.SKILL), None, Cause.UPSERT)])
    )
    cols.follow(store.apply([Erase(keys[5])]))
    fresh = columns()
    got = Checkpoint(fresh, store, file, 60.0).load()
    assert got == {"records": 44, "replayed": 17, "restored": 1}
    assert state(fresh) == state(cols)
    scanned = columns()
    for rec in store.scan_live():
        scanned.put(rec)
    assert state(fresh)["rows"] == state(scanned)["rows"]


def test_a_snapshot_of_another_store_or_scheme_or_unreadable_is_not_used(
    tmp_path: Path, store: SqliteRecordStore, caplog: pytest.LogCaptureFixture
) -> None:
    file = ColumnsFile(tmp_path / "columns")
    cols = columns()
    write(store, cols, records(10))
    Checkpoint(cols, store, file, 60.0).save()
    other = SqliteRecordStore(tmp_path / "other.sqlite3")  # a smaller head: another store
    write(other, columns(), records(3))
    got = Checkpoint(columns(), other, file, 60.0).load()
    assert got == {"records": 3, "replayed": 0, "restored": 0}
    assert "beyond the store" in caplog.text
    day = msgspec.structs.replace(PocketSettings(), time_bucket="day")
    assert Checkpoint(columns(day), store, file, 60.0).load()["restored"] == 0
    assert "another pocket scheme" in caplog.text
    (tmp_path / "columns" / "snapshot.npz").write_bytes(b"not a zip")
    assert file.load() is None
    assert Checkpoint(columns(), store, file, 60.0).load() == {
        "records": 10,
        "replayed": 0,
        "restored": 0,
    }
    other.close()


def test_a_save_is_due_once_the_columns_moved_on_and_the_interval_passed(
    tmp_path: Path, store: SqliteRecordStore
) -> None:
    file = ColumnsFile(tmp_path / "columns")
    cols = columns()
    cp = Checkpoint(cols, store, file, 3600.0)
    cp.load()
    write(store, cols, records(3))
    assert cp.save_if_due()  # the first since start-up: at once
    assert not cp.save_if_due()  # nothing new
    write(store, cols, records(6)[3:])
    assert not cp.save_if_due()  # new, but within the interval
    loaded = file.load()
    assert loaded is not None and loaded.rev == 3
    cp.save()
    loaded = file.load()
    assert loaded is not None and loaded.rev == 6


@pytest.mark.parametrize(
    "spoil",
    [
        lambda s: dataclasses.replace(s, arrays={k: v for k, v in s.arrays.items() if k != "tier"}),
        lambda s: dataclasses.replace(s, arrays={**s.arrays, "kind": s.arrays["kind"][:-1]}),
        lambda s: dataclasses.replace(
            s, arrays={**s.arrays, "created": s.arrays["created"].astype(np.float32)}
        ),
        lambda s: dataclasses.replace(s, pockets=s.pockets + s.pockets[:1]),
        lambda s: dataclasses.replace(s, session_keys=s.session_keys[:-1]),
    ],
    ids=["a-column-missing", "a-short-column", "another-dtype", "a-pocket-twice", "short-sessions"],
)
def test_a_snapshot_that_does_not_fit_is_set_aside_for_a_scan(
    tmp_path: Path,
    store: SqliteRecordStore,
    spoil: Callable[[ColumnsSnapshot], ColumnsSnapshot],
    caplog: pytest.LogCaptureFixture,
) -> None:
    file = ColumnsFile(tmp_path / "columns")
    cols = columns()
    write(store, cols, records(20))
    file.save(spoil(cols.snapshot()))
    fresh = columns()
    assert Checkpoint(fresh, store, file, 60.0).load()["restored"] == 0
    assert "not used" in caplog.text
    assert state(fresh)["rows"] == state(cols)["rows"]


def test_columns_that_missed_a_change_are_never_saved_and_their_snapshot_goes(
    tmp_path: Path, store: SqliteRecordStore
) -> None:
    file = ColumnsFile(tmp_path / "columns")
    cols = columns()
    cp = Checkpoint(cols, store, file, 60.0)
    cp.load()
    write(store, cols, records(5))
    cp.save()
    assert file.load() is not None
    bad = store.apply([Put(records(6)[5], None, Cause.STORE)])
    with pytest.raises(AttributeError):
        cols.follow([dataclasses.replace(bad[0], record=object())])  # type: ignore[arg-type]
    assert cols.broken
    cp.save()
    assert file.load() is None
    assert not cp.save_if_due()
    fresh = columns()
    assert Checkpoint(fresh, store, file, 60.0).load() == {
        "records": 6,
        "replayed": 0,
        "restored": 0,
    }
