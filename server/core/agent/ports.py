"""What the agent loop needs from outside it, besides the ledger (`server.core.ledger`): token
counts, and memory."""

from __future__ import annotations

from typing import Protocol

from server.core.deadline import Deadline
from server.core.memory.model import NewMemory, RecallQuery, RecallResult, Vector, WriteResult


class TokenCount(Protocol):
    """Tokens of a text, remembered per tenant (`part`): one tenant can neither time nor evict
    another's counts."""

    def __call__(self, text: str, part: str = "") -> int: ...


class Memory(Protocol):
    """What the agent loop uses of the memory engine (`MemoryEngine`): recall, the vectors a
    Recall encoded, and the writes of its memories."""

    def can_encode(self) -> bool: ...

    def recall(self, q: RecallQuery, deadline: Deadline | None = None) -> RecallResult: ...

    def cached_vector(self, namespace: str, text: str) -> Vector | None: ...

    def routing_vector(self, q: RecallQuery, deadline: Deadline | None = None) -> Vector | None: ...

    def encode(self, texts: list[str], deadline: Deadline | None = None) -> Vector: ...

    def remember(
        self, items: list[NewMemory], deadline: Deadline | None = None
    ) -> list[WriteResult]: ...

    def known(self, namespace: str, memory_id: str) -> bool: ...
