"""Coarse to fine: the int8 kernels against their numpy twins, the codes kept in step with the
index through upserts and removals (a state machine against a plain dict), and a coarse search
that finds what the exact scan finds."""

from __future__ import annotations

from pathlib import Path

import hypothesis.strategies as st
import numpy as np
import numpy.typing as npt
from hypothesis import given
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from kernels.coarse import coarse_topk, coarse_topk_ref, quantize
from server.adapters.usearch_index import CoarseCodes, UsearchIndexSet, UsearchVectorIndex

DIM = 32


def unit_rows(rng: np.random.Generator, n: int, dim: int = DIM) -> npt.NDArray[np.float32]:
    x = rng.standard_normal((n, dim)).astype(np.float32)
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


@given(st.integers(0, 2**32 - 1), st.integers(1, 300), st.integers(0, 40))
def test_the_coarse_kernel_ranks_as_its_numpy_twin(seed: int, n: int, k: int) -> None:
    rng = np.random.default_rng(seed)
    codes, inv = quantize(unit_rows(rng, n))
    query, _ = quantize(unit_rows(rng, 1))
    rows = int(rng.integers(0, n + 1))
    got = coarse_topk(codes, inv, rows, query[0], k)
    want = coarse_topk_ref(codes, inv, rows, query[0], k)
    assert got.tolist() == want.tolist()


def test_codes_approximate_the_cosine_within_a_hundredth() -> None:
    rng = np.random.default_rng(1)
    x = unit_rows(rng, 500, 384)
    codes, inv = quantize(x)
    qc, qi = quantize(x[:1])
    approx = (codes.astype(np.int64) @ qc[0].astype(np.int64)) * inv * qi[0]
    assert np.abs(approx - x @ x[0]).max() < 0.01
    zero, zinv = quantize(np.zeros((1, 8), np.float32))
    assert not zero.any() and zinv[0] == 0


class CodesMachine(RuleBasedStateMachine):
    """Upserts and removals in any order; the live keys and their codes match a dict."""

    def __init__(self) -> None:
        super().__init__()
        self.codes = CoarseCodes(DIM)
        self.ref: dict[int, npt.NDArray[np.float32]] = {}
        self.rng = np.random.default_rng(0)

    @rule(keys=st.lists(st.integers(0, 40), min_size=1, max_size=8, unique=True))
    def upsert(self, keys: list[int]) -> None:
        vecs = unit_rows(self.rng, len(keys))
        self.codes.upsert(np.array(keys, np.int64), vecs)
        self.ref.update(zip(keys, vecs, strict=True))

    @rule(keys=st.lists(st.integers(0, 45), max_size=8))
    def remove(self, keys: list[int]) -> None:
        self.codes.remove(np.array(keys, np.int64))
        for k in keys:
            self.ref.pop(k, None)

    @invariant()
    def same_keys_and_best_first(self) -> None:
        assert len(self.codes) == len(self.ref)
        if not self.ref:
            return
        key = next(iter(self.ref))
        every = self.codes.candidates(self.ref[key], len(self.ref) + 5)
        assert sorted(every.tolist()) == sorted(self.ref)
        (best,) = self.codes.candidates(self.ref[key], 1)
        assert best == key or np.dot(self.ref[int(best)], self.ref[key]) > 0.98


TestCodes = CodesMachine.TestCase


def test_a_coarse_search_finds_what_the_exact_scan_finds(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    centres = unit_rows(rng, 20, 384)
    n = 3000
    x = centres[rng.integers(20, size=n)] + rng.standard_normal((n, 384)).astype(np.float32) * 0.05
    x = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
    part = UsearchIndexSet(tmp_path, 384, "f16", 16, 64, 64).partition("ns", "p", create=True)
    assert part is not None
    keys = np.arange(n, dtype=np.int64)
    part.add(keys, x)
    found = []
    for q in x[rng.integers(n, size=20)]:
        exact, _ = part.search(q, 10, exact=True)
        coarse, sims = part.coarse_search(q, 10, 40)
        assert np.all(np.diff(sims) <= 1e-6)  # best first
        found.append(len(set(exact.tolist()) & set(coarse.tolist())) / 10)
    assert np.mean(found) >= 0.95
    # The codes follow the index: a removed key is never a candidate, an added one is.
    part.remove(keys[:1500])
    part.add(np.array([n], np.int64), x[:1])
    got, _ = part.coarse_search(x[0], 3000, 3000)
    assert set(got.tolist()) == set(range(1500, n + 1))


def test_a_dimension_too_wide_for_float32_sums_is_summed_in_integers() -> None:
    rng = np.random.default_rng(4)
    codes, inv = quantize(unit_rows(rng, 50, 2048))  # 2048 × 127² > 2²⁴
    query, _ = quantize(unit_rows(rng, 1, 2048))
    assert coarse_topk(codes, inv, 50, query[0], 10).tolist() == (
        coarse_topk_ref(codes, inv, 50, query[0], 10).tolist()
    )


def test_an_index_keeps_codes_only_in_the_coarse_range(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    part = UsearchIndexSet(tmp_path, DIM, "f16", 16, 64, 64, (10, 20)).partition(
        "ns", "p", create=True
    )
    assert isinstance(part, UsearchVectorIndex)
    part.add(np.arange(5, dtype=np.int64), unit_rows(rng, 5))
    assert part._codes is None
    part.add(np.arange(5, 15, dtype=np.int64), unit_rows(rng, 10))
    assert part._codes is not None and len(part._codes) == 15  # built by the add
    part.add(np.arange(15, 40, dtype=np.int64), unit_rows(rng, 25))
    assert part._codes is None  # beyond the range: searched by the graph
