"""Retention: how much a memory is still worth keeping warm (seed 001 §2.3), for a whole namespace.

For a memory of importance i (1 to 5), last accessed at l (NaN: never, then its creation time c
stands in), accessed a times, at time `now`:

    imp      = (i - 1) / 4, clipped to [0, 1]
    fresh    = 0.5 ** (age_days / half_life_days),  age = now - (l, else c), at least 0
    accessed = a / (a + access_saturation)
    freshness = 1 - (1 - fresh) * (1 - accessed)   (either one keeps it fresh; stays in [0, 1])
    retention = (w_i * imp + w_f * freshness) / (w_i + w_f)   (0 when both weights are 0)

Each part is monotone, so retention never falls when importance or the access count rises, and
never rises as the memory ages (a later `now`, an older last access). A warm memory below the
configured threshold moves to cold. Computed in float64, returned as float32.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
from numba import njit

from kernels.types import F32Array, F64Array

DAY = 86_400.0
I8Array = npt.NDArray[np.int8]
IntArray = npt.NDArray[np.int32] | npt.NDArray[np.int64]


@njit(cache=True, nogil=True)
def retention(
    importance: I8Array,
    created: F64Array,
    last_access: F64Array,
    accesses: IntArray,
    now: float,
    w_importance: float,
    w_freshness: float,
    half_life_days: float,
    access_saturation: float,
) -> F32Array:
    """Each memory's retention in [0, 1] (see the module docstring)."""
    n = importance.shape[0]
    out = np.zeros(n, dtype=np.float32)
    total = w_importance + w_freshness
    if total <= 0.0:
        return out
    for j in range(n):
        imp = min(max((float(importance[j]) - 1.0) / 4.0, 0.0), 1.0)
        since = created[j] if math.isnan(last_access[j]) else last_access[j]
        age_days = max(now - since, 0.0) / DAY
        fresh = 0.5 ** (age_days / half_life_days)
        a = max(float(accesses[j]), 0.0)
        accessed = a / (a + access_saturation)
        freshness = 1.0 - (1.0 - fresh) * (1.0 - accessed)
        out[j] = (w_importance * imp + w_freshness * freshness) / total
    return out


def retention_ref(
    importance: I8Array,
    created: F64Array,
    last_access: F64Array,
    accesses: IntArray,
    now: float,
    w_importance: float,
    w_freshness: float,
    half_life_days: float,
    access_saturation: float,
) -> F32Array:
    """numpy twin of `retention`."""
    total = w_importance + w_freshness
    if total <= 0.0:
        return np.zeros(len(importance), dtype=np.float32)
    imp = np.clip((importance.astype(np.float64) - 1.0) / 4.0, 0.0, 1.0)
    since = np.where(np.isnan(last_access), created, last_access)
    age_days = np.maximum(now - since, 0.0) / DAY
    fresh = 0.5 ** (age_days / half_life_days)
    a = np.maximum(accesses.astype(np.float64), 0.0)
    accessed = a / (a + access_saturation)
    freshness = 1.0 - (1.0 - fresh) * (1.0 - accessed)
    out: F32Array = ((w_importance * imp + w_freshness * freshness) / total).astype(np.float32)
    return out
