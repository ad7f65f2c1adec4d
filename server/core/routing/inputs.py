"""A learned policy's input: one row per (query, candidate pocket), scored independently.

A row is the query's part (`QueryFeatures.vector`: the vector prefix, the lexical flags, the
length and modality) followed by the pocket's part (`POCKET_FEATURES`). One model serves pockets
of any namespace, of any number, because it scores a pocket from what it is and how it relates to
the query, not from its name.

The layout is versioned (`LAYOUT`): a model trained on another layout, or on another
`prefix_dim`, is refused when it is loaded, not silently fed misplaced values. A refit of the
heuristic's store model changes the `heuristic` column's meaning, so it bumps the layout too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from server.core.memory.model import Kind, PocketStats, Tier
from server.core.routing.features import FLAGS, QueryFeatures
from server.core.routing.heuristic import Measures

LAYOUT = 5  # 5: the heuristic column reads the intents' readout
DAY = 86_400.0
KINDS = tuple(k for k in Kind if k != Kind.UNSPECIFIED)
POCKET_FEATURES = (
    "log_size",
    "hot",
    "warm",
    "cold",
    "hnsw",
    "coarse",
    *(f"kind_{k.name.lower()}" for k in KINDS),
    "bucket",
    "radius",
    # the ones above depend on the pocket alone; those below on the query too
    "centroid_cosine",
    "term_share",
    "log_term_docs",
    "log_age_newest",
    "log_age_oldest",
    "window_overlaps",
    "window_misses",
    "cost_share",
    "heuristic",
    "intent",
    "no_intent",
)


STATIC = POCKET_FEATURES.index("centroid_cosine")
STATIC_CACHE = 16_384
_STATIC: dict[int, tuple[PocketStats, list[float]]] = {}


def query_width(prefix_dim: int) -> int:
    return prefix_dim + len(FLAGS) + 2


def input_width(prefix_dim: int) -> int:
    return query_width(prefix_dim) + len(POCKET_FEATURES)


def pocket_inputs(
    f: QueryFeatures,
    pockets: Sequence[PocketStats],
    m: Measures,
    now: float,
    heuristic: Sequence[float],
    costs: Sequence[float],
) -> npt.NDArray[np.float32]:
    """The (len(pockets), input_width) matrix; `heuristic` and `costs` are each pocket's
    heuristic probability and full-depth cost."""
    q = f.vector()
    width = len(q)
    n_terms = len(set(f.terms))
    out = np.empty((len(pockets), width + len(POCKET_FEATURES)), np.float32)
    out[:, :width] = q
    out[:, width : width + STATIC] = [_static(p) for p in pockets]
    total = sum(costs) or 1.0
    for i, p in enumerate(pockets):
        overlap = m.overlaps[i]
        out[i, width + STATIC :] = (
            m.cosine[i],
            m.held[i] / n_terms if n_terms else 0.0,
            math.log1p(m.docs[i]) / 10.0,
            math.log1p(max(now - p.newest, 0.0) / DAY) / 8.0,
            math.log1p(max(now - p.oldest, 0.0) / DAY) / 8.0,
            float(overlap == 1.0),
            float(overlap == 0.0),
            costs[i] / total,
            heuristic[i],
            0.0 if m.intent[i] is None else m.intent[i],
            float(m.intent[i] is None),
        )
    return out


def _static(p: PocketStats) -> list[float]:
    """The features of a pocket alone (`POCKET_FEATURES[:STATIC]`), cached by the statistics
    object, which the engine keeps while a warm pocket is unchanged."""
    hit = _STATIC.get(id(p))
    if hit is not None and hit[0] is p:
        return hit[1]
    row = [
        math.log2(p.size + 1) / 24.0,
        float(p.tier == Tier.HOT),
        float(p.tier == Tier.WARM),
        float(p.tier == Tier.COLD),
        float(p.method == "hnsw"),
        float(p.method == "coarse"),
        *(float(p.kind == k) for k in KINDS),
        float(bool(p.bucket)),
        p.radius,
    ]
    if p.tier == Tier.HOT:  # a hot pocket's statistics are new on every decision
        return row
    if len(_STATIC) >= STATIC_CACHE:
        _STATIC.clear()
    _STATIC[id(p)] = (p, row)  # the object is held, so its id is not reused meanwhile
    return row
