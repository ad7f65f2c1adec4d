"""Compile every kernel once, with the exact argument types the server uses.

With `cache=True` a fresh process loads the machine code from NUMBA_CACHE_DIR (about 0.3 s) rather
than compiling it (about 1 s). The server calls this before it reports SERVING so no request pays
for the JIT.
"""

from __future__ import annotations

import time

import numpy as np

from kernels.coarse import coarse_topk, quantize
from kernels.decay import step_decay
from kernels.fusion import fused_scores
from kernels.rank import rank_final
from kernels.retention import retention
from kernels.scan import exact_topk


def compile_all() -> float:
    """Compile (or load from cache) every kernel; return the seconds it took."""
    t0 = time.perf_counter()
    f = np.zeros(4, dtype=np.float32)
    b = np.ones(4, dtype=np.bool_)
    fused_scores(
        f, f, b, b, b, b, b, np.array([0.1, 0.5, 0.5, 1.2, 1.0, 0.3, 0.15, 1.0, 0.5, 0.1, 0.0, 0.5])
    )
    step_decay(np.zeros(4), b, np.array([1.0, 2.0]), np.array([0.6, 0.4], dtype=np.float32))
    rank_final(f, f, b, 2)
    exact_topk(np.zeros((4, 3), dtype=np.float32), np.zeros(3, dtype=np.float32), b, 2)
    codes, inv = quantize(np.ones((4, 3), dtype=np.float32))
    coarse_topk(codes, inv, 4, codes[0], 2)
    never = np.full(4, np.nan)
    retention(
        np.ones(4, np.int8), np.zeros(4), never, np.zeros(4, np.int32), 1.0, 0.5, 0.5, 30.0, 4.0
    )
    return time.perf_counter() - t0
