"""`Task`: an agent task's budget, as a few lines of Python around `LedgerService`.

    from pocketd import Client
    with Client() as c, c.task("ticket-4411", budget, namespace="alice") as t:
        with t.spend("model_input_tokens", 1200) as s:  # reserve; commit on exit
            s.actual = call_the_model(...)               # what it really cost
        print(t.status().degrade_level)
    # leaving the block closes the task; t.bill is its final bill

Every mutating call gets a fresh idempotency key and is retried with that same key on
UNAVAILABLE or DEADLINE_EXCEEDED, so a retry never charges twice. A refused reservation raises
`grpc.RpcError` with RESOURCE_EXHAUSTED and the limit in its QuotaFailure.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from types import TracebackType
from typing import Any, TypedDict, TypeVar, Unpack

import grpc

from pocketd.v1 import agent_service_pb2 as apb
from pocketd.v1 import agent_service_pb2_grpc as apb_grpc
from pocketd.v1 import ledger_service_pb2 as lpb
from pocketd.v1 import ledger_service_pb2_grpc as lpb_grpc

T = TypeVar("T")
RETRIED = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
KINDS = {
    "model_input_tokens": lpb.SPEND_KIND_MODEL_INPUT_TOKENS,
    "model_output_tokens": lpb.SPEND_KIND_MODEL_OUTPUT_TOKENS,
    "tool_call": lpb.SPEND_KIND_TOOL_CALL,
    "memory": lpb.SPEND_KIND_MEMORY,
}


class Spend:
    """One reservation: set `actual` before the block ends (default: the estimate)."""

    def __init__(self, reservation: lpb.Reservation) -> None:
        self.reservation = reservation
        self.actual: int = reservation.amount_micros


class StepFields(TypedDict, total=False):
    """`Task.step`'s keywords: this round's input (and whether it carries an image), the last
    action and its observation (and whether that brought a new medium), the model calls'
    usage as (model, input tokens, output tokens), the tool calls run as (tool, params,
    result), the model's raw output to parse, the tool schemas when new, and the recall mode
    (True: active, False: auto, None: as before)."""

    input: str
    image: bool
    action: str
    observation: str
    media: bool
    usage: tuple[tuple[str, int, int], ...]
    tool_results: tuple[tuple[str, dict[str, Any], str], ...]
    raw_output: str
    tools: list[dict[str, Any]] | None
    active_recall: bool | None


class _TaskBase:
    """What the sync and async tasks share: the task's identity, its round, and the requests."""

    def __init__(
        self,
        channel: grpc.Channel | grpc.aio.Channel,
        task_id: str,
        budget: lpb.TaskBudget,
        namespace: str,
        session_id: str = "",
        timeout: float = 5.0,
        attempts: int = 3,
        goal: str = "",
    ) -> None:
        """`channel`: a sync channel for `Task`, an asyncio one for `AsyncTask`."""
        self._stub = lpb_grpc.LedgerServiceStub(channel)  # type: ignore[no-untyped-call]
        self._agent = apb_grpc.AgentServiceStub(channel)  # type: ignore[no-untyped-call]
        self.task_id = task_id
        self.goal = goal
        self.round = 1
        self.bill: lpb.TaskBill | None = None
        self._timeout = timeout
        self._attempts = attempts
        self._open = lpb.OpenTaskRequest(
            task_id=task_id, namespace=namespace, session_id=session_id, budget=budget
        )

    def next_round(self) -> int:
        self.round += 1
        return self.round

    def _close_request(self) -> lpb.CloseTaskRequest:
        return lpb.CloseTaskRequest(task_id=self.task_id, idempotency_key=_key())

    def _reserve_request(
        self, kind: str, amount: int, tool: str, final: bool, ttl: int
    ) -> lpb.ReserveRequest:
        if kind not in KINDS:
            raise ValueError(f"kind {kind!r}: expected one of {sorted(KINDS)}")
        return lpb.ReserveRequest(
            task_id=self.task_id, round=self.round, kind=KINDS[kind], estimate_micros=amount,
            tool=tool, final=final, ttl_seconds=ttl, idempotency_key=_key(),
        )  # fmt: skip

    def _commit_request(self, reservation: lpb.Reservation, actual: int) -> lpb.CommitRequest:
        return lpb.CommitRequest(
            task_id=self.task_id, reservation_id=reservation.reservation_id,
            actual_micros=actual, idempotency_key=_key(),
        )  # fmt: skip

    def _release_request(self, reservation: lpb.Reservation) -> lpb.ReleaseRequest:
        return lpb.ReleaseRequest(
            task_id=self.task_id, reservation_id=reservation.reservation_id,
            idempotency_key=_key(),
        )  # fmt: skip

    def _status_request(self) -> lpb.TaskStatusRequest:
        return lpb.TaskStatusRequest(task_id=self.task_id)

    def _raise_request(self, add_micros: int) -> lpb.RaiseBudgetRequest:
        return lpb.RaiseBudgetRequest(
            task_id=self.task_id, add_total_micros=add_micros, idempotency_key=_key()
        )

    def _step_request(self, round: int, f: StepFields) -> apb.StepRequest:
        self.round = max(self.round, round)
        active = f.get("active_recall")
        return apb.StepRequest(
            task_id=self.task_id, round=round, goal=self.goal,
            input=f.get("input", ""), input_has_image=f.get("image", False),
            previous_action_json=f.get("action", ""), observation=f.get("observation", ""),
            observation_has_media=f.get("media", False),
            usage=[
                apb.ModelUsage(model=m, input_tokens=i, output_tokens=o)
                for m, i, o in f.get("usage", ())
            ],
            tool_results=[
                apb.ToolResult(tool=t, params_json=json.dumps(p), result=r)
                for t, p, r in f.get("tool_results", ())
            ],
            raw_model_output=f.get("raw_output", ""),
            tools_json=[json.dumps(t) for t in f.get("tools") or []],
            idempotency_key=_key(),
            recall_mode=apb.RECALL_MODE_UNSPECIFIED
            if active is None
            else apb.RECALL_MODE_ACTIVE
            if active
            else apb.RECALL_MODE_AUTO,
        )  # fmt: skip

    def _retryable(self, e: grpc.RpcError, attempt: int) -> bool:
        return e.code() in RETRIED and attempt < self._attempts  # type: ignore[attr-defined]


class Task(_TaskBase):
    def __enter__(self) -> Task:
        self._retry(lambda: self._stub.OpenTask(self._open, timeout=self._timeout))
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        req = self._close_request()
        self.bill = self._retry(lambda: self._stub.CloseTask(req, timeout=self._timeout))

    def reserve(
        self, kind: str, amount: int, tool: str = "", final: bool = False, ttl: int = 0
    ) -> lpb.Reservation:
        req = self._reserve_request(kind, amount, tool, final, ttl)
        out: lpb.Reservation = self._retry(lambda: self._stub.Reserve(req, timeout=self._timeout))
        return out

    def commit(self, reservation: lpb.Reservation, actual: int) -> lpb.TaskStatus:
        req = self._commit_request(reservation, actual)
        out: lpb.TaskStatus = self._retry(lambda: self._stub.Commit(req, timeout=self._timeout))
        return out

    def release(self, reservation: lpb.Reservation) -> lpb.TaskStatus:
        req = self._release_request(reservation)
        out: lpb.TaskStatus = self._retry(lambda: self._stub.Release(req, timeout=self._timeout))
        return out

    @contextmanager
    def spend(self, kind: str, estimate: int, **options: Any) -> Iterator[Spend]:
        """Reserve `estimate`; commit `Spend.actual` when the block ends, or release the hold
        if it raises."""
        s = Spend(self.reserve(kind, estimate, **options))
        try:
            yield s
        except BaseException:
            self.release(s.reservation)
            raise
        self.commit(s.reservation, s.actual)

    def status(self) -> lpb.TaskStatus:
        req = self._status_request()
        out: lpb.TaskStatus = self._retry(lambda: self._stub.Status(req, timeout=self._timeout))
        return out

    def raise_budget(self, add_micros: int) -> lpb.TaskStatus:
        req = self._raise_request(add_micros)
        out: lpb.TaskStatus = self._retry(
            lambda: self._stub.RaiseBudget(req, timeout=self._timeout)
        )
        return out

    def step(self, round: int, **fields: Unpack[StepFields]) -> apb.StepResponse:
        """`AgentService.Step` for `round`. `usage` is (model, input tokens, output tokens) per
        model call, `tool_results` (tool, params, result). A round's second call, with only
        `raw_output`, parses the model's answer into the action. At degrade level 4 the answer
        carries `failover` (the partial result; under best_memory_answer the best memory)."""
        req = self._step_request(round, fields)
        out: apb.StepResponse = self._retry(lambda: self._agent.Step(req, timeout=self._timeout))
        return out

    def _retry(self, call: Callable[[], T]) -> T:
        """`call` (whose request holds its idempotency key), again on a retryable error."""
        attempt = 1
        while True:
            try:
                return call()
            except grpc.RpcError as e:
                if not self._retryable(e, attempt):
                    raise
                time.sleep(0.05 * 2**attempt)
                attempt += 1


class AsyncTask(_TaskBase):
    """`Task` for `AsyncClient`: the same calls, awaited; `async with client.task(...) as t`."""

    async def __aenter__(self) -> AsyncTask:
        await self._retry(lambda: self._stub.OpenTask(self._open, timeout=self._timeout))
        return self

    async def __aexit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        req = self._close_request()
        self.bill = await self._retry(lambda: self._stub.CloseTask(req, timeout=self._timeout))

    async def reserve(
        self, kind: str, amount: int, tool: str = "", final: bool = False, ttl: int = 0
    ) -> lpb.Reservation:
        req = self._reserve_request(kind, amount, tool, final, ttl)
        out: lpb.Reservation = await self._retry(
            lambda: self._stub.Reserve(req, timeout=self._timeout)
        )
        return out

    async def commit(self, reservation: lpb.Reservation, actual: int) -> lpb.TaskStatus:
        req = self._commit_request(reservation, actual)
        out: lpb.TaskStatus = await self._retry(
            lambda: self._stub.Commit(req, timeout=self._timeout)
        )
        return out

    async def release(self, reservation: lpb.Reservation) -> lpb.TaskStatus:
        req = self._release_request(reservation)
        out: lpb.TaskStatus = await self._retry(
            lambda: self._stub.Release(req, timeout=self._timeout)
        )
        return out

    @asynccontextmanager
    async def spend(self, kind: str, estimate: int, **options: Any) -> AsyncIterator[Spend]:
        """Reserve `estimate`; commit `Spend.actual` when the block ends, or release the hold
        if it raises."""
        s = Spend(await self.reserve(kind, estimate, **options))
        try:
            yield s
        except BaseException:
            await self.release(s.reservation)
            raise
        await self.commit(s.reservation, s.actual)

    async def status(self) -> lpb.TaskStatus:
        req = self._status_request()
        out: lpb.TaskStatus = await self._retry(
            lambda: self._stub.Status(req, timeout=self._timeout)
        )
        return out

    async def raise_budget(self, add_micros: int) -> lpb.TaskStatus:
        req = self._raise_request(add_micros)
        out: lpb.TaskStatus = await self._retry(
            lambda: self._stub.RaiseBudget(req, timeout=self._timeout)
        )
        return out

    async def step(self, round: int, **fields: Unpack[StepFields]) -> apb.StepResponse:
        """`Task.step`, awaited."""
        req = self._step_request(round, fields)
        out: apb.StepResponse = await self._retry(
            lambda: self._agent.Step(req, timeout=self._timeout)
        )
        return out

    async def _retry(self, call: Callable[[], Awaitable[T]]) -> T:
        attempt = 1
        while True:
            try:
                return await call()
            except grpc.RpcError as e:
                if not self._retryable(e, attempt):
                    raise
                await asyncio.sleep(0.05 * 2**attempt)
                attempt += 1


def _key() -> str:
    return uuid.uuid4().hex
