"""Exact (brute-force) inner-product scan with fused top-k.

For unit vectors x_i and query q: s_i = <x_i, q> = cos(x_i, q). Used for the hot tier (recent,
not necessarily indexed memories) and for heavily filtered searches where an ANN index with
over-fetch would miss candidates.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from kernels.topk import topk_desc, topk_desc_ref
from kernels.types import BoolArray, F32Array, I64Array


@njit(cache=True, nogil=True, fastmath=True)
def _dot_rows(matrix: F32Array, query: F32Array, mask: BoolArray, out: F32Array) -> None:
    """out[i] = <matrix[i], query> for masked rows. `fastmath` lets LLVM reorder the sum into
    SIMD lanes (about 4x faster); it is kept to this loop, since it would break NaN checks."""
    n, d = matrix.shape
    for i in range(n):
        if mask[i]:
            acc = np.float32(0.0)
            for j in range(d):
                acc += matrix[i, j] * query[j]
            out[i] = acc


@njit(cache=True, nogil=True)
def masked_dot(matrix: F32Array, query: F32Array, mask: BoolArray) -> F32Array:
    """s_i = <matrix[i], query> where mask[i], NaN elsewhere (NaN is never selected by top-k)."""
    out = np.full(matrix.shape[0], np.nan, dtype=np.float32)
    _dot_rows(matrix, query, mask, out)
    return out


@njit(cache=True, nogil=True)
def exact_topk(
    matrix: F32Array, query: F32Array, mask: BoolArray, k: int
) -> tuple[I64Array, F32Array]:
    """Top-k rows of `matrix` by inner product with `query`, among rows where `mask` is set.

    Returns (row indices best first, their scores).
    """
    scores = masked_dot(matrix, query, mask)
    idx = topk_desc(scores, k)
    return idx, scores[idx]


def exact_topk_ref(
    matrix: F32Array, query: F32Array, mask: BoolArray, k: int
) -> tuple[I64Array, F32Array]:
    """numpy twin of `exact_topk`."""
    scores = (matrix.astype(np.float64) @ query.astype(np.float64)).astype(np.float32)
    scores = np.where(mask, scores, np.float32(np.nan)).astype(np.float32)
    idx = topk_desc_ref(scores, k)
    return idx, scores[idx]
