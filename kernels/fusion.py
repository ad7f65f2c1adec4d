"""The one scoring formula of a Recall: both channels on fixed scales, fused, with the boosts.

For candidate i, with cosine c_i, keyword score k_i in [0, 1] (BM25 over the query's reference,
clipped) and its boost flags:

    v_i     = (c_i − floor) / (1 − floor), clipped to [0, 1]      (0 at or below the floor)
    fused_i = w_v·v_i + w_k·k_i, times `both_boost` if v_i > 0 and k_i > 0
            + exact_boost · exact_i + time_boost · in_window_i + when_boost · says_when_i

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
when_boost).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from kernels.types import BoolArray, F32Array, F64Array

FLOOR, W_VEC, W_KW, BOTH, EXACT, TIME, WHEN = range(7)


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
    span = 1.0 - floor
    for i in range(n):
        v = 0.0
        if cos[i] > floor and span > 0.0:
            v = min((cos[i] - floor) / span, 1.0)
        k = min(max(kw[i], 0.0), 1.0)
        s = params[W_VEC] * v + params[W_KW] * k
        if v > 0.0 and k > 0.0:
            s *= params[BOTH]
        if exact[i]:
            s += params[EXACT]
        if in_window[i]:
            s += params[TIME]
        if says_when[i]:
            s += params[WHEN]
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
    v = np.where(c > floor, np.clip((c - floor) / (1.0 - floor), 0.0, 1.0), 0.0)
    k = np.clip(kw.astype(np.float64), 0.0, 1.0)
    s = params[W_VEC] * v + params[W_KW] * k
    s = np.where((v > 0) & (k > 0), s * params[BOTH], s)
    s = s + params[EXACT] * exact + params[TIME] * in_window + params[WHEN] * says_when
    out: F32Array = s.astype(np.float32)
    return out
