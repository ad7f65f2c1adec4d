"""`bench memory`'s chromadb baseline gets what pocketd gets, and recall@k is computed right.

The recall tests need numpy only. The chromadb tests run `bench.chroma_baseline` in
`.venv-bench` on a few hundred records and skip when it is absent: `make test` runs them only
where `make bench-env` has been run first (a CI job that wants them runs `make bench-env test`).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from bench.baseline import BruteForceHybrid
from bench.data import Dataset, make
from bench.exact_scan import exact_topk, recall_at_k, split_queries
from bench.memory import (
    BENCH_PY,
    KINDS,
    NS,
    exact_ids,
    item,
    query_kind,
    run_chroma,
    write_chroma_inputs,
)

K = 5


def test_exact_topk_on_a_hand_made_case() -> None:
    # Five unit vectors at known angles from the query (1, 0).
    angles = np.array([0.0, 0.5, 1.0, 1.5, 3.0])
    matrix = np.stack([np.cos(angles), np.sin(angles)], axis=1).astype(np.float32)
    q = np.array([1.0, 0.0], dtype=np.float32)
    assert exact_topk(matrix, q, 3).tolist() == [0, 1, 2]
    allowed = np.array([False, True, False, True, True])
    assert exact_topk(matrix, q, 2, allowed).tolist() == [1, 3]
    # Fewer allowed rows than k: all of them, best first.
    assert exact_topk(matrix, q, 3, np.array([False, False, True, False, True])).tolist() == [2, 4]


def test_recall_at_k_on_a_hand_made_case() -> None:
    exact = [[1, 2, 3, 4, 5], [6, 7, 8, 9, 10]]
    # Order does not matter; ids outside the exact top k do not count.
    assert recall_at_k([[5, 4, 3, 2, 1], [10, 9, 8, 7, 6]], exact) == 1.0
    assert recall_at_k([[1, 2, 3, 99, 98], [6, 7, 8, 9, 97]], exact) == pytest.approx(7 / 10)
    assert recall_at_k([[], [6]], exact) == pytest.approx(1 / 10)
    # A query whose filter allows only two records is held to those two.
    assert recall_at_k([[1, 2, 3, 4, 5], [6, 50]], [[1, 2, 3, 4, 5], [6, 7]]) == pytest.approx(
        6 / 7
    )
    with pytest.raises(ValueError):
        recall_at_k([[1]], exact)


def test_the_tune_and_report_queries_are_disjoint_and_cover_all() -> None:
    tune, report = split_queries(7)
    assert not set(tune) & set(report)
    assert sorted(tune + report) == list(range(7))
    assert abs(len(tune) - len(report)) <= 1


@pytest.fixture(scope="module")
def data() -> Dataset:
    return make(400, dim=16, queries=24, seed=3)


@pytest.fixture(scope="module")
def exact(data: Dataset) -> dict[str, np.ndarray]:
    return exact_ids(BruteForceHybrid(data), data, K)


def test_the_exact_scans_are_the_best_records_of_the_querys_kind_or_of_all(
    data: Dataset, exact: dict[str, np.ndarray]
) -> None:
    kinds = np.array([item(NS, data, r).kind for r in range(len(data.texts))])
    for i, q in enumerate(data.queries):
        sims = data.vectors @ q
        mine = np.flatnonzero(kinds == query_kind(data, i))
        assert sorted(exact["kind"][i].tolist()) == sorted(mine[np.argsort(-sims[mine])[:K]])
        assert sorted(exact["plain"][i].tolist()) == sorted(np.argsort(-sims)[:K].tolist())


needs_chroma = pytest.mark.skipif(
    not BENCH_PY.exists(), reason="`make bench-env` creates .venv-bench with chromadb"
)


@needs_chroma
def test_the_chromadb_collections_hold_pocketds_records_and_queries(
    data: Dataset, exact: dict[str, np.ndarray], tmp_path: Path
) -> None:
    write_chroma_inputs(tmp_path, data, exact, {"plain": 1.0, "kind": 1.0})
    run_chroma(tmp_path, K, "--inventory")
    inv = np.load(tmp_path / "inventory.npz")
    n = len(data.texts)
    stored = [item(NS, data, i) for i in range(n)]  # what pocketd is sent
    vectors = np.array([m.vector for m in stored], dtype=np.float32)
    kinds = np.array([m.kind for m in stored])
    # The single collection: every record, with pocketd's vector and kind.
    assert inv["single.ids"].tolist() == list(range(n))
    np.testing.assert_allclose(inv["single.embeddings"], vectors, atol=1e-6)
    assert inv["single.kinds"].tolist() == kinds.tolist()
    # The per-kind collections partition exactly those records.
    seen: list[int] = []
    for kind in KINDS:
        ids = inv[f"kind.{kind}.ids"]
        assert len(ids) and set(kinds[ids].tolist()) == {kind}
        assert inv[f"kind.{kind}.kinds"].tolist() == [kind] * len(ids)
        np.testing.assert_allclose(inv[f"kind.{kind}.embeddings"], vectors[ids], atol=1e-6)
        seen += ids.tolist()
    assert sorted(seen) == list(range(n))
    # The queries are pocketd's, each filtered on the kind pocketd stored its source record as.
    np.testing.assert_array_equal(np.load(tmp_path / "queries.npy"), data.queries)
    targets = [stored[int(t)].kind for t in data.query_targets]
    assert np.load(tmp_path / "query_kinds.npy").tolist() == targets


@needs_chroma
def test_the_matched_breadth_is_the_smallest_that_reaches_the_target(
    data: Dataset, exact: dict[str, np.ndarray], tmp_path: Path
) -> None:
    # Nothing to reach on plain queries: the narrowest breadth; every kind-filtered one exact.
    write_chroma_inputs(tmp_path, data, exact, {"plain": 0.0, "kind": 1.0})
    run_chroma(tmp_path, K)
    out = json.loads((tmp_path / "chroma.json").read_text())
    rows = out["rows"]
    assert set(rows) == {"single_plain", "single_where_kind", "per_kind", "per_kind_fan_out"}
    for row in rows.values():
        assert row["default"]["ef"] == out["default_ef"]
        for setting in ("default", "matched"):
            assert 0.0 <= row[setting]["recall_at_k"] <= 1.0
            assert row[setting]["p50_ms"] > 0
        tried = dict((int(e), r) for e, r in row["tried"])
        ef = int(row["matched"]["ef"])
        if row["filter"] == "plain":
            assert ef == out["ladder"][0]
        else:
            assert row["matched"]["reached"] and tried[ef] == 1.0
            assert all(r < 1.0 for e, r in tried.items() if e < ef)
