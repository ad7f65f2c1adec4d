"""The heuristic policy (seed 003 §3.1, §4.2): the probability that each pocket holds what a
query needs, from the question's form and meaning and the pockets' own statistics. It needs no
training data from the namespace, so it is also the cold-start policy.

A pocket of one of the four stores of a user's memory (`intents.store_of`: the current session,
the profile, summaries, the history) gets its store's probability from a small logistic model
(`STORE_MODEL`) over what the router knows before searching:
- the query's vector read by the intents' example questions (`intents`, the readout): its
  store's readout, and that readout and small talk's relative to the best intent's;
- the question's form, by cue families in English and Chinese (`features`): the gist of past
  conversations (`summary`), an exact detail (`detail`), a pointer back to a past conversation
  (`past`), to the current one (`current`, `just_said`), a question about the user
  (`about_me`), and a time window;
- whether the store holds the query's terms (BM25 statistics: the largest share of the query's
  terms one of its pockets holds), so that "remind me which restaurant we settled on" finds the
  current session that mentions it.
The weights were fitted on `bench router`'s tune half (whole templates; the report half is held
out) by `python -m bench router_fit`, and are fixed here; without a vector the readouts
count as zero. Skills get their intent's probability, other pockets `PRIOR`. Then each rule
can only move a pocket as it says:
- `just_said` ("as I just said", "刚才"): the current session's pockets → 0.95 (strong);
- `identifier` (an order id, a code): the pockets holding it → 0.95 (strong);
- `time_window` ("last week", "上周"): bucketed pockets whose events miss the window → ×0.1.
The rules that fired are returned with the scores, for the decision log and Explain.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from server.core.memory.model import PocketStats
from server.core.routing.budget import Scored
from server.core.routing.features import QueryFeatures
from server.core.routing.intents import store_of

PRIOR = 0.3
# The store model's inputs, in order, and each store's weights: `python -m bench router_fit`
# (bench router's tune half, seed 0; see the module docstring) prints them.
STORE_INPUTS = (
    "bias",
    "readout_to_best",
    "readout",
    "term_share",
    "holds_a_term",
    "summary",
    "detail",
    "past",
    "current",
    "about_me",
    "time_window",
    "small_talk_to_best",  # small talk's readout less the best intent's
)
STORE_MODEL: dict[str, tuple[float, ...]] = {
    "session": (-2.33, 0.49, -1.04, 1.37, 1.33, -1.90, 0.09, 0.02, 3.06, 0.69, -0.43, -0.19),
    "profile": (-2.23, 1.05, 0.94, 0.42, 1.24, -0.18, -0.26, -0.46, -0.33, 3.13, -0.09, -0.96),
    "summary": (-2.26, 1.13, 1.16, 0.36, 0.42, 3.45, 0.30, 0.58, -1.75, 0.17, -0.04, -0.11),
    "history": (-1.96, 1.50, 1.26, 0.68, 0.26, 0.55, 1.03, 1.72, 0.14, -2.05, -0.11, 0.25),
}


@dataclass(frozen=True)
class Evidence:
    """What the heuristic knows of each pocket beyond its statistics, for one query."""

    term_hits: Mapping[str, Mapping[str, int]]  # pocket name → query term → documents holding it
    window: tuple[float, float] | None  # the time cue's event-time window, if any
    intents: Mapping[str, float] = field(default_factory=dict)  # intent → probability ({}: none)
    readout: Mapping[str, float] = field(default_factory=dict)  # intent → the examples' readout


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


def store_inputs(f: QueryFeatures, ev: Evidence, m: Measures) -> dict[str, tuple[float, ...]]:
    """Each candidate store's input row of `STORE_MODEL` (`STORE_INPUTS`, in order)."""
    reads = ev.readout
    best = max(reads.values(), default=0.0)
    n_terms = len(set(f.terms))
    share: dict[str, float] = {}
    for store, count in zip(m.stores, m.held, strict=True):
        if store in STORE_MODEL:
            share[store] = max(share.get(store, 0.0), count / n_terms if n_terms else 0.0)
    flags = f.flags
    form = (
        float("summary" in flags),
        float("detail" in flags),
        float("past" in flags),
        float("current" in flags or "just_said" in flags),
        float("about_me" in flags),
        float(ev.window is not None),
        reads["none"] - best if "none" in reads else 0.0,
    )
    out: dict[str, tuple[float, ...]] = {}
    for store, held in share.items():
        read = store in reads  # a store with no examples (or no vector) is not read
        r = reads[store] if read else 0.0
        out[store] = (1.0, r - best if read else 0.0, r, held, float(held > 0), *form)
    return out


def store_probabilities(f: QueryFeatures, ev: Evidence, m: Measures) -> dict[str, float]:
    """Each candidate store's probability under `STORE_MODEL`."""
    out = {}
    for store, x in store_inputs(f, ev, m).items():
        z = sum(w * v for w, v in zip(STORE_MODEL[store], x, strict=True))
        out[store] = 1.0 / (1.0 + math.exp(-z))
    return out


def heuristic(
    f: QueryFeatures,
    pockets: Sequence[PocketStats],
    ev: Evidence,
    m: Measures,
) -> tuple[list[Scored], list[str]]:
    """`m`: the pockets' measures (`measure`)."""
    fired: set[str] = set()
    out: list[Scored] = []
    any_overlap = any(o == 1.0 for o in m.overlaps)
    ident = set(f.identifiers)
    stores = store_probabilities(f, ev, m)
    for i, p in enumerate(pockets):
        rules: dict[str, float] = {}  # rule → the probability it sets
        store = m.stores[i]
        intent = m.intent[i]
        prob = stores.get(store, PRIOR if intent is None else intent)
        if "just_said" in f.flags and store == "session":
            prob = rules["just_said"] = max(prob, 0.95)
        if ident and ident & set(ev.term_hits.get(p.name, {})):
            prob = rules["identifier"] = max(prob, 0.95)
        if any_overlap and m.overlaps[i] == 0.0:
            prob = rules["time_window"] = prob * 0.1
        fired.update(rules)
        out.append(Scored(p, prob))
    return out, sorted(fired)
