"""The one scoring formula (`kernels.fusion.fused_scores`) with the settings' constants: what
ranking scores each candidate with, and what the early stop bounds an unsearched pocket with."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from kernels.fusion import fused_scores
from server.core.settings import HybridSearchSettings

F32 = npt.NDArray[np.float32]
Flags = npt.NDArray[np.bool_]


def params(s: HybridSearchSettings, w_vec: float, w_kw: float) -> npt.NDArray[np.float64]:
    return np.array(
        [
            s.floor,
            w_vec,
            w_kw,
            s.both_boost,
            s.exact_boost,
            s.time_cue_boost,
            s.temporal_answer_boost,
        ],
        dtype=np.float64,
    )


def fused(
    s: HybridSearchSettings,
    weights: tuple[float, float],
    cos: F32,
    kw: F32,
    exact: Flags,
    in_window: Flags,
    says_when: Flags,
) -> F32:
    """Each candidate's fused score from its cosine, its keyword score on [0, 1] and its
    boosts' flags."""
    out: F32 = fused_scores(
        np.ascontiguousarray(cos, np.float32),
        np.ascontiguousarray(kw, np.float32),
        np.ascontiguousarray(exact, np.bool_),
        np.ascontiguousarray(in_window, np.bool_),
        np.ascontiguousarray(says_when, np.bool_),
        params(s, *weights),
    )
    return out
