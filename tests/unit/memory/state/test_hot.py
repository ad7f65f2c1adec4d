"""The hot tier (server/core/memory/hot.py): it follows the revision feed, counts what the indexer
has not reached, evicts indexed rows that are not of tier hot, and scans exactly by vector and by
keyword share."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from server.core.memory.changes import Applied
from server.core.memory.model import Kind, Record, Tier, Vector
from server.core.memory.ports import BoolArray, KeyArray
from server.core.memory.state.hot import MemoryHotTier
from tests.conftest import FakeClock, unit_vec

NS = "tenant"
DIM = 16


def hot_tier() -> MemoryHotTier:
    return MemoryHotTier(DIM, str.split, FakeClock())


def vec(seed: int) -> Vector:
    return unit_vec(np.random.default_rng(seed), DIM)


def written(
    key: int,
    vector: Vector | None,
    text: str = "",
    kind: Kind = Kind.FACT,
    tier: Tier = Tier.WARM,
    ns: str = NS,
    rev: int = 1,
) -> Applied:
    rec = Record(memory_id=f"m{key}", namespace=ns, kind=kind, text=text, tier=tier, key=key)
    return Applied(rev, key, ns, rec, vector)


def erased(key: int, ns: str = NS, rev: int = 1) -> Applied:
    return Applied(rev, key, ns, None, None)


def every(keys: KeyArray) -> BoolArray:
    return np.ones(len(keys), dtype=np.bool_)


def test_follow_puts_written_records_with_vectors_and_drops_erased_ones() -> None:
    hot = hot_tier()
    hot.follow([written(1, vec(1)), written(2, vec(2)), written(3, None)])
    assert hot.pending() == 2
    assert hot.contains(1) and hot.contains(2) and not hot.contains(3)
    assert hot.count(NS) == 2 and hot.count("other") == 0
    hot.follow([erased(1)])
    assert not hot.contains(1) and hot.contains(2)
    assert hot.pending() == 1 and hot.count(NS) == 1
    hot.follow([erased(1), erased(42)])  # already gone, never there
    assert hot.pending() == 1 and hot.count(NS) == 1


def test_follow_stores_unit_vectors() -> None:
    hot = hot_tier()
    v = vec(3)
    hot.follow([written(5, (4.0 * v).astype(np.float32))])
    keys, mat = hot.rows(NS, int(Kind.FACT))
    assert keys.tolist() == [5]
    np.testing.assert_allclose(mat[0], v, rtol=1e-5, atol=1e-6)


def test_mark_indexed_decrements_pending_once() -> None:
    hot = hot_tier()
    hot.follow([written(k, vec(k)) for k in (1, 2, 3)])
    assert hot.pending() == 3
    hot.mark_indexed([(1, 1), (2, 1)])
    assert hot.pending() == 1
    hot.mark_indexed([(1, 1), (2, 1), (99, 1)])  # again, and a key it never held
    assert hot.pending() == 1
    assert hot.contains(1)  # indexed rows stay until evicted
    # A rewrite of an indexed row makes it unindexed again.
    hot.follow([written(1, vec(10), rev=2)])
    assert hot.pending() == 2
    # Removing an indexed row does not touch pending; removing an unindexed one does.
    hot.follow([erased(2, rev=3)])
    assert hot.pending() == 2
    hot.follow([erased(3, rev=4)])
    assert hot.pending() == 1


def test_a_row_rewritten_after_the_indexer_read_it_stays_unindexed() -> None:
    """The indexer reads revision 1, a merge writes revision 2, then the indexer marks what it
    read: the new text must stay in the hot tier (it is in no index yet)."""
    hot = hot_tier()
    hot.follow([written(1, vec(1), rev=1)])
    hot.follow([written(1, vec(2), text="merged", rev=2)])
    hot.mark_indexed([(1, 1)])
    assert hot.pending() == 1 and hot.evict() == 0 and hot.contains(1)
    hot.mark_indexed([(1, 2)])
    assert hot.pending() == 0 and hot.evict() == 1


def test_evict_drops_indexed_rows_but_keeps_tier_hot_and_unindexed_ones() -> None:
    hot = hot_tier()
    hot.follow(
        [
            written(1, vec(1), tier=Tier.WARM),
            written(2, vec(2), tier=Tier.HOT),
            written(3, vec(3), tier=Tier.WARM),
            written(4, vec(4), tier=Tier.COLD, ns="other"),
        ]
    )
    hot.mark_indexed([(1, 1), (2, 1), (4, 1)])
    assert hot.evict() == 2
    assert not hot.contains(1) and not hot.contains(4)
    assert hot.contains(2) and hot.contains(3)
    assert hot.count(NS) == 2 and hot.count("other") == 0
    assert hot.pending() == 1
    assert hot.evict() == 0
    # The tier-hot row is still scanned although it is indexed.
    keys, _ = hot.scan(NS, vec(2), 5, every)
    assert set(keys.tolist()) == {2, 3}


def test_scan_is_the_exact_top_k_of_the_rows_that_pass_the_mask() -> None:
    hot = hot_tier()
    rng = np.random.default_rng(7)
    vs = np.stack([unit_vec(rng, DIM) for _ in range(150)])  # past the initial capacity of 64
    hot.follow([written(k + 1, vs[k]) for k in range(150)])
    q = unit_vec(rng, DIM)

    def even(keys: KeyArray) -> BoolArray:
        return np.asarray(keys % 2 == 0)

    keys, sims = hot.scan(NS, q, 7, even)
    all_keys = np.arange(1, 151)
    exact = vs @ q
    allowed = all_keys % 2 == 0
    want = all_keys[allowed][np.argsort(-exact[allowed])[:7]]
    assert keys.tolist() == want.tolist()
    np.testing.assert_allclose(sims, exact[keys - 1], rtol=1e-5, atol=1e-6)
    assert np.all(np.diff(sims) <= 0)

    # Fewer passing rows than k: only they come back.
    few, _ = hot.scan(NS, q, 10, lambda k: np.isin(k, [3, 9]))
    assert sorted(few.tolist()) == [3, 9]
    none, _ = hot.scan(NS, q, 10, lambda k: np.zeros(len(k), dtype=np.bool_))
    assert len(none) == 0
    assert len(hot.scan("other", q, 10, every)[0]) == 0


def test_scan_sees_a_row_moved_into_a_removed_rows_slot() -> None:
    hot = hot_tier()
    vs = [vec(k) for k in range(5)]
    hot.follow([written(k + 1, vs[k]) for k in range(5)])
    hot.follow([erased(2, rev=2)])  # the last row moves into its slot
    for k in (1, 3, 4, 5):
        keys, sims = hot.scan(NS, vs[k - 1], 1, every)
        assert keys.tolist() == [k]
        assert sims[0] == pytest.approx(1.0, abs=1e-5)
    assert sorted(hot.rows(NS, int(Kind.FACT))[0].tolist()) == [1, 3, 4, 5]


def test_keyword_scores_the_idf_weighted_share_of_query_terms() -> None:
    hot = hot_tier()
    hot.follow(
        [
            written(1, vec(1), "alpha"),
            written(2, vec(2), "alpha beta"),
            written(3, vec(3), "beta gamma"),
            written(4, vec(4), "delta"),
        ]
    )
    weights = {"alpha": 1.0, "beta": 3.0}
    keys, scores = hot.keyword(NS, weights, every)
    got = dict(zip(keys.tolist(), scores.tolist(), strict=True))
    assert got == {1: pytest.approx(0.25), 2: pytest.approx(1.0), 3: pytest.approx(0.75)}
    # The mask applies; indexed rows are left to the BM25 index.
    hot.mark_indexed([(2, 1)])
    keys, _ = hot.keyword(NS, weights, lambda k: k != 3)
    assert keys.tolist() == [1]
    assert len(hot.keyword(NS, {}, every)[0]) == 0
    assert len(hot.keyword(NS, {"alpha": 0.0}, every)[0]) == 0
    assert len(hot.keyword("other", weights, every)[0]) == 0


def test_rows_returns_the_rows_of_one_kind() -> None:
    hot = hot_tier()
    vs = {k: vec(k) for k in (1, 2, 3)}
    hot.follow(
        [
            written(1, vs[1], kind=Kind.FACT),
            written(2, vs[2], kind=Kind.EPISODE),
            written(3, vs[3], kind=Kind.FACT),
            written(9, vec(9), kind=Kind.FACT, ns="other"),
        ]
    )
    keys, mat = hot.rows(NS, int(Kind.FACT))
    assert sorted(keys.tolist()) == [1, 3]
    assert mat.shape == (2, DIM)
    for k, row in zip(keys.tolist(), mat, strict=True):
        np.testing.assert_allclose(row, vs[k], rtol=1e-5, atol=1e-6)
    assert hot.rows(NS, int(Kind.SKILL))[0].tolist() == []
    keys, mat = hot.rows("nobody", int(Kind.FACT))
    assert len(keys) == 0 and mat.shape == (0, DIM)


def test_moments_sum_the_vectors_of_one_pocket() -> None:
    hot = hot_tier()
    vs = {k: vec(k) for k in range(1, 13)}
    hot.follow([written(k, v) for k, v in vs.items()])
    # Keys 1..9 have a pocket; 10..12 lie beyond the array and belong to none.
    pocket_of: npt.NDArray[np.int32] = np.array([-1, 0, 1, 0, 1, 0, 1, 0, 1, 0], dtype=np.int32)
    total, n = hot.moments(NS, pocket_of, 0)
    members = [k for k in range(1, 10) if pocket_of[k] == 0]
    assert n == len(members) == 5
    np.testing.assert_allclose(total, np.sum([vs[k] for k in members], axis=0), atol=1e-5)
    total1, n1 = hot.moments(NS, pocket_of, 1)
    assert n1 == 4
    np.testing.assert_allclose(total1, np.sum([vs[k] for k in (2, 4, 6, 8)], axis=0), atol=1e-5)
    total_none, n_none = hot.moments("other", pocket_of, 0)
    assert n_none == 0 and total_none.shape == (DIM,) and not total_none.any()


def test_an_unindexed_row_is_matched_by_its_speaker_too() -> None:
    from server.core.memory.state.hot import hot_terms

    rec = Record(memory_id="a", namespace="n", kind=Kind.EPISODE, text="I ran", speaker="Priya")
    assert hot_terms(str.split, rec) == ["I", "ran", "Priya"]
    assert hot_terms(str.split, Record(memory_id="b", namespace="n", kind=Kind.FACT, text="x")) == [
        "x"
    ]
