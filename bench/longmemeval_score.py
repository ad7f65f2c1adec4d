"""Turn-level recall_any@k and recall_all@k, as LongMemEval scores retrieval.

Per question, with E its evidence turns and R_k the top k turns of a ranking:
recall_any@k = 1 if some turn of E is in R_k, recall_all@k = 1 if every turn of E is (k = 5,
10). A figure is the mean over questions, per question type and over all of them ("overall"),
with "n" the number of questions it covers. A question with no evidence turn is never scored
(LongMemEval's own code would give it recall_all 1): the loader leaves such questions out.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping

from bench.quality_data import K

METRICS = tuple(f"{m}@{k}" for m in ("any", "all") for k in K)  # any@5 any@10 all@5 all@10
OVERALL = "overall"
Hits = dict[str, int]  # metric → 0 or 1, for one question
Figures = dict[str, dict[str, float]]  # type or "overall" → metric (and "n") → value


def hits(ranked: list[str], evidence: Iterable[str]) -> Hits:
    """One question's any/all at each k: `ranked` best first (repeats count once)."""
    wanted = set(evidence)
    if not wanted:
        raise ValueError("a question without evidence turns cannot be scored")
    out: Hits = {}
    for k in K:
        found = len(wanted & set(ranked[:k]))
        out[f"any@{k}"] = int(found > 0)
        out[f"all@{k}"] = int(found == len(wanted))
    return out


def figures(per_question: Mapping[str, Hits], type_of: Mapping[str, str]) -> Figures:
    """Means per type (`type_of`: question → type) and overall, each with its "n"."""
    groups: dict[str, list[Hits]] = defaultdict(list)
    for q, h in per_question.items():
        groups[type_of[q]].append(h)
        groups[OVERALL].append(h)
    return {
        g: {"n": float(len(rows)), **{m: sum(r[m] for r in rows) / len(rows) for m in METRICS}}
        for g, rows in groups.items()
    }
