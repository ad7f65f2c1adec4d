"""Upper bounds on what an unsearched pocket could add to a Recall, for stopping a plan early.

The fusion scales depend only on the query and the namespace (see `retrieval`), so a memory's
fused score has a ceiling that can be computed without searching its pocket:
- its cosine is at most `best_cosine(query, cap)`: every vector of the pocket lies in the cap
  (anchor, floor) that its index keeps, and no unit vector in that cap is closer to the query;
- the keyword channel has already run over the whole plan, so a memory of the pocket scores at
  most the best listed one of the pocket, or, when the channel's list was full, the lowest
  listed score (an unlisted memory ranks below the whole list);
- each additive boost counts if it could apply at all (an exact identifier only if a listed
  holder is in the pocket; a time cue only if the pocket's time bucket meets its window).
The formula is non-decreasing in each of these, so the ceiling is the formula itself
(`scoring.fused`) over them. Decay only lowers a score (its factors are at most 1), so the
ceiling bounds the final score too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from server.core.query.scoring import fused
from server.core.settings import HybridSearchSettings

ROUNDING = 1e-4
# Added to a cap's best cosine: the similarities a search reports are those of vectors stored in
# f16 (and of the query rounded to f16), which can beat the f32 geometry by about 1e-4; this is
# twenty times that.
COSINE_SLACK = 2e-3


def best_cosine(
    query: npt.NDArray[np.float32], anchor: npt.NDArray[np.float64], floor: float
) -> float:
    """The largest cosine of the unit `query` with any unit vector whose cosine with the unit
    `anchor` is at least `floor`. The cap is widened by `ROUNDING` radians: near a cosine of 1
    the angle is ill-conditioned, and a vector 1e-6 away from a unit anchor may round to a
    cosine above 1."""
    if floor <= -1.0:
        return 1.0
    to_anchor = math.acos(min(max(float(np.dot(query, anchor)), -1.0), 1.0))
    spread = math.acos(min(floor, 1.0)) + ROUNDING
    return 1.0 if to_anchor <= spread else math.cos(to_anchor - spread)


@dataclass(frozen=True)
class Possible:
    """What a pocket's best memory could have, at most."""

    cosine: float  # -1 when the pocket has no vectors
    keyword: float  # on the keyword channel's [0, 1] scale
    exact: bool  # it could hold every exact identifier of the query
    in_window: bool  # its event time could lie in the query's time-cue window
    says_when: bool  # the query asks "when", and it could say when


def ceilings(
    s: HybridSearchSettings, weights: tuple[float, float], ps: list[Possible]
) -> list[float]:
    """The highest fused score (hence final score) that a memory with at most `p` reaches, for
    each `p`: the scoring formula over those bounds."""
    if not ps:
        return []
    out = fused(
        s,
        weights,
        np.array([p.cosine for p in ps], dtype=np.float32),
        np.array([p.keyword for p in ps], dtype=np.float32),
        np.array([p.exact for p in ps], dtype=np.bool_),
        np.array([p.in_window for p in ps], dtype=np.bool_),
        np.array([p.says_when for p in ps], dtype=np.bool_),
    )
    return [float(x) for x in out]
