"""A task's loop state, held in memory per task (`agent.sessions` of them, per tenant): the goal,
where the task lives, its tools' budgets, the rounds noted, the stored observations, the tools
listed and the actions parsed. The money is in the durable ledger; after a restart a task goes
on with what its next Steps report.

`Session.mark`/`restore` put back what a failed Step changed, so its retry notes the round
again and commits its key events again. `Sessions` finds a task's state, or makes it on the
task's first Step (the first after a restart) from what the ledger says of the task."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from server.core.agent.action import Action
from server.core.agent.context import Recalled, Turn
from server.core.errors import FailedPreconditionError, Location
from server.core.ledger.model import Charged, ToolBudget
from server.core.memo import PartitionedLRU
from server.core.tenancy import tenant_of


@dataclass
class Opening:
    """A task whose first Step is between its ledger read and keeping its state: how many
    such Steps, and how many times the task was closed meanwhile."""

    steps: int = 0
    closes: int = 0


@dataclass
class Session:
    goal: str
    namespace: str
    session_id: str
    tool_budgets: dict[str, ToolBudget]
    turns: list[Turn] = field(default_factory=list)
    stored: dict[int, str] = field(default_factory=dict)
    tools: list[tuple[str, str]] = field(default_factory=list)  # (name, compact description)
    actions: dict[int, Action] = field(default_factory=dict)  # round → its action
    noted: set[int] = field(default_factory=set)  # rounds whose observation is noted
    refused: dict[int, list[str]] = field(default_factory=dict)  # round → refused raw outputs
    previous_failed: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)
    active_recall: bool = False
    inputs: dict[int, str] = field(default_factory=dict)  # round → what the user said
    state: str = "open"  # the task's state at the last Step ("paused": no recall is started)
    floor: int = 0  # the oldest round kept: older ones are gone (`trim`), as if noted
    outcomes: list[Recalled] | None = None  # the earlier tasks' (None: not looked up yet)
    # This task's inputs the profile reads, each with whether it is a believed preference.
    said: list[tuple[Recalled, bool]] = field(default_factory=list)
    finished: set[int] = field(default_factory=set)  # rounds whose finish kept the outcome

    def trim(self, round_: int, window: int) -> None:
        """Keep the last `window` rounds before `round_`: the state stays bounded however long
        the task runs (a Step of an older round notes and commits nothing)."""
        floor = round_ - window
        if floor <= self.floor:
            return
        self.floor = floor
        self.turns = [t for t in self.turns if t.round >= floor]
        for d in (self.stored, self.actions, self.refused, self.inputs):
            for k in [k for k in d if k < floor]:
                del d[k]
        self.finished = {n for n in self.finished if n >= floor}
        self.noted = {n for n in self.noted if n >= floor}

    def fresh(self, round_: int) -> bool:
        """Whether `round_` is within the kept window."""
        return round_ >= self.floor

    def mark(self) -> tuple[Any, ...]:
        """What a Step changes, to put back if it fails (so its retry notes the round again,
        and commits its key events again)."""
        return (
            len(self.turns), set(self.noted), dict(self.inputs), dict(self.stored),
            dict(self.actions), self.previous_failed, list(self.said), set(self.finished),
        )  # fmt: skip

    def restore(self, m: tuple[Any, ...]) -> None:
        n, self.noted, self.inputs, self.stored, self.actions, self.previous_failed = m[:6]
        self.said, self.finished = m[6:]
        del self.turns[n:]


class Sessions:
    """The tasks' loop states, per tenant (one tenant's tasks never evict another's)."""

    def __init__(self, size: int) -> None:
        self._held: PartitionedLRU[str, Session] = PartitionedLRU(max(size, 1))
        self._lock = threading.Lock()
        # Tasks whose first Step is reading the ledger: a close meanwhile is counted there.
        self._opening: dict[str, Opening] = {}

    def __len__(self) -> int:
        return len(self._held)

    def values(self, part: str) -> list[Session]:
        """The states held of a tenant's tasks."""
        with self._lock:
            return self._held.values(part)

    def opening(self) -> int:
        """How many tasks have a first Step between its ledger read and keeping its state."""
        with self._lock:
            return len(self._opening)

    def get(self, task_id: str) -> Session | None:
        with self._lock:
            return self._held.get(tenant_of(task_id), task_id)

    def open(self, task_id: str, goal: str, read: Callable[[], Charged]) -> tuple[Session, Charged]:
        """The task's loop state, made on the first Step of a task (or the first after a
        restart) from the Step's opening transaction (`read`: NOT_FOUND, closed, or where the
        task lives and its tools' budgets, which never change), and that transaction's answer.
        It keeps the state only if the task was not closed since that transaction (`closed` ran
        before the state was kept, and a closed task's state would stay until `agent.sessions`
        newer tasks push it out); otherwise the Step is refused as the ledger refuses a closed
        task (`closed` runs only once the ledger has closed it)."""
        part, tid = tenant_of(task_id), task_id
        with self._lock:
            opening = self._opening.setdefault(tid, Opening())
            opening.steps += 1
        try:
            task = read()  # NOT_FOUND, or closed: refused
            s = Session(goal, task.namespace, task.session_id, task.budget.tools)
            with self._lock:  # (another first Step of the task may have made one meanwhile)
                held = self._held.get(part, tid)
                if held is not None:
                    return held, task
                if opening.closes:
                    raise FailedPreconditionError(
                        f"task {tid!r} is closed", "TASK_CLOSED", Location("task_id")
                    )
                self._held.put(part, tid, s)
                return s, task
        finally:
            with self._lock:
                opening.steps -= 1
                if opening.steps == 0:
                    del self._opening[tid]

    def closed(self, task_id: str) -> None:
        """The task was closed: its state goes at once."""
        with self._lock:
            self._held.pop(tenant_of(task_id), task_id)
            opening = self._opening.get(task_id)
            if opening is not None:
                opening.closes += 1
