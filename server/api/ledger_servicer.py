"""LedgerService handlers: validate, convert, run the ledger in the agent pool, convert back.

Task ids are kept under the caller's tenant (`Tenant.scope`): another tenant's task is NOT_FOUND,
exactly like a task that does not exist, and opening a task id another tenant uses opens one of
the caller's own. A task also belongs to the namespace it was opened in: a token that does not
grant that namespace gets NOT_FOUND for it too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from pocketd.v1 import ledger_service_pb2 as lpb
from pocketd.v1 import ledger_service_pb2_grpc as lpb_grpc
from server.api import convert_ledger as cv
from server.api.auth import call_tenant
from server.api.calls import CallRecord, CallRunner, Lane
from server.api.handler import Ctx, Handler, visible_task
from server.api.ledger_validation import LedgerValidator
from server.api.validation import Violations
from server.core.deadline import Deadline
from server.core.errors import UnavailableError
from server.core.ledger.ledger import Ledger
from server.core.ledger.model import Bill, SpendKind
from server.core.settings import Settings
from server.core.tenancy import Tenant

T = TypeVar("T")
_REMEMBERED_TASKS = 4096  # tasks whose namespace the call log keeps at hand


def _nothing(task_id: str) -> None:
    pass


class LedgerServicer(Handler, lpb_grpc.LedgerServiceServicer):  # type: ignore[misc]
    """The gRPC face of the `Ledger`. Calls before `ready()` get UNAVAILABLE."""

    def __init__(self, settings: Settings, calls: CallRunner) -> None:
        super().__init__(settings, calls)
        self._check = LedgerValidator(settings)
        self._settings = settings.ledger
        self._ledger: Ledger | None = None
        self._closed: Callable[[str], None] = _nothing
        # task → its namespace, for the call log (a task never changes namespace); bounded
        self._namespaces: dict[str, str] = {}

    def ready(self, ledger: Ledger) -> None:
        self._ledger = ledger

    def on_close(self, closed: Callable[[str], None]) -> None:
        """Tell `closed` (the agent loop) of each task closed, as the ledger keys it."""
        self._closed = closed

    def _led(self) -> Ledger:
        if self._ledger is None:
            raise UnavailableError("pocketd is starting: the ledger is not open yet")
        return self._ledger

    def task_id(self, tenant: Tenant, task_id: str) -> str:
        """The task as the ledger keys it, once the caller may see it (`visible_task`)."""
        return visible_task(tenant, task_id, self._led().namespace_of)

    async def OpenTask(self, request: lpb.OpenTaskRequest, context: Ctx) -> lpb.TaskStatus:
        t = call_tenant(context)
        return await self._call(
            context,
            CallRecord("OpenTask", request.namespace, 1),
            lambda v: self._check.open_task(v, request),
            lambda d: cv.status_pb(
                self._led().open_task(
                    t.scope(request.task_id),
                    t.scope(request.namespace),
                    request.session_id,
                    cv.budget(request.budget, self._settings),
                ),
                t,
            ),
            batch=False,
            lane=Lane.AGENT,
        )

    async def Reserve(self, request: lpb.ReserveRequest, context: Ctx) -> lpb.Reservation:
        ttl = request.ttl_seconds or self._settings.reservation_ttl_seconds
        return await self._on_task(
            context,
            "Reserve",
            request.task_id,
            lambda v: self._check.reserve(v, request),
            lambda led, task, t: cv.reservation_pb(
                led.reserve(
                    task,
                    request.round,
                    SpendKind(request.kind),
                    request.estimate_micros,
                    request.tool,
                    request.final,
                    float(ttl),
                    request.idempotency_key,
                ),
                t,
            ),
        )

    async def Commit(self, request: lpb.CommitRequest, context: Ctx) -> lpb.TaskStatus:
        return await self._on_task(
            context,
            "Commit",
            request.task_id,
            lambda v: self._check.settle(v, request),
            lambda led, task, t: cv.status_pb(
                led.commit(
                    task, request.reservation_id, request.actual_micros, request.idempotency_key
                ),
                t,
            ),
        )

    async def Release(self, request: lpb.ReleaseRequest, context: Ctx) -> lpb.TaskStatus:
        return await self._on_task(
            context,
            "Release",
            request.task_id,
            lambda v: self._check.settle(v, request),
            lambda led, task, t: cv.status_pb(
                led.release(task, request.reservation_id, request.idempotency_key), t
            ),
        )

    async def Status(self, request: lpb.TaskStatusRequest, context: Ctx) -> lpb.TaskStatus:
        return await self._on_task(
            context,
            "Status",
            request.task_id,
            lambda v: self._check.status(v, request),
            lambda led, task, t: cv.status_pb(led.status(task), t),
        )

    async def RaiseBudget(self, request: lpb.RaiseBudgetRequest, context: Ctx) -> lpb.TaskStatus:
        return await self._on_task(
            context,
            "RaiseBudget",
            request.task_id,
            lambda v: self._check.raise_budget(v, request),
            lambda led, task, t: cv.status_pb(
                led.raise_budget(task, request.add_total_micros, request.idempotency_key), t
            ),
        )

    async def CloseTask(self, request: lpb.CloseTaskRequest, context: Ctx) -> lpb.TaskBill:
        return await self._on_task(
            context,
            "CloseTask",
            request.task_id,
            lambda v: self._check.close_task(v, request),
            lambda led, task, t: cv.bill_pb(self._close(led, task, request.idempotency_key), t),
        )

    def _close(self, led: Ledger, task: str, key: str) -> Bill:
        bill = led.close_task(task, key)
        self._closed(task)
        return bill

    async def _on_task(
        self,
        context: Ctx,
        method: str,
        task_id: str,
        validate: Callable[[Violations], None],
        work: Callable[[Ledger, str, Tenant], T],
    ) -> T:
        """A call on one task, which `work` gets as the ledger keys it."""
        t = call_tenant(context)
        rec = CallRecord(method, "", 1)

        def run(d: Deadline) -> T:
            led, task = self._led(), self.task_id(t, task_id)
            rec.namespace = self._namespace(led, task, t)  # also when `work` fails
            return work(led, task, t)

        return await self._call(context, rec, validate, run, batch=False, lane=Lane.AGENT)

    def _namespace(self, led: Ledger, task: str, t: Tenant) -> str:
        """The namespace `task` was opened in, as `t` spells it, for the call log: read from
        the ledger once per task (a task never changes namespace), then remembered."""
        ns = self._namespaces.get(task)
        if ns is None:
            kept = led.namespace_of(task)
            if kept is None:  # no such task (yet): nothing to remember
                return ""
            ns = t.unscope(kept) or kept
            if len(self._namespaces) >= _REMEMBERED_TASKS:
                self._namespaces.clear()
            self._namespaces[task] = ns
        return ns
