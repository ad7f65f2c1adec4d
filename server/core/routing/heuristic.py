"""The heuristic policy (seed 003 §3.1, §4.2): the probability that each pocket holds what a
query needs, from the query's intent, rules over the route features and the pockets' own
statistics. It needs no training data, so it is also the cold-start policy.

Every pocket starts from its store's intent probability (`intents`: the query's vector against
example questions of the current session, the profile, summaries, the history and skills), or
from `PRIOR` when the query has no vector or the pocket serves no store (an unspecified kind);
then each rule can only move it as it says:
- `just_said` ("as I just said", "刚才"): the current session's pockets → 0.95;
- `about_me` ("what is my …", "the user's …", "我的名字"): the profile's pockets → at least 0.9;
- `identifier` (an order id, a code): the pockets holding it (BM25 statistics) → 0.95;
- `in_session` (the current session holds most of the query's terms): → at least 0.5;
- `time_window` ("last week", "上周"): bucketed pockets whose events miss the window → ×0.3.
A pocket holding a query term is not raised for it: with a big history every week holds some
term of every question. The rules that fired are returned with the scores, for the decision log
and Explain.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from server.core.memory.model import Kind, PocketStats
from server.core.routing.budget import Scored
from server.core.routing.features import QueryFeatures
from server.core.routing.intents import store_of

PRIOR = 0.3
PROFILE = (Kind.FACT, Kind.PREFERENCE)


@dataclass(frozen=True)
class Evidence:
    """What the heuristic knows of each pocket beyond its statistics, for one query."""

    term_hits: Mapping[str, Mapping[str, int]]  # pocket name → query term → documents holding it
    window: tuple[float, float] | None  # the time cue's event-time window, if any
    intents: Mapping[str, float] = field(default_factory=dict)  # intent → probability ({}: none)


@dataclass(frozen=True)
class Measures:
    """Each candidate pocket's relation to the query, computed once per decision for the
    heuristic, the model's input rows and Explain (in candidate order)."""

    cosine: list[float]  # the query vector's cosine with the centroid (0 without either)
    held: list[int]  # how many of the query's terms the pocket holds
    docs: list[int]  # its documents holding a query term, summed over the terms
    overlaps: list[float | None]  # whether its events meet the time window (None: no window
    # or no bucket)
    stores: list[str]  # the store it serves ("" for none)
    intent: list[float | None]  # its store's intent probability (None: no vector or no store)


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
    stores = [store_of(p.kind, p.tier) for p in pockets]
    for p in pockets:
        counts = [n for t, n in ev.term_hits.get(p.name, {}).items() if t in terms and n > 0]
        held.append(len(counts))
        docs.append(sum(counts))
        if ev.window is not None and p.bucket:
            start, end = ev.window
            overlaps.append(float(p.oldest < end and p.newest >= start))
        else:
            overlaps.append(None)
    intent = [ev.intents.get(s) if s else None for s in stores]
    return Measures(cos, held, docs, overlaps, stores, intent)


def heuristic(
    f: QueryFeatures,
    pockets: Sequence[PocketStats],
    ev: Evidence,
    m: Measures,
) -> tuple[list[Scored], list[str]]:
    """`m`: the pockets' measures (`measure`)."""
    fired: set[str] = set()
    out: list[Scored] = []
    n_terms = len(set(f.terms))
    any_overlap = any(o == 1.0 for o in m.overlaps)
    ident = set(f.identifiers)
    for i, p in enumerate(pockets):
        rules: dict[str, float] = {}  # rule → the probability it sets
        intent = m.intent[i]
        prob = PRIOR if intent is None else intent
        store = m.stores[i]
        if "just_said" in f.flags and store == "session":
            prob = rules["just_said"] = max(prob, 0.95)
        if "about_me" in f.flags and store == "profile":
            prob = rules["about_me"] = max(prob, 0.9)
        if ident and ident & set(ev.term_hits.get(p.name, {})):
            prob = rules["identifier"] = max(prob, 0.95)
        if store == "session" and n_terms >= 2 and m.held[i] * 2 >= n_terms:
            prob = rules["in_session"] = max(prob, 0.5)
        if any_overlap and m.overlaps[i] == 0.0:
            prob = rules["time_window"] = prob * 0.3
        fired.update(rules)
        out.append(Scored(p, prob))
    return out, sorted(fired)
