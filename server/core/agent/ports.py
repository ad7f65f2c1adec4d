"""What the ledger needs from outside the core: a store whose transactions are atomic."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Protocol

from server.core.agent.model import HeldSum, Hold, Task


class LedgerTx(Protocol):
    """One transaction: what it reads is what it writes against (no other writer meanwhile)."""

    def task(self, task_id: str) -> Task | None: ...

    def put_task(self, task: Task) -> None: ...

    def hold(self, reservation_id: str) -> Hold | None: ...

    def put_hold(self, hold: Hold) -> None: ...

    def live(self, task_id: str, now: float) -> list[HeldSum]:
        """The task's held, unexpired holds, summed by (round, tool, final)."""
        ...

    def release_all(self, task_id: str) -> int:
        """Release every held hold of the task; how many there were."""
        ...

    def reply(self, key: str) -> tuple[str, bytes] | None:
        """The (fingerprint, answer) recorded under an idempotency key."""
        ...

    def put_reply(self, key: str, fingerprint: str, answer: bytes) -> None: ...


class LedgerStore(Protocol):
    def transaction(self) -> AbstractContextManager[LedgerTx]:
        """An immediate write transaction, committed durably when the block ends without an
        exception, rolled back otherwise."""
        ...

    def close(self) -> None: ...
