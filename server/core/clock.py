"""The time source of the core, injected so tests can move it."""

from __future__ import annotations

from typing import Protocol


class Clock(Protocol):
    """Seconds since the epoch."""

    def now(self) -> float: ...
