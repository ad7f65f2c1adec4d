"""What the agent loop needs from outside it, besides the ledger (`server.core.ledger`): token
counts, and memory."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from server.core.deadline import Deadline
from server.core.memory.acknowledged import Pending
from server.core.memory.model import RecallQuery, RecallResult, Vector


class TokenCount(Protocol):
    """Tokens of a text, remembered per tenant (`part`): one tenant can neither time nor evict
    another's counts."""

    def __call__(self, text: str, part: str = "") -> int: ...


class Memory(Protocol):
    """What the agent loop uses of the memory engine (`MemoryEngine`): recall, the vectors a
    Recall encoded, and the intake of its acknowledged memories."""

    def can_encode(self) -> bool: ...

    def now(self) -> float:
        """The engine's clock: when a memory kept now is said."""
        ...

    def recall(
        self, q: RecallQuery, deadline: Deadline | None = None, *, settle: bool = True
    ) -> RecallResult:
        """`settle` False: without waiting for the memories acknowledged in the namespace."""
        ...

    def cached_vector(self, namespace: str, text: str) -> Vector | None: ...

    def routing_vector(self, q: RecallQuery, deadline: Deadline | None = None) -> Vector | None: ...

    def query_vectors(
        self, namespace: str, texts: list[str], deadline: Deadline | None = None
    ) -> list[Vector]: ...

    def acknowledge(self, batch: Sequence[Pending]) -> None:
        """Keep memories acknowledged under the ids a Step chose durable, and write them off
        the call (read-your-writes is the engine's)."""
        ...
