"""The `Metrics` port: what the server counts for its operators (`server.adapters.metrics`
exports it to Prometheus). The transport, the composition root and the ledger (its
reservations) report into it; nothing reads it back. Every label is of a bounded set: method
names, tenants (from the configured tokens), status codes, routing policies, the ledger's
limits; never a namespace, an id or a text."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol


class Metrics(Protocol):
    def call(self, method: str, tenant: str, code: str, seconds: float) -> None:
        """One RPC ended with `code` ("OK", "NOT_FOUND", …) after `seconds`; `tenant` is ""
        for a call no token authenticated."""
        ...

    def recall(self, tenant: str, pockets: int, cost_units: float) -> None:
        """A Recall searched `pockets` pockets (its plan's steps that ran) for `cost_units`."""
        ...

    def decision(self, asked: str, ran: str, widened: bool) -> None:
        """The router chose a plan: the policy asked for, the one whose plan ran, and whether
        the safety net widened it to the full plan."""
        ...

    def reservation(self, tenant: str, refused_by: str) -> None:
        """A ledger reservation was granted (`refused_by` ""), or refused by that limit
        ("total", "round", "rounds", "tool", "final")."""
        ...

    def gauge(self, name: str, doc: str, read: Callable[[], float]) -> None:
        """A value read when the metrics are scraped (the indexer's lag, the hot tier's size,
        the encoder's queue)."""
        ...


class NoMetrics:
    """Counts nothing: the server without a metrics endpoint, and the tests that need none."""

    def call(self, method: str, tenant: str, code: str, seconds: float) -> None:
        pass

    def recall(self, tenant: str, pockets: int, cost_units: float) -> None:
        pass

    def decision(self, asked: str, ran: str, widened: bool) -> None:
        pass

    def reservation(self, tenant: str, refused_by: str) -> None:
        pass

    def gauge(self, name: str, doc: str, read: Callable[[], float]) -> None:
        pass
