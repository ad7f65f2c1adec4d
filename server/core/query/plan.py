"""THE plan: what a Recall searches when nothing narrows it.

An unrouted Recall, the `full` routing policy, the router's confidence floor and the exploration's
shadow run all run this one plan: every non-empty pocket the filter allows but the cold tier's
(`default_pockets`), each at depth `candidates_per_channel`, except that the pockets searched by
HNSW (whose cost grows with the depth) share it in proportion to their sizes, each at least
`top_k`. The query's top k restricted to one pocket is a top k of that
pocket, so the union still holds the channel's own top k. An exact scan (or a hot pocket's
scan) costs the same at any depth, so a small pocket keeps the whole depth; the channel then
keeps only its best `candidates_per_channel` of the union, by the score ranking orders them by
(`Scorer.keep_best_vectors`), so the depth a small pocket keeps costs nothing downstream.

The cold pockets (the archive, method `cold`, priced `memory.lifecycle.cold.units_per_vector` a
vector) join the plan only when the query asks for them (`RecallQuery.include_cold`) or when the
router's safety net widens a critical query's plan to every pocket: a memory archived for its low
retention is not worth its price to every Recall. A cold pocket is scanned whole, so it keeps the
whole depth, as an exact scan does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol, TypeVar

from server.core.memory.model import PlanStep


class Pocket(Protocol):
    """What the plan needs of a pocket: its name, its live size and how it is searched."""

    @property
    def name(self) -> str: ...
    @property
    def size(self) -> int: ...
    @property
    def method(self) -> str: ...


P = TypeVar("P", bound=Pocket)


def default_pockets(pockets: Sequence[P], include_cold: bool) -> list[P]:
    """The pockets THE plan searches of `pockets`: every one but the cold tier's, unless
    `include_cold`."""
    return [p for p in pockets if include_cold or p.method != "cold"]


def full_plan(pockets: Sequence[Pocket], depth: int, top_k: int) -> list[PlanStep]:
    """The plan over `pockets` (see the module docstring), in their order."""
    live = [p for p in pockets if p.size > 0]
    graph = sum(p.size for p in live if p.method == "hnsw")
    budget = max(top_k, depth)
    return [
        PlanStep(
            p.name,
            max(top_k, math.ceil(budget * p.size / graph)) if p.method == "hnsw" else budget,
        )
        for p in live
    ]
