"""LedgerService handlers: validate, convert, run the ledger in the worker pool, convert back."""

from __future__ import annotations

from pocketd.v1 import ledger_service_pb2 as lpb
from pocketd.v1 import ledger_service_pb2_grpc as lpb_grpc
from server.api import convert_ledger as cv
from server.api.calls import CallRecord, WorkerPools
from server.api.handler import Ctx, Handler
from server.api.ledger_validation import LedgerValidator
from server.core.agent.ledger import Ledger
from server.core.agent.model import SpendKind
from server.core.errors import UnavailableError
from server.core.settings import Settings


class LedgerServicer(Handler, lpb_grpc.LedgerServiceServicer):  # type: ignore[misc]
    """The gRPC face of the `Ledger`. Calls before `ready()` get UNAVAILABLE."""

    def __init__(self, settings: Settings, pools: WorkerPools) -> None:
        super().__init__(settings, pools)
        self._check = LedgerValidator(settings)
        self._settings = settings.ledger
        self._ledger: Ledger | None = None

    def ready(self, ledger: Ledger) -> None:
        self._ledger = ledger

    def _led(self) -> Ledger:
        if self._ledger is None:
            raise UnavailableError("pocketd is starting: the ledger is not open yet")
        return self._ledger

    async def OpenTask(self, request: lpb.OpenTaskRequest, context: Ctx) -> lpb.TaskStatus:
        return await self._call(
            context,
            CallRecord("OpenTask", request.namespace, 1),
            lambda v: self._check.open_task(v, request),
            lambda d: cv.status_pb(
                self._led().open_task(
                    request.task_id,
                    request.namespace,
                    request.session_id,
                    cv.budget(request.budget, self._settings),
                )
            ),
            batch=False,
        )

    async def Reserve(self, request: lpb.ReserveRequest, context: Ctx) -> lpb.Reservation:
        ttl = request.ttl_seconds or self._settings.reservation_ttl_seconds
        return await self._call(
            context,
            CallRecord("Reserve", "", 1),
            lambda v: self._check.reserve(v, request),
            lambda d: cv.reservation_pb(
                self._led().reserve(
                    request.task_id,
                    request.round,
                    SpendKind(request.kind),
                    request.estimate_micros,
                    request.tool,
                    request.final,
                    float(ttl),
                    request.idempotency_key,
                )
            ),
            batch=False,
        )

    async def Commit(self, request: lpb.CommitRequest, context: Ctx) -> lpb.TaskStatus:
        return await self._call(
            context,
            CallRecord("Commit", "", 1),
            lambda v: self._check.settle(v, request),
            lambda d: cv.status_pb(
                self._led().commit(
                    request.task_id,
                    request.reservation_id,
                    request.actual_micros,
                    request.idempotency_key,
                )
            ),
            batch=False,
        )

    async def Release(self, request: lpb.ReleaseRequest, context: Ctx) -> lpb.TaskStatus:
        return await self._call(
            context,
            CallRecord("Release", "", 1),
            lambda v: self._check.settle(v, request),
            lambda d: cv.status_pb(
                self._led().release(
                    request.task_id, request.reservation_id, request.idempotency_key
                )
            ),
            batch=False,
        )

    async def Status(self, request: lpb.TaskStatusRequest, context: Ctx) -> lpb.TaskStatus:
        return await self._call(
            context,
            CallRecord("Status", "", 1),
            lambda v: self._check.status(v, request),
            lambda d: cv.status_pb(self._led().status(request.task_id)),
            batch=False,
        )

    async def RaiseBudget(self, request: lpb.RaiseBudgetRequest, context: Ctx) -> lpb.TaskStatus:
        return await self._call(
            context,
            CallRecord("RaiseBudget", "", 1),
            lambda v: self._check.raise_budget(v, request),
            lambda d: cv.status_pb(
                self._led().raise_budget(
                    request.task_id, request.add_total_micros, request.idempotency_key
                )
            ),
            batch=False,
        )

    async def CloseTask(self, request: lpb.CloseTaskRequest, context: Ctx) -> lpb.TaskBill:
        return await self._call(
            context,
            CallRecord("CloseTask", "", 1),
            lambda v: self._check.close_task(v, request),
            lambda d: cv.bill_pb(self._led().close_task(request.task_id, request.idempotency_key)),
            batch=False,
        )
