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

    def plan(self, q: RecallQuery, vector: Vector | None, now: float) -> RoutedPlan | None:
        """The plan to run, searched with the early stop on; None: the default plan."""
        ...

    def close(self) -> None:
        """Called when the engine closes (after its last Recall)."""
        ...
