"""The two bounds of `bench agent`: what a loop scores when handed exactly what the task needs
(the oracle), and when handed nothing but the task and the user's current message (trivial).

Both send the same head (system prompt and tool lines) as every loop, at the baselines' models.
- **oracle**: the goal, the facts the task needs once they exist, and the user's current
  message: the line (or sentence) of the tool output that names the ticket's fix, from the
  round that returned it; the confirmation of its own applied fix; and at the closing round the
  earlier ticket's fix (as the record of having applied it, so that "the ticket from last time"
  resolves to it) and the current contact preference. Nothing else: no history, no distractors.
  Its completion should be 1.00 and its tokens the least any loop can send; a bench whose other
  rows come near it has little left to measure.
- **trivial**: the goal and the user's current message, in every call. It never sees a tool
  output, so it cannot find a fix; if it scored near the others, the workload would be too
  easy.
"""

from __future__ import annotations

from typing import Any

from bench.agent_data import Round, Session
from bench.agent_loops import Call, Plain, segments
from bench.agent_model import APPLY_FIX


class Trivial(Plain):
    """The goal and the user's current message, nothing else."""

    def __init__(self, system: str) -> None:
        super().__init__("trivial", system)
        self._goal = ""

    def open(self, s: Session) -> None:
        self._goal = s.goal

    def prompt(self, r: Round, fresh: bool) -> Call:
        return self.call([f"Goal: {self._goal}", f"User: {r.text}"], r, fresh)

    def record(self, r: Round, fresh: bool, action: dict[str, Any], observation: str) -> None:
        pass


class Oracle(Plain):
    """The goal, exactly the needed facts found so far, and the user's current message."""

    def __init__(self, system: str) -> None:
        super().__init__("oracle", system)
        self._s: Session | None = None
        self.facts: list[str] = []

    def open(self, s: Session) -> None:
        self._s, self.facts = s, []

    def _closing(self) -> list[str]:
        s = self._s
        assert s is not None
        earlier = (
            [f"Applied {s.earlier_fix} to ticket {s.earlier_ticket}."] if s.earlier_ticket else []
        )
        return [*earlier, f"Contact preference: {s.channel}, code {s.preference}."]

    def prompt(self, r: Round, fresh: bool) -> Call:
        assert self._s is not None
        extra = self._closing() if r.closing else []
        return self.call(
            [f"Goal: {self._s.goal}", *self.facts, *extra, f"User: {r.text}"], r, fresh
        )

    def record(self, r: Round, fresh: bool, action: dict[str, Any], observation: str) -> None:
        s = self._s
        assert s is not None
        if action.get("tool") == APPLY_FIX:
            self.facts.append(observation)
        elif action.get("tool") == r.tool and r.output.fix_at:
            self.facts += [x for x in segments(observation) if s.ticket in x and s.fix in x]
