"""The one scoring formula of a Recall: both channels on fixed scales, fused, with the boosts.

For candidate i, with cosine c_i, keyword score k_i in [0, 1] (BM25 over the query's reference,
clipped) and its boost flags:

    v_i     = (c_i − floor) / (ceiling − floor), clipped to [0, 1]   (0 at or below the floor)
    fused_i = (w_v·v_i + w_k·k_i), times `both_boost` if v_i > 0 and k_i > 0,
              where k_i is first times max(min(1, v_i/gate), unbacked) (gate > 0),
              then at least across·v_i if across_i,
              times (1 + when_boost) if says_when_i,
              times (1 + role_boost) if same_role_i
            + exact_boost · exact_i + time_boost · in_window_i

The scales depend only on the query and the namespace's statistics, never on the other
candidates, so a memory's score is the same whichever pockets a plan searches. The formula is
non-decreasing in every input, so the early stop's ceiling of an unsearched pocket is this same
function of the best values a memory of it could have (`server.core.query.early_stop`).

`gate`: a keyword match counts in full only where the vector channel backs it (v_i ≥ gate), and in
proportion below, keeping at least the share `unbacked` (a name or a rare word the encoder places
far from the question still counts): one incidental shared word ("team" in "the team offsite" for
"which team does he support") is a weak match, and it outranked the answer written in the other
language or in other words. An identifier the encoder cannot see still counts through `exact_boost`.

`same_role_i`: the turn is from the role the question is about (the asker's own turns for "what
did I buy", the agent's for "the name you suggested"; `server.core.memory.roles`).

`across_i`: the memory is written in the other script than the query (a Chinese question, an
English memory). The keyword channel cannot match across scripts, so there a share `across` of
the vector score stands in for the keyword score: without it a cross-lingual paraphrase
(v = 0.55: 0.275) fell below a same-language memory sharing one incidental word (v = 0.3,
k = 0.3: 0.36); with `across` 0.75 it scores 0.48. A share, not the whole: standing in with all
of it made near-topic memories in the other language outrank same-language answers, whose
keyword match is partial (the bilingual dev set's English R@1 0.25 → 0.16). The both-channels
boost stays for a real keyword match.

With the default weights (0.5, 0.5) a memory found by the vector channel alone counts at half weight
(one found by the keyword channel alone, unbacked by the vector, at `unbacked` times that), and one
found by both is boosted (seed 000 §2.3); an image query moves the weights to (0.75, 0.25) so a
screenshot that only the vector channel can find is not buried (seed 000 §4.2). This is convex-
combination fusion (Bruch et al., "An Analysis of Fusion Functions for Hybrid Retrieval", arXiv
2210.11934) with a both-channels boost.

`params` packs the constants: (floor, w_v, w_k, both_boost, exact_boost, time_boost, when_boost,
ceiling, across, role_boost, gate, unbacked). The floor and the ceiling are the encoder's: where it
puts unrelated texts, and the cosine of a memory as near as one usually gets."""

from __future__ import annotations

import numpy as np
from numba import njit

from kernels.types import BoolArray, F32Array, F64Array

FLOOR, W_VEC, W_KW, BOTH, EXACT, TIME, WHEN, CEILING, ACROSS, ROLE, GATE, UNBACKED = range(12)


@njit(cache=True, nogil=True)
def fused_scores(
    cos: F32Array,
    kw: F32Array,
    exact: BoolArray,
    in_window: BoolArray,
    says_when: BoolArray,
    across: BoolArray,
    same_role: BoolArray,
    params: F64Array,
) -> F32Array:
    """The fused score of each candidate (see the module docstring)."""
    n = cos.shape[0]
    out = np.empty(n, dtype=np.float32)
    floor = params[FLOOR]
    span = params[CEILING] - floor
    for i in range(n):
        v = 0.0
        if cos[i] > floor and span > 0.0:
            v = min((cos[i] - floor) / span, 1.0)
        k = min(max(kw[i], 0.0), 1.0)
        both = v > 0.0 and k > 0.0
        if params[GATE] > 0.0:
            k *= max(min(v / params[GATE], 1.0), params[UNBACKED])
        if across[i]:
            k = max(k, params[ACROSS] * v)
        s = params[W_VEC] * v + params[W_KW] * k
        if both:
            s *= params[BOTH]
        if says_when[i]:
            s *= 1.0 + params[WHEN]
        if same_role[i]:
            s *= 1.0 + params[ROLE]
        if exact[i]:
            s += params[EXACT]
        if in_window[i]:
            s += params[TIME]
        out[i] = s
    return out


def fused_scores_ref(
    cos: F32Array,
    kw: F32Array,
    exact: BoolArray,
    in_window: BoolArray,
    says_when: BoolArray,
    across: BoolArray,
    same_role: BoolArray,
    params: F64Array,
) -> F32Array:
    """numpy twin of `fused_scores`."""
    floor = params[FLOOR]
    c = cos.astype(np.float64)
    span = params[CEILING] - floor
    v = np.where((c > floor) & (span > 0), np.clip((c - floor) / span, 0.0, 1.0), 0.0)
    k = np.clip(kw.astype(np.float64), 0.0, 1.0)
    both = (v > 0) & (k > 0)
    if params[GATE] > 0:
        k = k * np.maximum(np.minimum(v / params[GATE], 1.0), params[UNBACKED])
    k = np.where(across, np.maximum(k, params[ACROSS] * v), k)
    s = params[W_VEC] * v + params[W_KW] * k
    s = np.where(both, s * params[BOTH], s)
    s = np.where(says_when, s * (1.0 + params[WHEN]), s)
    s = np.where(same_role, s * (1.0 + params[ROLE]), s)
    s = s + params[EXACT] * exact + params[TIME] * in_window
    out: F32Array = s.astype(np.float32)
    return out
