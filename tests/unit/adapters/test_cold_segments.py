"""The cold archive (server/adapters/cold_segments.py) beyond the port's contract, which
test_usearch_index.py checks on it: segments sealed at `segment_rows`, tombstones kept across a
reopen, mostly dead segments rewritten, an exact scan, the snapshot's files and a crash's
leftovers, and damaged files refused at open with their name."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from server.adapters.cold_segments import ColdArchiveError, ColdVectorIndex, is_cold
from server.adapters.usearch_index import UsearchIndexSet, UsearchVectorIndex
from tests.unit.adapters.test_usearch_index import F16, NDIM, SEGMENT_ROWS, open_set, vectors

COLD = "fact/cold/text"


def cold_part(s: UsearchIndexSet, ns: str = "ns") -> ColdVectorIndex:
    part = s.partition(ns, COLD, create=True)
    assert isinstance(part, ColdVectorIndex)
    return part


def cold_files(root: Path, suffix: str = "") -> list[Path]:
    return sorted(p for p in (root / "cold").iterdir() if p.name.endswith(suffix))


def test_a_pocket_named_cold_gets_segments_and_any_other_a_usearch_index(tmp_path: Path) -> None:
    s = open_set(tmp_path)
    assert isinstance(s.partition("ns", "episode/cold/text/2026-W01", True), ColdVectorIndex)
    assert isinstance(s.partition("ns", "fact/warm/text", True), UsearchVectorIndex)
    assert isinstance(s.partition("ns", "fact/hot/text", True), UsearchVectorIndex)
    assert is_cold(COLD) and not is_cold("cold") and not is_cold("fact/warm/cold")


def test_rows_are_sealed_into_a_segment_file_each_time_the_tail_fills(tmp_path: Path) -> None:
    s = open_set(tmp_path)
    part = cold_part(s)
    v = vectors(2 * SEGMENT_ROWS + 5, 1)
    part.add(np.arange(10, 15, dtype=np.int64), v[:5])
    assert part.segments == 0 and cold_files(tmp_path) == []  # a short tail stays in memory
    part.add(np.arange(15, 10 + len(v), dtype=np.int64), v[5:])
    assert part.segments == 2 and len(part) == len(v)
    assert len(cold_files(tmp_path, ".seg")) == 2  # sealed: on disk before any snapshot
    got = part.get(np.arange(10, 10 + len(v), dtype=np.int64))
    np.testing.assert_allclose(got, v, atol=F16)
    s.save(4)
    assert len(cold_files(tmp_path, ".seg")) == 3  # and the tail, with the snapshot
    again = cold_part(open_set(tmp_path))
    assert (again.segments, len(again)) == (2, len(v))
    np.testing.assert_allclose(again.get(np.arange(10, 10 + len(v), dtype=np.int64)), got)


def test_a_search_scans_every_live_row_exactly(tmp_path: Path) -> None:
    part = cold_part(open_set(tmp_path))
    v = vectors(3 * SEGMENT_ROWS + 7, 2)
    keys = np.arange(100, 100 + len(v), dtype=np.int64)
    part.add(keys, v)
    part.remove(keys[::5])
    live = np.ones(len(v), np.bool_)
    live[::5] = False
    for qi in (0, 3, 40):
        q = v[qi]
        got, sims = part.search(q, 12)
        stored = v.astype(np.float16).astype(np.float32)
        want = np.where(live, stored @ q, -np.inf)
        assert got.tolist() == keys[np.argsort(-want, kind="stable")[:12]].tolist()
        np.testing.assert_allclose(sims, np.sort(want)[::-1][:12], rtol=1e-6)
        assert not set(got.tolist()) & set(keys[::5].tolist())
        bk, bs = part.search_batch(v[[qi, 1]], 12)
        assert bk[0].tolist() == got.tolist()
        np.testing.assert_allclose(bs[0], sims, rtol=1e-6)
    # More than it holds: every live row, once.
    every, _ = part.search(v[0], 1000)
    assert sorted(every.tolist()) == keys[live].tolist()


def test_removed_rows_stay_removed_across_a_reopen(tmp_path: Path) -> None:
    s = open_set(tmp_path)
    part = cold_part(s)
    v = vectors(2 * SEGMENT_ROWS, 3)
    keys = np.arange(len(v), dtype=np.int64)
    part.add(keys, v)
    dead = np.array([1, 2, 20], np.int64)  # a few of each segment: tombstones, no rewrite
    part.remove(dead)
    assert (part.segments, len(part)) == (2, len(v) - 3)
    s.save(7)
    assert len(cold_files(tmp_path, ".dead")) == 1
    again = cold_part(open_set(tmp_path))
    assert len(again) == len(v) - 3
    assert not again.get(dead).any()
    assert not set(again.search(v[1], len(v))[0].tolist()) & {1, 2, 20}
    total, n = again.moments()
    live = np.setdiff1d(keys, dead)
    assert n == len(live)
    np.testing.assert_allclose(total, v[live].astype(np.float64).sum(axis=0), atol=10 * F16)


def test_an_upsert_replaces_a_sealed_row(tmp_path: Path) -> None:
    part = cold_part(open_set(tmp_path))
    v = vectors(SEGMENT_ROWS, 4)
    part.add(np.arange(SEGMENT_ROWS, dtype=np.int64), v)
    new = vectors(1, 5)
    part.add(np.array([3], np.int64), new)
    assert len(part) == SEGMENT_ROWS
    np.testing.assert_allclose(part.get(np.array([3], np.int64)), new, atol=F16)
    got, sims = part.search(new[0], 1)
    assert got.tolist() == [3] and sims[0] == pytest.approx(1.0, abs=F16)
    assert part.search(v[3], SEGMENT_ROWS)[0].tolist().count(3) == 1


def test_a_mostly_removed_segment_is_rewritten(tmp_path: Path) -> None:
    s = open_set(tmp_path)
    part = cold_part(s)
    v = vectors(2 * SEGMENT_ROWS, 6)
    keys = np.arange(len(v), dtype=np.int64)
    part.add(keys, v)
    s.save(1)
    first = {p.name for p in cold_files(tmp_path, ".seg")}
    part.remove(keys[: SEGMENT_ROWS // 2 + 1])  # more than half of the first segment
    assert part.segments == 1 and len(part) == len(v) - SEGMENT_ROWS // 2 - 1
    left = keys[SEGMENT_ROWS // 2 + 1 :]
    np.testing.assert_allclose(part.get(left), v[left], atol=F16)
    s.save(2)
    # The dropped segment's file went with the snapshot that no longer names it.
    assert len(first - {p.name for p in cold_files(tmp_path, ".seg")}) == 1
    again = cold_part(open_set(tmp_path))
    assert len(again) == len(left)
    assert sorted(again.search(v[0], 100)[0].tolist()) == left.tolist()


def test_a_crash_after_the_snapshot_leaves_the_archive_as_it_was_saved(tmp_path: Path) -> None:
    s = open_set(tmp_path)
    part = cold_part(s)
    v = vectors(3 * SEGMENT_ROWS, 7)
    part.add(np.arange(SEGMENT_ROWS + 3, dtype=np.int64), v[: SEGMENT_ROWS + 3])
    s.save(5)
    saved = part.moments()
    # Sealed, tombstoned and compacted after the snapshot; then the process dies unsaved.
    part.add(np.arange(SEGMENT_ROWS + 3, len(v), dtype=np.int64), v[SEGMENT_ROWS + 3 :])
    part.remove(np.arange(12, dtype=np.int64))
    assert part.segments >= 2
    r = open_set(tmp_path)
    assert r.saved_rev() == 5
    again = cold_part(r)
    assert len(again) == SEGMENT_ROWS + 3
    np.testing.assert_array_equal(again.moments()[0], saved[0])
    assert set(again.files()) == {p.name for p in cold_files(tmp_path)}  # the rest is swept


@pytest.mark.parametrize("damage", ["flip", "truncate", "delete"])
def test_a_damaged_segment_is_refused_at_open_with_its_name(tmp_path: Path, damage: str) -> None:
    s = open_set(tmp_path)
    cold_part(s).add(np.arange(SEGMENT_ROWS, dtype=np.int64), vectors(SEGMENT_ROWS, 8))
    s.save(3)
    [segment] = cold_files(tmp_path, ".seg")
    data = segment.read_bytes()
    if damage == "flip":
        segment.write_bytes(data[:40] + bytes([data[40] ^ 0xFF]) + data[41:])
    elif damage == "truncate":
        segment.write_bytes(data[: len(data) // 2])
    else:
        segment.unlink()
    with pytest.raises(ColdArchiveError) as err:
        open_set(tmp_path)
    assert segment.name in str(err.value)
    assert "missing" in str(err.value) if damage == "delete" else "damaged" in str(err.value)
    assert str(tmp_path / "manifest.json") in str(err.value)  # and how to rebuild
    assert segment.exists() == (damage != "delete")  # nothing was swept away


def test_a_segment_of_another_dimension_is_refused(tmp_path: Path) -> None:
    s = open_set(tmp_path)
    cold_part(s).add(np.arange(SEGMENT_ROWS, dtype=np.int64), vectors(SEGMENT_ROWS, 9))
    s.save(3)
    [segment] = cold_files(tmp_path, ".seg")
    other = open_set(tmp_path / "other", ndim=8)
    part = cold_part(other)
    rng = np.random.default_rng(0)
    eight = rng.normal(size=(SEGMENT_ROWS, 8)).astype(np.float32)
    part.add(np.arange(SEGMENT_ROWS, dtype=np.int64), eight)
    [foreign] = cold_files(tmp_path / "other", ".seg")
    segment.write_bytes(foreign.read_bytes())
    with pytest.raises(ColdArchiveError, match="dimension 8; this server's is 16"):
        open_set(tmp_path)
    assert NDIM == 16
