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


def heuristic(
    f: QueryFeatures,
    vector: np.ndarray | None,
    pockets: Sequence[PocketStats],
    ev: Evidence,
) -> tuple[list[Scored], list[str]]:
    fired: set[str] = set()
    out: list[Scored] = []
    terms = set(f.terms)
    for p in pockets:
        rules: dict[str, float] = {}  # rule → the probability it sets
        prob = PRIOR
        if vector is not None and p.centroid is not None:
            sim = float(np.dot(vector, p.centroid))
            near = 0.8 * min(max((sim - 0.1) / 0.6, 0.0), 1.0)
            if near > prob:
                prob = rules["centroid"] = near
        if terms:
            held = sum(1 for t in terms if ev.term_hits.get(p.name, {}).get(t, 0) > 0)
            if held:
                prob = rules["terms"] = max(prob, 0.5 + 0.4 * held / len(terms))
            elif p.tier != Tier.HOT:  # hot memories are not in BM25 yet: no term statistics
                prob = rules["terms"] = prob * 0.5
        if "about_me" in f.flags and p.kind in PROFILE:
            prob = rules["about_me"] = max(prob, 0.95)
        if ev.window is not None and p.bucket:
            start, end = ev.window
            overlaps = p.oldest < end and p.newest >= start
            prob = rules["time_window"] = max(prob, 0.95) if overlaps else prob * 0.3
        if "just_said" in f.flags and p.tier == Tier.HOT:
            prob = rules["just_said"] = max(prob, 0.95)
        if p.tier == Tier.HOT and prob < 0.6:
            prob = rules["hot"] = 0.6
        fired.update(rules)
        out.append(Scored(p, prob))
    return out, sorted(fired)
