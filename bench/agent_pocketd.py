"""The pocketd loop of `bench agent`: the stand-in called on Step's context, against a real
`pocketd serve`.

Each round is one Step round: the first call reports the last round (its action, its
observation, the model calls' usage) with the user's new input and gets the tier, the allowed
tools and the context; the model is called on that context, at `plan.model`'s price; a second
call (`raw_output`) has the action checked. When the stand-in reads a `[full text: <id>]`
pointer, the loop Gets that memory (`Client.get`) and calls the model once more with the full
text appended to the same context (and has that action checked too); both calls are reported
as the round's usage.

The prompt is the system prompt, the allowed tools as Step lists them (`plan.tools`: compact
one-line descriptions, the same lines every loop sends, `TOOL_TEXT`), and `plan.context`.
pocketd's own work (recall, storage: the bill's memory spend) is added to its cost.

What favours whom: Step's latency is not priced, only reported (p50/p99 per round). The Get
itself costs nothing but the extra model call.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import grpc

from bench.agent_data import Round, Session
from bench.agent_loops import Call, head
from bench.agent_model import GET_TOOL, OUTPUT_TOKENS, TOOLS
from pocketd import Client
from pocketd.tasks import Task
from pocketd.v1 import ledger_service_pb2 as lpb

GET_TRIES = 50  # a stored observation is written off the call: Get may say NOT_FOUND briefly


@dataclass
class Latency:
    """Step's time: each call, each round's calls together, each round's first call."""

    call_s: list[float] = field(default_factory=list)
    round_s: list[float] = field(default_factory=list)
    context_s: list[float] = field(default_factory=list)


class Pocketd:
    name = "pocketd"
    tools = frozenset(t["name"] for t in [*TOOLS, GET_TOOL])

    def __init__(self, client: Client, system: str, latency: Latency, model_s: float) -> None:
        self._c = client
        self._system = system
        self.latency = latency
        self._model_s = model_s
        self._task: Task | None = None
        self._ns = ""
        self._n = 0
        self._round = 0.0
        self._action, self._obs, self._media = "", "", False
        self._used: list[tuple[str, int, int]] = []

    def open(self, s: Session) -> None:
        budget = lpb.TaskBudget(total_micros=10**9, emergency_ratio=0.0)
        task_id = f"{s.user}-{s.index}-{uuid.uuid4().hex[:6]}"
        self._task = self._c.task(
            task_id, budget, namespace=s.user, goal=s.goal, session_id=f"s{s.index}"
        )
        self._task.__enter__()
        self._ns, self._n, self._round = s.user, 0, 0.0
        self._action, self._obs, self._media, self._used = "", "", False, []

    def _timed(self, **fields: Any) -> Any:
        assert self._task is not None
        t0 = time.perf_counter()
        out = self._task.step(self._n, **fields)
        dt = time.perf_counter() - t0
        self.latency.call_s.append(dt)
        self._round += dt
        return out

    def _end_round(self) -> None:
        if self._n:
            self.latency.round_s.append(self._round)
        self._round = 0.0

    def prompt(self, r: Round, fresh: bool) -> Call:
        self._end_round()
        self._n += 1
        plan = self._timed(
            input=r.text if fresh else "", image=r.image and fresh, action=self._action,
            observation=self._obs, media=self._media, usage=tuple(self._used),
            tools=[*TOOLS, GET_TOOL] if self._n == 1 else None,
        )  # fmt: skip
        self.latency.context_s.append(self._round)
        self._used = []
        tools = "\n".join(t.description for t in plan.tools)
        fixed = head(self._system, tools)
        return Call(f"{fixed}{plan.context}", plan.model, fixed, tools)

    def check(self, action: dict[str, Any]) -> None:
        time.sleep(self._model_s)  # the model's own latency, if asked (0: back to back)
        checked = self._timed(raw_output=json.dumps(action))
        assert not checked.action_error, checked.action_error  # every action is valid

    def follow(self, memory_id: str) -> str:
        for _ in range(GET_TRIES):
            try:
                return self._c.get(self._ns, memory_id).text
            except grpc.RpcError as e:
                if e.code() != grpc.StatusCode.NOT_FOUND:  # type: ignore[attr-defined]
                    raise
                time.sleep(0.02)
        return f"(memory {memory_id} not found)"

    def record(self, r: Round, fresh: bool, action: dict[str, Any], observation: str) -> None:
        self._action, self._obs = json.dumps(action), observation
        self._media = r.image and action.get("tool") == r.tool

    def usage(self, model: str, tokens: int) -> None:
        self._used.append((model, tokens, OUTPUT_TOKENS))

    def close(self) -> int:
        """Close the task; pocketd's own charges (memory spend), in micros."""
        self._end_round()
        self._n = 0
        assert self._task is not None
        self._task.__exit__(None, None, None)
        bill = self._task.bill
        if bill is None:
            return 0
        return sum(k.spent_micros for k in bill.by_kind if k.kind == lpb.SPEND_KIND_MEMORY)
