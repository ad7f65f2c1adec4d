"""What the router needs from outside the core."""

from __future__ import annotations

from typing import Protocol

import numpy as np
import numpy.typing as npt

from server.core.routing.record import DecisionRecord


class DecisionSink(Protocol):
    """Where decision records go (`server.adapters.decision_log`). `write` never blocks the
    Recall that made the decision: a sink that cannot keep up drops records and counts them."""

    def write(self, rec: DecisionRecord) -> None: ...

    def close(self) -> None:
        """Write what is queued, then stop."""
        ...


class PocketModel(Protocol):
    """A trained pocket scorer (`server.adapters.onnx_policy`): the learned policy's model."""

    @property
    def version(self) -> str:
        """Which installed model this is (for the decision log and Explain)."""
        ...

    def score(self, rows: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """The probability that each row's pocket is needed, shape (rows,)."""
        ...


class ModelSource(Protocol):
    """The installed models (`server.adapters.model_store`), reloaded when a new one lands."""

    def model(self, namespace: str) -> PocketModel | None:
        """The namespace's own model, else the global one, else None (cold start)."""
        ...

    def close(self) -> None: ...
