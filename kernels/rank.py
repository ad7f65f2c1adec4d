"""Final ranking: apply decay and demote obsolete memories, then take the top k.

    final_i = fused_i · decay_i
    key_i   = final_i − 2·B·obsolete_i,  B = max(fused) + 1

Obsolete memories only come back when asked for, and even then they must never outrank a current
one: shifting their key below every current key guarantees that for any fused scores, since
final_i ≤ max(fused) when decay ≤ 1.
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
    """Return (indices of the top-k by key, final scores of all candidates)."""
    n = fused.shape[0]
    final = np.empty(n, dtype=np.float32)
    key = np.empty(n, dtype=np.float32)
    bound = 1.0
    for i in range(n):
        if fused[i] + 1.0 > bound:
            bound = fused[i] + 1.0
    for i in range(n):
        final[i] = fused[i] * decay[i]
        key[i] = final[i] - 2.0 * bound if obsolete[i] else final[i]
    return topk_desc(key, k), final


def rank_final_ref(
    fused: F32Array, decay: F32Array, obsolete: BoolArray, k: int
) -> tuple[I64Array, F32Array]:
    """numpy twin of `rank_final`."""
    final = (fused * decay).astype(np.float32)
    bound = np.float32(max(1.0, float(fused.max(initial=0.0)) + 1.0))
    key = np.where(obsolete, final - 2 * bound, final).astype(np.float32)
    return topk_desc_ref(key, k), final
