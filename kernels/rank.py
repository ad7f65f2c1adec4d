"""Final ranking: apply decay, rank current memories first, then obsolete ones.

    final_i = fused_i · decay_i

The top k are the current memories by final score (descending, ties to the lower index), followed,
only if fewer than k are current, by obsolete memories in the same order. Obsolete memories only
come back when asked for, and even then they never outrank a current one, whatever the scores.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from kernels.topk import topk_desc, topk_desc_ref
from kernels.types import BoolArray, F32Array, I64Array


@njit(cache=True, nogil=True)
def rank_final(
    fused: F32Array, decay: F32Array, obsolete: BoolArray, k: int
) -> tuple[I64Array, F32Array]:
    """Return (indices of the top k, final scores of all candidates)."""
    n = fused.shape[0]
    final = np.empty(n, dtype=np.float32)
    current = np.empty(n, dtype=np.float32)
    stale = np.empty(n, dtype=np.float32)
    for i in range(n):
        final[i] = fused[i] * decay[i]
        current[i] = np.nan if obsolete[i] else final[i]
        stale[i] = final[i] if obsolete[i] else np.nan
    first = topk_desc(current, k)
    if first.shape[0] >= k:
        return first, final
    rest = topk_desc(stale, k - first.shape[0])
    return np.concatenate((first, rest)), final


def rank_final_ref(
    fused: F32Array, decay: F32Array, obsolete: BoolArray, k: int
) -> tuple[I64Array, F32Array]:
    """numpy twin of `rank_final`."""
    final = (fused * decay).astype(np.float32)
    nan = np.float32(np.nan)
    first = topk_desc_ref(np.where(obsolete, nan, final).astype(np.float32), k)
    rest = topk_desc_ref(np.where(obsolete, final, nan).astype(np.float32), k - len(first))
    return np.concatenate([first, rest]).astype(np.int64), final
