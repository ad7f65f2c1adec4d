"""The cap that every vector index keeps around its vectors, for the early stop's bound.

A cap is a unit anchor direction and a floor: every vector ever added has a cosine of at least
the floor with the anchor. A removal leaves it as it is, which keeps it true (only looser), so it
costs nothing to keep. `server.core.query.early_stop` reads it (`VectorIndex.cap`) to bound the
best similarity a query could find in a pocket it has not searched.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

F64 = npt.NDArray[np.float64]


class Cap:
    """The cap of one index's vectors. Not locked: the owning index calls it under its lock."""

    def __init__(self, ndim: int, slack: float, saved: tuple[F64, float] | None = None) -> None:
        """`slack`: subtracted from each new floor (the search's similarities are computed on
        vectors rounded to f16, which can differ from the ones given here); `saved`: the
        (anchor, floor) of a snapshot."""
        self._ndim = ndim
        self._slack = slack
        self._anchor: F64 | None = None if saved is None else saved[0]
        self._floor = math.inf if saved is None else saved[1]

    def widen(self, vectors: npt.NDArray[np.floating]) -> None:
        """Take `vectors` into the cap (the first ones choose its anchor: their mean)."""
        v = vectors.reshape(-1, self._ndim).astype(np.float64)
        if len(v) == 0:
            return
        if self._anchor is None:
            mean = v.sum(axis=0)
            norm = float(np.linalg.norm(mean))
            self._anchor = mean / norm if norm > 0 else v[0] / np.linalg.norm(v[0])
        self._floor = min(self._floor, float((v @ self._anchor).min()) - self._slack)

    def get(self) -> tuple[F64, float] | None:
        """(anchor, floor), a copy; None before any vector was added."""
        return None if self._anchor is None else (self._anchor.copy(), self._floor)

    def entry(self) -> dict[str, object]:
        """The cap for a snapshot's manifest (nothing while it is empty)."""
        if self._anchor is None:
            return {}
        return {"anchor": self._anchor.tolist(), "floor": self._floor}
