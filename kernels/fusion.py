"""The one scoring formula of a Recall: both channels on fixed scales, fused, with the boosts.

For candidate i, with cosine c_i, keyword score k_i in [0, 1] (BM25 over the query's reference,
clipped) and its boost flags:

    v_i     = (c_i − floor) / (ceiling − floor), clipped to [0, 1]   (0 at or below the floor)
    fused_i = (w_v·v_i + w_k·k_i), times `both_boost` if v_i > 0 and k_i > 0,
              times (1 + when_boost) if says_when_i
            + exact_boost · exact_i + time_boost · in_window_i

The scales depend only on the query and the namespace's statistics, never on the other
candidates, so a memory's score is the same whichever pockets a plan searches. The formula is
non-decreasing in every input, so the early stop's ceiling of an unsearched pocket is this same
function of the best values a memory of it could have (`server.core.query.early_stop`).

With the default weights (0.5, 0.5) a memory found by one channel counts at half weight and one
found by both is boosted (seed 000 §2.3); an image query moves the weights to (0.75, 0.25) so a
screenshot that only the vector channel can find is not buried (seed 000 §4.2). This is
convex-combination fusion (Bruch et al., "An Analysis of Fusion Functions for Hybrid
Retrieval", arXiv 2210.11934) with a both-channels boost.

`params` packs the constants: (floor, w_v, w_k, both_boost, exact_boost, time_boost,
when_boost, ceiling). The floor and the ceiling are the encoder's: where it puts unrelated texts,
and the cosine of a memory as near as one usually gets.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from kernels.types import BoolArray, F32Array, F64Array

FLOOR, W_VEC, W_KW, BOTH, EXACT, TIME, WHEN, CEILING = range(8)


@njit(cache=True, nogil=True)
def fused_scores(
    cos: F32Array,
    kw: F32Array,
    exact: BoolArray,
    in_window: BoolArray,
    says_when: BoolArray,
    params: F64Array,
) -> F32Array:
    """The fused score of each candidate (see the module docstring)."""
    n = cos.shape[0]
    out = np.empty(n, dtype=np.float32)
    floor = params[FLOOR]
    span = params[CEILING] - floor
    for i in range(n):
        v = 0.0
        if cos[i] > floor and span > 0.0:
            v = min((cos[i] - floor) / span, 1.0)
        k = min(max(kw[i], 0.0), 1.0)
        s = params[W_VEC] * v + params[W_KW] * k
        if v > 0.0 and k > 0.0:
            s *= params[BOTH]
        if says_when[i]:
            s *= 1.0 + params[WHEN]
        if exact[i]:
            s += params[EXACT]
        if in_window[i]:
            s += params[TIME]
        out[i] = s
    return out


def fused_scores_ref(
    cos: F32Array,
    kw: F32Array,
    exact: BoolArray,
    in_window: BoolArray,
    says_when: BoolArray,
    params: F64Array,
) -> F32Array:
    """numpy twin of `fused_scores`."""
    floor = params[FLOOR]
    c = cos.astype(np.float64)
    span = params[CEILING] - floor
    v = np.where((c > floor) & (span > 0), np.clip((c - floor) / span, 0.0, 1.0), 0.0)
    k = np.clip(kw.astype(np.float64), 0.0, 1.0)
    s = params[W_VEC] * v + params[W_KW] * k
    s = np.where((v > 0) & (k > 0), s * params[BOTH], s)
    s = np.where(says_when, s * (1.0 + params[WHEN]), s)
    s = s + params[EXACT] * exact + params[TIME] * in_window
    out: F32Array = s.astype(np.float32)
    return out
