"""What the router needs from outside the core."""

from __future__ import annotations

from typing import Protocol

from server.core.routing.record import DecisionRecord


class DecisionSink(Protocol):
    """Where decision records go (`server.adapters.decision_log`). `write` never blocks the
    Recall that made the decision: a sink that cannot keep up drops records and counts them."""

    def write(self, rec: DecisionRecord) -> None: ...

    def close(self) -> None:
        """Write what is queued, then stop."""
        ...
