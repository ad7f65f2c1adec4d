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
def scale_channels(
    cos: F32Array, bm25: F32Array, floor: float, reference: float
) -> tuple[F32Array, F32Array]:
    """Put both channels on [0, 1] with scales that do not depend on the other candidates.

    vector: (cos − floor) / (1 − floor), clipped to [0, 1]: at or below the floor a memory is
    not a vector hit at all. keyword: BM25 / reference, clipped to [0, 1], where the reference
    is the score of an average-length document holding each query term once (Σ idf over the
    query's terms in the namespace), so it depends only on the query and the corpus.
    """
    n = cos.shape[0]
    v = np.zeros(n, dtype=np.float32)
    k = np.zeros(n, dtype=np.float32)
    span = 1.0 - floor
    for i in range(n):
        if cos[i] > floor and span > 0.0:
            v[i] = min((cos[i] - floor) / span, 1.0)
        if reference > 0.0 and bm25[i] > 0.0:
            k[i] = min(bm25[i] / reference, 1.0)
    return v, k


def scale_channels_ref(
    cos: F32Array, bm25: F32Array, floor: float, reference: float
) -> tuple[F32Array, F32Array]:
    """numpy twin of `scale_channels`."""
    c = cos.astype(np.float64)
    v = np.where(c > floor, np.clip((c - floor) / (1.0 - floor), 0.0, 1.0), 0.0)
    b = bm25.astype(np.float64)
    k = np.clip(b / reference, 0.0, 1.0) if reference > 0 else np.zeros_like(b)
    return v.astype(np.float32), np.where(b > 0, k, 0.0).astype(np.float32)
