"""Upper bounds on what an unsearched pocket could add to a Recall, for stopping a plan early.

The fusion scales depend only on the query and the namespace (see `retrieval`), so a memory's
fused score has a ceiling that can be computed without searching its pocket:
- its cosine is at most `best_cosine(query, cap)`: every vector of the pocket lies in the cap
  (anchor, floor) that its index keeps, and no unit vector in that cap is closer to the query;
- the keyword channel has already run over the whole plan, so a memory of the pocket is a
  keyword hit only if it is listed there: its keyword score is at most the best listed one of
  the pocket (0, and no both-channels boost, when none is listed);
- each additive boost counts if it could apply at all (an exact identifier only if a listed
  holder is in the pocket; a time cue only if the pocket's time bucket meets its window).
Decay only lowers a score (its factors are at most 1), so the ceiling bounds the final score too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

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
    keyword_hit: bool  # it could be a keyword hit (even one scoring 0)
    exact: bool  # it could hold every exact identifier of the query
    in_window: bool  # its event time could lie in the query's time-cue window
    says_when: bool  # the query asks "when", and it could say when


def ceiling(s: HybridSearchSettings, w_vec: float, w_kw: float, p: Possible) -> float:
    """The highest fused score (hence final score) that a memory with at most `p` reaches."""
    v = min(max((p.cosine - s.vector_floor) / (1.0 - s.vector_floor), 0.0), 1.0)
    fused = w_vec * v + w_kw * p.keyword
    if v > 0 and p.keyword_hit:
        fused = max(fused, fused * s.both_boost)
    return (
        fused
        + s.exact_boost * p.exact
        + s.time_cue_boost * p.in_window
        + s.temporal_answer_boost * p.says_when
    )
