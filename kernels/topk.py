"""Top-k selection, fused into numba because `np.argpartition` over large arrays costs more than
the scoring kernel itself.

Order: score descending, ties broken by the lower index, so results are deterministic and do not
depend on how candidates were gathered.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from kernels.types import F32Array, I64Array


@njit(cache=True, nogil=True)
def topk_desc(scores: F32Array, k: int) -> I64Array:
    """Indices of the `k` largest `scores`, best first (ties: lower index first).

    A bounded insertion buffer: O(n·k) worst case, O(n) in practice since most scores fail the
    first comparison against the current k-th best. NaN scores are never selected.
    """
    n = scores.shape[0]
    k = max(min(k, n), 0)
    out = np.empty(k, dtype=np.int64)
    if k == 0:
        return out
    best = np.empty(k, dtype=np.float32)
    filled = 0
    for i in range(n):
        s = scores[i]
        if s != s:  # NaN
            continue
        if filled == k:
            if s <= best[k - 1]:
                continue
            pos = k - 1
        else:
            pos = filled
            filled += 1
        while pos > 0 and best[pos - 1] < s:
            best[pos] = best[pos - 1]
            out[pos] = out[pos - 1]
            pos -= 1
        best[pos] = s
        out[pos] = i
    return out[:filled]


def topk_desc_ref(scores: F32Array, k: int) -> I64Array:
    """numpy twin of `topk_desc`: a stable sort on the negated scores."""
    idx = np.arange(scores.shape[0], dtype=np.int64)
    keep = ~np.isnan(scores)
    idx = idx[keep]
    order = np.argsort(-scores[keep].astype(np.float64), kind="stable")
    return idx[order][: max(k, 0)].astype(np.int64)
