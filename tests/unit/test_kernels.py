"""The compiled kernels agree with their numpy twins and keep their invariants."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from kernels.decay import step_decay, step_decay_ref
from kernels.fusion import fused_scores, fused_scores_ref
from kernels.rank import rank_final, rank_final_ref
from kernels.scan import exact_topk, exact_topk_ref
from kernels.topk import topk_desc, topk_desc_ref

unit_f = st.floats(0.0, 1.0, width=32)
sizes = st.integers(0, 60)


# The kernel called with unpacked columns (numba's dispatcher types a fixed arity).
fused_any: Callable[..., Any] = fused_scores


def arrays(n: int, elements: st.SearchStrategy[float] = unit_f) -> st.SearchStrategy[np.ndarray]:
    return hnp.arrays(np.float32, n, elements=elements)


def bools(n: int) -> st.SearchStrategy[np.ndarray]:
    return hnp.arrays(np.bool_, n)


@st.composite
def fusion_case(draw: st.DrawFn) -> tuple:
    n = draw(sizes)
    w = draw(st.floats(0.0, 1.0))
    floor = draw(st.floats(-0.5, 0.9))
    params = np.array(
        [
            floor,
            w,
            1.0 - w,
            draw(st.floats(1.0, 2.0)),  # both boost
            draw(st.floats(0.0, 2.0)),  # exact
            draw(st.floats(0.0, 1.0)),  # time cue
            draw(st.floats(0.0, 1.0)),  # says when
            draw(st.floats(min(floor + 0.05, 1.0), 1.0)),  # ceiling
            draw(st.floats(0.0, 1.0)),  # across scripts: the share
            draw(st.floats(0.0, 1.0)),  # the role boost
            draw(st.sampled_from([0.0, 0.05, 0.2, 1.0])),  # the keyword gate
            draw(st.floats(0.0, 1.0)),  # the share an unbacked keyword match keeps
        ]
    )
    return (
        draw(arrays(n, st.floats(-1, 1, width=32))),
        draw(arrays(n)),
        draw(bools(n)),
        draw(bools(n)),
        draw(bools(n)),
        draw(bools(n)),  # across scripts
        draw(bools(n)),  # from the role the question is about
        params,
    )


@given(fusion_case())
def test_fused_scores_match_the_reference(case: tuple) -> None:
    np.testing.assert_allclose(fused_scores(*case), fused_scores_ref(*case), rtol=1e-5, atol=1e-6)


@given(fusion_case())
def test_fused_scores_are_bounded_and_zero_without_a_hit_or_boost(case: tuple) -> None:
    cos, kw, ex, win, when, acr, role, p = case
    out = fused_scores(cos, kw, ex, win, when, acr, role, p)
    assert np.all(out >= 0)
    top = p[3] * (p[1] + p[2]) * (1 + p[6]) * (1 + p[9]) + p[4] + p[5]
    assert np.all(out <= top + 1e-5)
    none = (cos.astype(np.float64) <= p[0]) & (kw == 0) & ~ex & ~win & ~when
    assert np.all(out[none] == 0)


@given(fusion_case(), st.integers(0, 6))
def test_fused_scores_never_fall_when_an_input_rises(case: tuple, which: int) -> None:
    """The early stop's ceiling is the formula over upper bounds (an unsearched pocket's
    memories counted as across scripts): that needs monotony."""
    *base, p = case
    cols = [c.copy() for c in base]
    if which in (0, 1):  # cosine, keyword score
        cols[which] = np.minimum(cols[which] + np.float32(0.3), np.float32(1.0))
    else:
        cols[which] = np.ones_like(cols[which])
    raised = fused_any(*cols, p)
    assert np.all(raised >= fused_any(*base, p) - 1e-6)


def test_one_channel_counts_at_its_weight_and_both_are_boosted() -> None:
    cos = np.array([1.0, 1.0, 0.0], dtype=np.float32)
    kw = np.array([1.0, 0.0, 1.0], dtype=np.float32)
    no = np.zeros(3, dtype=np.bool_)
    p = np.array([0.0, 0.5, 0.5, 1.2, 1.0, 0.3, 0.15, 1.0, 0.5, 0.2, 0.0, 0.5])
    np.testing.assert_allclose(
        fused_scores(cos, kw, no, no, no, no, no, p), [1.2, 0.5, 0.5], rtol=1e-6
    )


def test_a_turn_from_the_role_asked_about_is_raised_by_its_share() -> None:
    cos = np.array([0.5, 0.5], dtype=np.float32)
    kw = np.array([0.2, 0.2], dtype=np.float32)
    no = np.zeros(2, dtype=np.bool_)
    role = np.array([True, False])
    p = np.array([0.0, 0.5, 0.5, 1.2, 1.0, 0.3, 0.15, 1.0, 0.5, 0.2, 0.0, 0.5])
    out = fused_scores(cos, kw, no, no, no, no, role, p)
    np.testing.assert_allclose(out, [0.42 * 1.2, 0.42], rtol=1e-5)


def test_a_keyword_match_the_vector_does_not_back_counts_for_less() -> None:
    """Below the gate's vector score a keyword match counts in proportion: one shared word of a
    memory about something else (v = 0.05) no longer outranks a paraphrase (v = 0.4, k = 0.1);
    above the gate nothing changes."""
    cos = np.array([0.05, 0.4, 0.5], dtype=np.float32)
    kw = np.array([0.8, 0.1, 0.8], dtype=np.float32)
    no = np.zeros(3, dtype=np.bool_)
    p = np.array([0.0, 0.5, 0.5, 1.2, 1.0, 0.3, 0.15, 1.0, 0.5, 0.2, 0.2, 0.0])
    out = fused_scores(cos, kw, no, no, no, no, no, p)
    np.testing.assert_allclose(out, [(0.025 + 0.1) * 1.2, 0.25 * 1.2, 0.65 * 1.2], rtol=1e-5)
    assert out[1] > out[0]
    p[10] = 0.0  # off: the shared word wins
    off = fused_scores(cos, kw, no, no, no, no, no, p)
    assert off[0] > off[1]


def test_a_keyword_match_the_vector_puts_below_its_floor_keeps_its_unbacked_share() -> None:
    """A name the encoder does not place near the question (cosine at the floor): its keyword
    match keeps `unbacked` of its weight instead of vanishing."""
    cos = np.array([0.0], dtype=np.float32)
    kw = np.array([0.8], dtype=np.float32)
    no = np.zeros(1, dtype=np.bool_)
    p = np.array([0.1, 0.5, 0.5, 1.2, 1.0, 0.3, 0.15, 1.0, 0.5, 0.2, 0.1, 0.5])
    np.testing.assert_allclose(fused_scores(cos, kw, no, no, no, no, no, p), [0.2], rtol=1e-5)


def test_across_scripts_the_vector_stands_in_for_the_keyword_channel() -> None:
    """A match in the other script (no keyword can match) outranks a weaker one in the query's
    script that shares an incidental word; in the same script nothing changes; a real keyword
    match across scripts (an identifier) keeps its score and its boost."""
    cos = np.array([0.55, 0.3, 0.55, 0.55], dtype=np.float32)
    kw = np.array([0.0, 0.3, 0.0, 0.5], dtype=np.float32)
    no = np.zeros(4, dtype=np.bool_)
    across = np.array([True, False, False, True])
    p = np.array([0.0, 0.5, 0.5, 1.2, 1.0, 0.3, 0.15, 1.0, 0.5, 0.2, 0.0, 0.5])
    out = fused_scores(cos, kw, no, no, no, across, no, p)
    np.testing.assert_allclose(out, [0.4125, 0.36, 0.275, 0.63], rtol=1e-5)


@given(fusion_case(), st.randoms())
def test_a_candidates_score_does_not_depend_on_the_others(case: tuple, rnd) -> None:
    cols, p = case[:-1], case[-1]
    perm = np.array(rnd.sample(range(len(cols[0])), len(cols[0])), dtype=np.int64)
    a = fused_any(*cols, p)[perm]
    b = fused_any(*(c[perm] for c in cols), p)
    np.testing.assert_array_equal(a, b)
    if len(cols[0]) > 1:
        one = fused_any(*(c[:1] for c in cols), p)
        assert one[0] == fused_any(*cols, p)[0]


THRESH = np.array([7 * 86400.0, 30 * 86400.0])
FACTORS = np.array([0.6, 0.4], dtype=np.float32)


@given(
    st.integers(0, 50).flatmap(
        lambda n: st.tuples(hnp.arrays(np.float64, n, elements=st.floats(0, 1e8)), bools(n))
    )
)
def test_step_decay_matches_reference(case: tuple) -> None:
    ages, decays = case
    np.testing.assert_array_equal(
        step_decay(ages, decays, THRESH, FACTORS), step_decay_ref(ages, decays, THRESH, FACTORS)
    )


@given(st.floats(0, 1e8), st.floats(0, 1e8))
def test_step_decay_is_monotone_in_age(a: float, b: float) -> None:
    young, old = min(a, b), max(a, b)
    out = step_decay(np.array([young, old]), np.ones(2, dtype=np.bool_), THRESH, FACTORS)
    assert out[0] >= out[1]


def test_step_decay_uses_the_seed_steps() -> None:
    days = np.array([0.0, 6.9, 7.1, 29.0, 31.0, 40.0]) * 86400
    out = step_decay(days, np.ones(6, dtype=np.bool_), THRESH, FACTORS)
    np.testing.assert_allclose(out, [1, 1, 0.6, 0.6, 0.4, 0.4], rtol=1e-6)
    assert np.all(step_decay(days, np.zeros(6, dtype=np.bool_), THRESH, FACTORS) == 1)


@given(
    st.integers(0, 80).flatmap(
        lambda n: st.tuples(
            arrays(n, st.floats(-1, 1, width=32) | st.just(np.float32(0.5))), st.integers(0, 90)
        )
    )
)
def test_topk_matches_reference(case: tuple) -> None:
    scores, k = case
    np.testing.assert_array_equal(topk_desc(scores, k), topk_desc_ref(scores, k))


def test_topk_skips_nan_and_breaks_ties_by_index() -> None:
    s = np.array([0.5, np.nan, 0.9, 0.5, 0.1], dtype=np.float32)
    assert topk_desc(s, 3).tolist() == [2, 0, 3]
    assert topk_desc(s, 10).tolist() == [2, 0, 3, 4]


@given(
    st.integers(0, 50).flatmap(
        lambda n: st.tuples(
            arrays(n, st.floats(0, 1.5, width=32)), arrays(n), bools(n), st.integers(1, 60)
        )
    )
)
def test_rank_final_matches_reference_and_never_lets_obsolete_outrank_current(case: tuple) -> None:
    fused, decay, obsolete, k = case
    decay = np.maximum(decay, np.float32(1e-3))
    idx, final = rank_final(fused, decay, obsolete, k)
    ridx, rfinal = rank_final_ref(fused, decay, obsolete, k)
    np.testing.assert_array_equal(idx, ridx)
    np.testing.assert_allclose(final, rfinal, rtol=1e-6)
    flags = obsolete[idx]
    # Once an obsolete memory appears, nothing current follows it.
    if flags.any():
        assert not flags[np.argmax(flags) :].__contains__(False)


@settings(max_examples=50)
@given(st.integers(0, 40), st.integers(1, 16), st.integers(1, 50), st.integers(0, 2**31))
def test_exact_topk_matches_reference(n: int, d: int, k: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    mat = rng.normal(size=(n, d)).astype(np.float32)
    q = rng.normal(size=d).astype(np.float32)
    mask = rng.random(n) > 0.3
    idx, s = exact_topk(mat, q, mask, k)
    _ridx, rs = exact_topk_ref(mat, q, mask, k)
    np.testing.assert_allclose(s, rs, rtol=1e-4, atol=1e-5)
    assert set(idx.tolist()) <= set(np.nonzero(mask)[0].tolist())
    assert len(idx) == min(k, int(mask.sum()))
    assert np.all(np.diff(s) <= 1e-6)
