"""The query layer's port to a router: who chooses a Recall's plan when the request names none."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from server.core.memory.model import PlanStep, RecallQuery, RecallResult, Vector


@dataclass(frozen=True)
class RoutedPlan:
    """A plan a `Planner` chose, and what to tell it once the Recall has run."""

    steps: list[PlanStep]
    done: Callable[[RecallResult], None]


class Planner(Protocol):
    """Chooses a Recall's plan when the request names none: a router (server.core.routing)."""

    def routes(self, q: RecallQuery) -> bool:
        """Whether `plan` would choose `q`'s plan (False: the default plan runs), so that the
        engine encodes a text query first only when a router reads its vector."""
        ...

    def plan(self, q: RecallQuery, vector: Vector | None, now: float) -> RoutedPlan | None:
        """The plan to run, searched with the early stop on; None: the default plan. `vector`:
        the query's unit vector (None only for a query with no text or no encoder)."""
        ...

    def close(self) -> None:
        """Called when the engine closes (after its last Recall)."""
        ...
