"""What the ledger needs from outside the core: a store whose transactions are atomic."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeVar

from server.core.ledger.model import Hold, Task

T = TypeVar("T")


class LedgerTx(Protocol):
    """One transaction: what it reads is what it writes against (no other writer meanwhile)."""

    def task(self, task_id: str) -> Task | None: ...

    def put_task(self, task: Task) -> None: ...

    def hold(self, reservation_id: str) -> Hold | None: ...

    def put_hold(self, hold: Hold) -> None: ...

    def expire(self, task_id: str, now: float) -> list[Hold]:
        """Mark the task's held holds that expired by `now` as expired, and return them."""
        ...

    def release_all(self, task_id: str) -> int:
        """Release every held hold of the task; how many there were."""
        ...

    def reply(self, key: str) -> tuple[str, bytes] | None:
        """The (fingerprint, answer) recorded under an idempotency key."""
        ...

    def put_reply(self, key: str, fingerprint: str, answer: bytes) -> None: ...


class LedgerStore(Protocol):
    def run(self, work: Callable[[LedgerTx], T]) -> T:
        """Run `work` in a write transaction and return its result once that is durable. The
        store may commit several callers' work in one transaction, each in its own savepoint:
        `work` that raises has its changes undone, and its exception is raised to its caller
        alone."""
        ...

    def start(self, work: Callable[[LedgerTx], T]) -> Callable[[], T]:
        """`run`, queued now and waited for when the returned function is called (which returns
        its result or raises its exception)."""
        ...

    def close(self) -> None: ...
