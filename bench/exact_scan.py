"""The exact scan that every approximate vector search in `bench memory` is measured against.

numpy only: `bench.chroma_baseline` imports it too, inside `.venv-bench`.

- `exact_topk`: the exact cosine top k over unit rows, optionally among the rows a mask allows
  (the same filter the approximate search was given);
- `recall_at_k`: the share of the exact top k that an approximate search returned;
- `split_queries`: the queries a setting is tuned on and the others, that it is reported on.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt


def exact_topk(
    matrix: npt.NDArray[np.float32],
    q: npt.NDArray[np.float32],
    k: int,
    allowed: npt.NDArray[np.bool_] | None = None,
) -> npt.NDArray[np.int64]:
    """Row indices of the k largest dot products (cosines, on unit rows), best first; with
    `allowed`, among the allowed rows only (fewer than k if fewer are allowed)."""
    sims = matrix @ q
    if allowed is not None:
        sims = np.where(allowed, sims, -np.inf)
        k = min(k, int(allowed.sum()))
    k = min(k, len(sims))
    if k == 0:
        return np.zeros(0, dtype=np.int64)
    idx = np.argpartition(-sims, k - 1)[:k]
    return idx[np.argsort(-sims[idx], kind="stable")].astype(np.int64)


def recall_at_k(found: Sequence[Iterable[int]], exact: Sequence[Iterable[int]]) -> float:
    """Of all the exact top-k ids, over every query, the share the search found for that query.
    `found[i]` and `exact[i]` belong to query i; the order within each does not matter."""
    if len(found) != len(exact):
        raise ValueError(f"{len(found)} results for {len(exact)} queries")
    hit = total = 0
    for got, want in zip(found, exact, strict=True):
        w = set(want)
        hit += len(w & set(got))
        total += len(w)
    return hit / total if total else 1.0


def split_queries(n: int) -> tuple[list[int], list[int]]:
    """Even-numbered queries tune a setting; odd-numbered ones report it."""
    return list(range(0, n, 2)), list(range(1, n, 2))
