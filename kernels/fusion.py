"""Hybrid score fusion of a vector channel and a keyword (BM25) channel.

For candidate i with normalised channel scores v_i, k_i in [0, 1] and hit flags hv_i, hk_i:

    fused_i = (w_v·v_i + w_k·k_i) · boost   if hv_i and hk_i   (found by both channels)
    fused_i =  w_v·v_i                      if only hv_i
    fused_i =  w_k·k_i                      if only hk_i

With the default weights (0.5, 0.5) a hit found by one channel counts at half weight, and one
found by both is boosted, as the design documents (seed 000 §2.3) prescribe. An image query moves
the weights to (0.75, 0.25) so a screenshot that only the vector channel can find is not buried
(seed 000 §4.2). This is convex-combination fusion (Bruch et al., "An Analysis of Fusion Functions
for Hybrid Retrieval", arXiv 2210.11934) with a both-channels boost.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from kernels.types import BoolArray, F32Array


@njit(cache=True, nogil=True)
def fuse(
    vec: F32Array,
    kw: F32Array,
    vec_hit: BoolArray,
    kw_hit: BoolArray,
    w_vec: float,
    w_kw: float,
    both_boost: float,
) -> F32Array:
    """Fused score per candidate (see the module docstring for the formula)."""
    n = vec.shape[0]
    out = np.empty(n, dtype=np.float32)
    for i in range(n):
        s = 0.0
        if vec_hit[i]:
            s += w_vec * vec[i]
        if kw_hit[i]:
            s += w_kw * kw[i]
        if vec_hit[i] and kw_hit[i]:
            s *= both_boost
        out[i] = s
    return out


def fuse_ref(
    vec: F32Array,
    kw: F32Array,
    vec_hit: BoolArray,
    kw_hit: BoolArray,
    w_vec: float,
    w_kw: float,
    both_boost: float,
) -> F32Array:
    """numpy twin of `fuse`."""
    s = np.where(vec_hit, w_vec * vec.astype(np.float64), 0.0) + np.where(
        kw_hit, w_kw * kw.astype(np.float64), 0.0
    )
    s = np.where(vec_hit & kw_hit, s * both_boost, s)
    out: F32Array = s.astype(np.float32)
    return out


@njit(cache=True, nogil=True)
def normalise_by_max(scores: F32Array, hit: BoolArray) -> F32Array:
    """Divide the scores of hits by the largest hit score, so the best hit scores 1.

    Raw BM25 has no fixed scale, so it is put on [0, 1] per query before fusing. Non-hits and
    non-positive maxima give 0.
    """
    n = scores.shape[0]
    m = 0.0
    for i in range(n):
        if hit[i] and scores[i] > m:
            m = scores[i]
    out = np.zeros(n, dtype=np.float32)
    if m <= 0.0:
        return out
    for i in range(n):
        if hit[i] and scores[i] > 0.0:
            out[i] = scores[i] / m
    return out


def normalise_by_max_ref(scores: F32Array, hit: BoolArray) -> F32Array:
    """numpy twin of `normalise_by_max`."""
    s = np.where(hit & (scores > 0), scores.astype(np.float64), 0.0)
    m = s.max(initial=0.0)
    if m <= 0:
        return np.zeros(scores.shape[0], dtype=np.float32)
    out: F32Array = (s / m).astype(np.float32)
    return out
