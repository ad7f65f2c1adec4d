"""The vector indexes (server/adapters/usearch_index.py): one HNSW index per (namespace, pocket),
vector moments kept through add, upsert and remove, cosine search, and the manifest that a
snapshot writes and a reopen reads. The port's contract is checked on a warm pocket's usearch
index and on a cold pocket's segments (server/adapters/cold_segments.py) alike."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from server.adapters.cold_segments import ColdArchive
from server.adapters.usearch_index import UsearchIndexSet
from server.core.memory.ports import VectorIndex
from server.core.settings import ColdSettings
from tests.conftest import unit_vec

NDIM = 16
# f16 keeps about three significant digits per element.
F16 = 2e-3
# The fewest rows a cold segment may hold: the tests' adds seal some and leave a tail.
SEGMENT_ROWS = 16


def open_set(root: Path, ndim: int = NDIM, segment_rows: int = SEGMENT_ROWS) -> UsearchIndexSet:
    cold = ColdArchive(root / "cold", ndim, ColdSettings(segment_rows=segment_rows))
    return UsearchIndexSet(root, ndim, "f16", 16, 64, 64, cold=cold)


@pytest.fixture(params=["fact/warm/text", "fact/cold/text"])
def pocket(request: pytest.FixtureRequest) -> str:
    """A warm pocket (a usearch index) or a cold one (compressed segments)."""
    name: str = request.param
    return name


def vectors(n: int, seed: int) -> npt.NDArray[np.float32]:
    rng = np.random.default_rng(seed)
    return np.stack([unit_vec(rng, NDIM) for _ in range(n)])


def ks(*keys: int) -> npt.NDArray[np.int64]:
    return np.array(keys, dtype=np.int64)


def test_each_namespace_and_pocket_has_its_own_partition(tmp_path: Path) -> None:
    s = open_set(tmp_path)
    assert s.partition("a", "p1", create=False) is None
    a1 = s.partition("a", "p1", create=True)
    assert a1 is not None
    assert s.partition("a", "p1", create=False) is a1
    assert s.partition("a", "p1", create=True) is a1
    a2 = s.partition("a", "p2", create=True)
    b1 = s.partition("b", "p1", create=True)
    assert a2 is not None and b1 is not None
    assert len({id(a1), id(a2), id(b1)}) == 3
    assert s.partitions("a") == {"p1": a1, "p2": a2}
    assert s.partitions("b") == {"p1": b1}
    assert s.partitions("c") == {}
    a1.add(ks(1, 2), vectors(2, 0))
    b1.add(ks(3), vectors(1, 1))
    assert (len(a1), len(a2), len(b1), s.size()) == (2, 0, 1, 3)
    # Another partition's key is not in this one.
    assert b1.search(vectors(2, 0)[0], 5)[0].tolist() == [3]


def test_moments_follow_add_upsert_and_remove(tmp_path: Path, pocket: str) -> None:
    part = open_set(tmp_path).partition("a", pocket, create=True)
    assert part is not None
    total, n = part.moments()
    assert n == 0 and np.array_equal(total, np.zeros(NDIM))

    v = vectors(20, 1)
    part.add(np.arange(1, 21, dtype=np.int64), v)
    total, n = part.moments()
    assert n == 20 and total.dtype == np.float64
    np.testing.assert_allclose(total, v.astype(np.float64).sum(axis=0), atol=F16)

    # An upsert of keys 1..5 replaces their vectors, in the sum too.
    new = vectors(5, 2)
    part.add(np.arange(1, 6, dtype=np.int64), new)
    expected = v.copy()
    expected[:5] = new
    total, n = part.moments()
    assert n == 20 and len(part) == 20
    np.testing.assert_allclose(total, expected.astype(np.float64).sum(axis=0), atol=F16)

    # Removing keys 6..10 (and one it never held) takes exactly those out.
    part.remove(np.array([6, 7, 8, 9, 10, 999], dtype=np.int64))
    total, n = part.moments()
    assert n == 15 and len(part) == 15
    keep = np.r_[0:5, 10:20]
    np.testing.assert_allclose(total, expected[keep].astype(np.float64).sum(axis=0), atol=F16)

    part.remove(np.arange(1, 21, dtype=np.int64))
    total, n = part.moments()
    assert n == 0
    np.testing.assert_allclose(total, np.zeros(NDIM), atol=F16)


def test_a_large_add_in_chunks_keeps_the_moments(tmp_path: Path, pocket: str) -> None:
    part = open_set(tmp_path).partition("a", pocket, create=True)
    assert part is not None
    v = vectors(150, 3)  # more than one ADD_CHUNK
    part.add(np.arange(150, dtype=np.int64), v)
    total, n = part.moments()
    assert n == 150
    np.testing.assert_allclose(total, v.astype(np.float64).sum(axis=0), atol=F16)
    np.testing.assert_allclose(part.get(np.arange(150, dtype=np.int64)), v, atol=F16)


def test_search_returns_cosine_similarities_best_first(tmp_path: Path, pocket: str) -> None:
    part = open_set(tmp_path).partition("a", pocket, create=True)
    assert part is not None
    v = vectors(30, 4)
    keys = np.arange(100, 130, dtype=np.int64)
    part.add(keys, v)
    q = v[7]
    got_keys, sims = part.search(q, 10)
    assert got_keys.dtype == np.int64 and sims.dtype == np.float32
    assert got_keys[0] == 107
    assert sims[0] == pytest.approx(1.0, abs=F16)
    assert np.all(np.diff(sims) <= 1e-6)
    exact = v @ q
    np.testing.assert_allclose(sims, exact[got_keys - 100], atol=F16)
    best = keys[np.argsort(-exact)[:10]]
    assert set(got_keys.tolist()) == set(best.tolist())
    empty = open_set(tmp_path / "other").partition("a", pocket, create=True)
    assert empty is not None
    k0, s0 = empty.search(q, 5)
    assert len(k0) == 0 and len(s0) == 0
    assert len(part.search(q, 0)[0]) == 0


def test_search_batch_pads_missing_slots(tmp_path: Path, pocket: str) -> None:
    part = open_set(tmp_path).partition("a", pocket, create=True)
    assert part is not None
    v = vectors(3, 5)
    part.add(ks(1, 2, 3), v)
    keys, sims = part.search_batch(v[:2], 5)
    assert keys.shape == sims.shape == (2, 5)
    assert keys[0, 0] == 1 and keys[1, 0] == 2
    assert set(keys[0, :3].tolist()) == {1, 2, 3}
    assert np.all(keys[:, 3:] == -1) and np.all(np.isneginf(sims[:, 3:]))
    np.testing.assert_allclose(sims[0, :3], (v @ v[0])[keys[0, :3] - 1], atol=F16)


def test_get_returns_zeros_for_missing_keys(tmp_path: Path, pocket: str) -> None:
    part = open_set(tmp_path).partition("a", pocket, create=True)
    assert part is not None
    v = vectors(2, 6)
    part.add(ks(1, 2), v)
    got = part.get(ks(2, 50, 1))
    assert got.shape == (3, NDIM)
    np.testing.assert_allclose(got[0], v[1], atol=F16)
    np.testing.assert_allclose(got[2], v[0], atol=F16)
    assert not got[1].any()


def test_save_then_reopen_restores_vectors_revision_and_moments(
    tmp_path: Path, pocket: str
) -> None:
    s = open_set(tmp_path)
    a = s.partition("a", pocket, create=True)
    b = s.partition("b", pocket, create=True)
    assert a is not None and b is not None
    va, vb = vectors(10, 7), vectors(4, 8)
    a.add(np.arange(1, 11, dtype=np.int64), va)
    b.add(np.arange(20, 24, dtype=np.int64), vb)
    a.remove(ks(10))
    s.save(9)
    assert s.saved_rev() == 9
    moments_a, moments_b = a.moments(), b.moments()
    # A change after the snapshot is not in it.
    a.add(ks(50), vectors(1, 9))

    r = open_set(tmp_path)
    assert r.saved_rev() == 9
    assert r.size() == 13
    ra, rb = r.partition("a", pocket, create=False), r.partition("b", pocket, create=False)
    assert ra is not None and rb is not None
    assert set(r.partitions("a")) == {pocket}
    assert (len(ra), len(rb)) == (9, 4)
    np.testing.assert_allclose(ra.get(np.arange(1, 10, dtype=np.int64)), va[:9], atol=F16)
    np.testing.assert_allclose(rb.get(np.arange(20, 24, dtype=np.int64)), vb, atol=F16)
    for got, want in ((ra.moments(), moments_a), (rb.moments(), moments_b)):
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1] == want[1]
    assert ra.search(va[3], 1)[0].tolist() == [4]


def test_a_saved_empty_partition_reopens_empty(tmp_path: Path, pocket: str) -> None:
    s = open_set(tmp_path)
    s.partition("a", pocket, create=True)
    s.save(3)
    r = open_set(tmp_path)
    part = r.partition("a", pocket, create=False)
    assert part is not None and len(part) == 0
    total, n = part.moments()
    assert n == 0 and not total.any()
    assert r.saved_rev() == 3


def test_a_manifest_of_an_older_layout_is_discarded(tmp_path: Path, pocket: str) -> None:
    s = open_set(tmp_path)
    part = s.partition("a", pocket, create=True)
    assert part is not None
    part.add(ks(1, 2), vectors(2, 10))
    s.save(12)
    manifest = tmp_path / "manifest.json"
    meta = json.loads(manifest.read_text())
    assert meta["layout"] == 2
    del meta["layout"]
    manifest.write_text(json.dumps(meta))

    r = open_set(tmp_path)
    assert r.saved_rev() == 0
    assert r.partitions("a") == {}
    assert r.partition("a", pocket, create=False) is None
    assert r.size() == 0
    assert not manifest.exists()
    assert list(tmp_path.glob("*.usearch")) == []
    assert list((tmp_path / "cold").iterdir()) == []


def test_a_manifest_of_another_dimension_is_refused(tmp_path: Path, pocket: str) -> None:
    s = open_set(tmp_path)
    part = s.partition("a", pocket, create=True)
    assert part is not None
    part.add(ks(1), vectors(1, 11))
    s.save(1)
    with pytest.raises(ValueError, match="dimension 16"):
        open_set(tmp_path, ndim=8)
    # The snapshot is left alone for a server of the right dimension.
    assert open_set(tmp_path).saved_rev() == 1


def test_the_cap_holds_every_vector_through_adds_removes_and_a_reopen(
    tmp_path: Path, pocket: str
) -> None:
    s = open_set(tmp_path)
    part = s.partition("ns", pocket, True)
    assert part is not None and part.cap() is None
    rng = np.random.default_rng(7)
    centre = unit_vec(rng, NDIM)
    near = np.stack([centre + 0.3 * unit_vec(rng, NDIM) for _ in range(50)])
    near /= np.linalg.norm(near, axis=1, keepdims=True)
    part.add(np.arange(50, dtype=np.int64), near.astype(np.float32))
    part.add(np.arange(50, 60, dtype=np.int64), vectors(10, 8))  # anywhere: the cap widens
    part.remove(ks(3, 4))

    live = np.array([k for k in range(60) if k not in (3, 4)], dtype=np.int64)

    def held(index: VectorIndex) -> bool:
        cap = index.cap()
        assert cap is not None
        anchor, floor = cap
        stored = index.get(live)
        return np.isclose(np.linalg.norm(anchor), 1.0) and bool((stored @ anchor >= floor).all())

    first = part.cap()
    assert held(part)
    s.save(1)
    again = open_set(tmp_path).partition("ns", pocket, False)
    assert again is not None and first is not None
    reopened = again.cap()
    assert reopened is not None and np.allclose(reopened[0], first[0])
    assert reopened[1] == pytest.approx(first[1])
    # A manifest written before caps were kept: the cap is computed from the stored vectors.
    meta = json.loads((tmp_path / "manifest.json").read_text())
    for p in meta["partitions"]:
        del p["anchor"], p["floor"]
    (tmp_path / "manifest.json").write_text(json.dumps(meta))
    legacy = open_set(tmp_path).partition("ns", pocket, False)
    assert legacy is not None and held(legacy)


def test_a_crash_between_the_file_and_the_manifest_keeps_file_and_sum_agreeing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 17: the new file was renamed into place, the manifest still held the old sum, and
    the pocket's centroid stayed wrong for good after the restart's catch-up."""
    import server.adapters.usearch_index as ui

    s = open_set(tmp_path)
    part = s.partition("ns", "p", create=True)
    assert part is not None
    first = vectors(20, 1)
    part.add(np.arange(20, dtype=np.int64), first)
    s.save(1)
    part.add(np.arange(20, 40, dtype=np.int64), vectors(20, 2))
    real = ui.os.replace

    def crash(src: object, dst: object) -> None:
        if str(dst).endswith("manifest.json"):
            raise OSError("killed before the manifest was replaced")
        real(src, dst)  # type: ignore[arg-type]

    monkeypatch.setattr(ui.os, "replace", crash)
    with pytest.raises(OSError):
        s.save(2)
    monkeypatch.setattr(ui.os, "replace", real)
    again = open_set(tmp_path).partition("ns", "p", create=False)
    assert again is not None and len(again) == 20  # the snapshot of revision 1, whole
    total, n = again.moments()
    assert n == 20 and np.allclose(total, first.astype(np.float64).sum(axis=0), atol=20 * F16)
    assert len(list(tmp_path.glob("*.usearch"))) == 1  # the cut-short save's file is gone
