"""What a Step is given (`StepIn`), what it answers (`StepOut`), and what it carries from phase
to phase (`Round`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from server.core.agent.action import Action
from server.core.agent.context import Recalled
from server.core.agent.failover import FailoverPlan
from server.core.agent.session import Session
from server.core.agent.tiers import Routed
from server.core.deadline import Deadline
from server.core.ledger.model import Status
from server.core.memory.acknowledged import Pending

SEARCH_MEMORY = "search_memory"
# The prefix of the idempotency keys a Step makes itself: no client key can start with it (a
# client's key is [A-Za-z0-9_.:-]), so a client's Reserve never replays a Step's charges.
OWN_KEY = "#"
SEARCH_MEMORY_TOOL = {
    "name": SEARCH_MEMORY,
    "description": "Search the user's long-term memory. Returns the most relevant memories.",
    "parameters": {
        "type": "object",
        "properties": {"query": {"type": "string", "description": "What to look for"}},
        "required": ["query"],
    },
}


@dataclass(frozen=True)
class Usage:
    model: str
    input_tokens: int
    output_tokens: int


@dataclass(frozen=True)
class ToolRun:
    tool: str
    params: dict[str, Any]
    result: str


@dataclass(frozen=True)
class StepIn:
    task_id: str
    round: int
    goal: str = ""
    input: str = ""
    input_has_image: bool = False
    previous_action: str = ""
    observation: str = ""
    observation_has_media: bool = False
    usage: tuple[Usage, ...] = ()
    tool_results: tuple[ToolRun, ...] = ()
    raw_model_output: str = ""
    key: str = ""  # the Step's idempotency key: its reported charges are keyed by it
    tools: tuple[dict[str, Any], ...] | None = None  # None: as before
    active_recall: bool | None = None  # None: as the task's earlier Steps said (auto at first)

    @property
    def parse_only(self) -> bool:
        """Whether the Step brings only the model's output: the round's second call (the
        action, parsed), with no recall and no context again."""
        return bool(self.raw_model_output) and not (
            self.observation or self.previous_action or self.input or self.tools
        )


@dataclass
class StepOut:
    status: Status
    route: Routed
    tools: list[tuple[str, str]]  # (name, compact description)
    context: str
    context_tokens: int
    context_dropped: list[str]
    memories: list[Recalled]
    action: Action | None = None
    cached_result: str | None = None
    action_error: str = ""
    retry_action: bool = False
    committed: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    search_memory_tool: str = ""
    step_cost: int = 0
    failover: FailoverPlan | None = None  # at degrade level 4
    route_micros: int = 0  # the tier router's own time
    namespace: str = ""  # the task's namespace, as the core keeps it (for the call log)


@dataclass
class Round:
    """One Step on its way through the phases: what it was given, the task's state, and what
    the phases add up (pocketd's own work, the memories to keep, the warnings)."""

    r: StepIn
    s: Session
    deadline: Deadline
    storable: bool  # memory has a text encoder: a text can be stored, a query searched
    cost: int = 0  # pocketd's own work so far, in micros (charged when the Step closes)
    warnings: list[str] = field(default_factory=list)
    writes: list[Pending] = field(default_factory=list)  # kept when the Step closes, then written
    unstored: list[str] = field(default_factory=list)  # memories memory could not store
    committed: list[str] = field(default_factory=list)  # the ids of the memories it keeps
    memories: list[Recalled] = field(default_factory=list)  # this round's recall
    query: str = ""  # what it recalled for
    paused: bool = False  # the task is paused: only what was spent is charged
    quiet: bool = False  # parse-only or paused: no recall, no context
    loop: str = ""  # why the action is a loop: one step down the ladder when the Step closes

    @property
    def ns(self) -> str:
        return self.s.namespace

    @property
    def goal_memories(self) -> list[Recalled]:
        """This round's recall when it was for the task's goal."""
        return self.memories if self.goal_recalled else []

    @property
    def goal_recalled(self) -> bool:
        """Whether this round's recall was for the task's goal."""
        return self.query == self.s.goal and not self.s.active_recall and not self.quiet
