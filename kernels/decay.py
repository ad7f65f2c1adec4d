"""Step time decay for fact-like memories (seed 000 §4.3).

For a memory of age a (seconds) whose kind decays, with thresholds t_1 < t_2 < … and factors
f_1 ≥ f_2 ≥ … (defaults: 7 days → 0.6, 30 days → 0.4):

    decay(a) = f_j for the largest j with a > t_j, and 1 when a ≤ t_1.

Kinds that do not decay (episodes: what happened stays what happened) get 1. The factor is
monotone non-increasing in age, which is what keeps an old fact from outranking a newer one that
contradicts it.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from kernels.types import BoolArray, F32Array, F64Array


@njit(cache=True, nogil=True)
def step_decay(
    age_seconds: F64Array, decays: BoolArray, thresholds: F64Array, factors: F32Array
) -> F32Array:
    """Decay factor per memory (see the module docstring). `thresholds` must be ascending."""
    n = age_seconds.shape[0]
    m = thresholds.shape[0]
    out = np.ones(n, dtype=np.float32)
    for i in range(n):
        if not decays[i]:
            continue
        a = age_seconds[i]
        f = 1.0
        for j in range(m):
            if a > thresholds[j]:
                f = factors[j]
        out[i] = f
    return out


def step_decay_ref(
    age_seconds: F64Array, decays: BoolArray, thresholds: F64Array, factors: F32Array
) -> F32Array:
    """numpy twin of `step_decay`."""
    steps = np.searchsorted(thresholds, age_seconds, side="left")  # count of t_j < a
    table = np.concatenate([np.ones(1, dtype=np.float32), factors.astype(np.float32)])
    out = table[steps]
    return np.where(decays, out, np.float32(1.0)).astype(np.float32)
