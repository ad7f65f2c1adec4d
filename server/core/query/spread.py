"""An experiment (off): the top of a ranking spread over sessions. Greedy, one place at a time:
each candidate's score is multiplied by `factor` once for every hit of its session already
placed, and the best such score takes the next place."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

F32 = npt.NDArray[np.float32]


def spread(scores: F32, sessions: npt.NDArray[np.int64], places: int, factor: float) -> F32:
    """The scores to rank by (`sessions`: each candidate's session label, −1: none)."""
    n = len(scores)
    if factor >= 1.0 or n == 0:
        return scores
    labels, index = np.unique(sessions, return_inverse=True)
    counts = np.zeros(len(labels), np.int64)
    free = np.ones(n, np.bool_)
    none = sessions < 0
    out = scores.astype(np.float64)
    held = np.empty(n, np.float64)
    for _ in range(min(places, n)):
        held[:] = out * np.where(none, 1.0, factor ** counts[index])
        held[~free] = -np.inf
        best = int(np.argmax(held))
        out[best] = held[best]
        free[best] = False
        if not none[best]:
            counts[index[best]] += 1
    rest = free & ~none
    out[rest] *= factor ** counts[index[rest]]
    result: F32 = out.astype(np.float32)
    return result
