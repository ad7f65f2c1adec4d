"""The heuristic policy (seed 003 §3.1, §4.2): the probability that each pocket holds what a
query needs, from rules over the route features and the pockets' own statistics. It needs no
training data, so it is also the cold-start policy.

Every pocket starts at a prior, and each rule can only move it as it says:
- `centroid`: a query vector near the pocket's centroid raises it (cosine 0.1 → nothing, 0.7 and
  above → 0.8);
- `terms`: a pocket holding a query term (its BM25 document count) is raised to 0.5–0.9 by the
  share of the query's terms it holds; one holding none of them is halved;
- `about_me` ("what is my …", "我的"): fact and preference pockets, the user's profile, → 0.95;
- `time_window` ("last week", "上周"): pockets of a time bucket whose records' times overlap the
  window → 0.95, those of a bucket that does not → ×0.3;
- `just_said` ("as I said", "刚才"): hot pockets → 0.95;
- `hot`: a hot pocket (recent, often read) is at least 0.6.
The rules that fired are returned with the scores, for the decision log and Explain.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from server.core.memory.model import Kind, PocketStats, Tier
from server.core.routing.budget import Scored
from server.core.routing.features import QueryFeatures

PRIOR = 0.3
PROFILE = (Kind.FACT, Kind.PREFERENCE)


@dataclass(frozen=True)
class Evidence:
    """What the heuristic knows of each pocket beyond its statistics, for one query."""

    term_hits: Mapping[str, Mapping[str, int]]  # pocket name → query term → documents holding it
    window: tuple[float, float] | None  # the time cue's event-time window, if any


@dataclass(frozen=True)
class Measures:
    """Each candidate pocket's relation to the query, computed once per decision for the
    heuristic, the model's input rows and Explain (in candidate order)."""

    cosine: list[float]  # the query vector's cosine with the centroid (0 without either)
    held: list[int]  # how many of the query's terms the pocket holds
    docs: list[int]  # its documents holding a query term, summed over the terms
    overlaps: list[float | None]  # whether its events meet the time window (None: no window
    # or no bucket)


def measure(
    f: QueryFeatures, vector: np.ndarray | None, pockets: Sequence[PocketStats], ev: Evidence
) -> Measures:
    cos = [0.0] * len(pockets)
    with_centroid = [i for i, p in enumerate(pockets) if p.centroid is not None]
    if vector is not None and with_centroid:
        sims = np.stack([pockets[i].centroid for i in with_centroid]) @ vector  # type: ignore[misc]
        for i, x in zip(with_centroid, sims.tolist(), strict=True):
            cos[i] = x
    terms = set(f.terms)
    held: list[int] = []
    docs: list[int] = []
    overlaps: list[float | None] = []
    for p in pockets:
        counts = [n for t, n in ev.term_hits.get(p.name, {}).items() if t in terms and n > 0]
        held.append(len(counts))
        docs.append(sum(counts))
        if ev.window is not None and p.bucket:
            start, end = ev.window
            overlaps.append(float(p.oldest < end and p.newest >= start))
        else:
            overlaps.append(None)
    return Measures(cos, held, docs, overlaps)


def heuristic(
    f: QueryFeatures,
    vector: np.ndarray | None,
    pockets: Sequence[PocketStats],
    ev: Evidence,
    m: Measures | None = None,
) -> tuple[list[Scored], list[str]]:
    """`m`: the pockets' measures, if already computed."""
    m = m or measure(f, vector, pockets, ev)
    fired: set[str] = set()
    out: list[Scored] = []
    n_terms = len(set(f.terms))
    for i, p in enumerate(pockets):
        rules: dict[str, float] = {}  # rule → the probability it sets
        prob = PRIOR
        if vector is not None and p.centroid is not None:
            near = 0.8 * min(max((m.cosine[i] - 0.1) / 0.6, 0.0), 1.0)
            if near > prob:
                prob = rules["centroid"] = near
        if n_terms:
            if m.held[i]:
                prob = rules["terms"] = max(prob, 0.5 + 0.4 * m.held[i] / n_terms)
            elif p.tier != Tier.HOT:  # hot memories are not in BM25 yet: no term statistics
                prob = rules["terms"] = prob * 0.5
        if "about_me" in f.flags and p.kind in PROFILE:
            prob = rules["about_me"] = max(prob, 0.95)
        if m.overlaps[i] is not None:
            prob = rules["time_window"] = max(prob, 0.95) if m.overlaps[i] else prob * 0.3
        if "just_said" in f.flags and p.tier == Tier.HOT:
            prob = rules["just_said"] = max(prob, 0.95)
        if p.tier == Tier.HOT and prob < 0.6:
            prob = rules["hot"] = 0.6
        fired.update(rules)
        out.append(Scored(p, prob))
    return out, sorted(fired)
