"""The lifecycle's parts as the engine holds them (built by the composition root)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from server.core.memory.lifecycle.reconcile import Reconciler
from server.core.memory.lifecycle.run import LifecycleSchedule, Maintainer
from server.core.memory.lifecycle.session_end import SessionEnder
from server.core.memory.model import Record
from server.core.memory.ports import HotSessions
from server.core.memory.state.sessions import hot_turns


@dataclass(frozen=True)
class Lifecycle:
    sessions: HotSessions
    ender: SessionEnder
    reconciler: Reconciler
    maintainer: Maintainer
    schedule: LifecycleSchedule

    def start(self, hot: Iterable[Record]) -> None:
        """Load the hot tier's session memory from the store's hot records (the truth), finish
        a maintenance run a crash interrupted, and start the schedule."""
        self.sessions.load(hot_turns(hot))
        self.maintainer.resume()
        self.schedule.start()

    def stop(self) -> None:
        self.schedule.stop()
        self.sessions.close()
