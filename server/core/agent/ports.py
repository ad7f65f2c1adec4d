"""What the agent loop needs from outside the core, besides the ledger (`server.core.ledger`)."""

from __future__ import annotations

from typing import Protocol


class TokenCount(Protocol):
    """Tokens of a text, remembered per tenant (`part`): one tenant can neither time nor evict
    another's counts."""

    def __call__(self, text: str, part: str = "") -> int: ...
