"""Upper bounds on what an unsearched pocket could add to a Recall, for stopping a plan early.

The scales depend only on the query and the namespace (see `scoring`), so a memory's fused score
has a ceiling that can be computed without searching its pocket:
- its cosine is at most `best_cosine(query, cap)`: every vector of the pocket lies in the cap
  (anchor, floor) that its index keeps, and no unit vector in that cap is closer to the query;
- the keyword channel has already run over the whole plan, so a memory of the pocket scores at
  most the best listed one of the pocket; when the channel's list was full, an unlisted memory
  (which the pocket's vector search could still find, and the completion would score) may score
  anything, so the bound is then 1;
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

from server.core.memory.model import Vector
from server.core.memory.roles import Role
from server.core.memory.script import other
from server.core.query.run import Reader, Run, Sources
from server.core.query.scoring import Scorer, fused
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
    across: bool  # it could be written in the other script than the query
    same_role: bool  # it could be from the role the question is about


def ceiling_scores(
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
        np.array([p.across for p in ps], dtype=np.bool_),
        np.array([p.same_role for p in ps], dtype=np.bool_),
    )
    return [float(x) for x in out]


class EarlyStop(Reader):
    """The bar a memory must beat, and each unsearched pocket's ceiling (see the module
    docstring): a pocket whose ceiling is below the bar can be skipped."""

    def __init__(self, src: Sources, scorer: Scorer) -> None:
        super().__init__(src)
        self._scorer = scorer

    def bar(self, run: Run) -> float:
        """What a memory must beat to be returned: the relevance floor, or, once there are k
        current memories above it, the k-th final score among them (scores only rise as more
        pockets are searched, so the bar only rises). A pocket whose ceiling is below it can
        be skipped."""
        q = run.q
        sc = self._scorer.score(run)
        top_k = q.top_k or self._s.top_k
        bar = self._scorer.floor(q)
        live = (sc.fused >= bar) & ~self._cols.obsolete[sc.keys]
        if live.sum() >= top_k:
            final = sc.fused[live] * self._scorer.decay(run, sc.keys[live])
            bar = max(bar, float(np.partition(final, len(final) - top_k)[len(final) - top_k]))
        return bar

    def ceilings(self, run: Run, query: Vector, pids: list[int]) -> list[float]:
        """The highest score any memory of each pocket could reach (the module docstring)."""
        q = run.q
        of = self._cols.pocket
        best_kw: dict[int, float] = {}  # pocket → its best listed keyword score
        for k, score in run.kw.items():
            if k < len(of):
                p = int(of[k])
                best_kw[p] = max(best_kw.get(p, 0.0), score)
        exact = {int(of[k]) for k in run.exact if k < len(of)}
        span = run.window
        out: list[Possible] = []
        for pid in pids:
            part = self._vectors.partition(q.namespace, self._cols.catalog.key(pid).name, False)
            cap = None if part is None else part.cap()
            times = self._cols.pocket_span(pid)  # every event time ever put in the pocket
            possible = Possible(
                cosine=-1.0 if cap is None else best_cosine(query, *cap) + COSINE_SLACK,
                # a full list bounds nothing: an unlisted memory of it may score anything
                keyword=1.0 if run.kw_full else best_kw.get(pid, 0.0),
                exact=pid in exact,
                in_window=span is not None
                and (times is None or (times[0] < span[1] and times[1] >= span[0])),
                says_when=run.asks_when,
                across=other(run.script) is not None,
                same_role=run.role != Role.NONE,
            )
            out.append(possible)
        return ceiling_scores(self._s, run.weights, out)
