"""MemoryService handlers: validate, convert, run the engine off the event loop, convert back.

Handlers stay thin: all logic is in `server.core`. Each call goes through `Handler._call`
(`server.api.handler`): admission, validation and the engine call in the worker pool.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from pocketd.v1 import memory_service_pb2 as spb
from pocketd.v1 import memory_service_pb2_grpc as spb_grpc
from server.api import convert, fields
from server.api.calls import CallRecord, WorkerPools
from server.api.convert_routing import explain_response
from server.api.handler import Ctx, Handler
from server.api.validation import Violations
from server.core.deadline import Deadline
from server.core.engine import MemoryEngine
from server.core.errors import FailedPreconditionError, UnavailableError
from server.core.routing.explain import Explainer
from server.core.routing.router import Router
from server.core.settings import Settings

T = TypeVar("T")
log = logging.getLogger(__name__)
DEFAULT_PAGE_SIZE = 100


class MemoryServicer(Handler, spb_grpc.MemoryServiceServicer):  # type: ignore[misc]
    """The gRPC face of a `MemoryEngine`. Calls before `ready()` get UNAVAILABLE."""

    def __init__(self, settings: Settings, pools: WorkerPools) -> None:
        super().__init__(settings, pools)
        self._engine: MemoryEngine | None = None
        self._explainer: Explainer | None = None

    def ready(self, engine: MemoryEngine) -> None:
        if isinstance(engine.planner, Router):
            self._explainer = Explainer(engine.planner, engine)
        self._engine = engine

    def _eng(self) -> MemoryEngine:
        if self._engine is None:
            raise UnavailableError("pocketd is starting: stores are loading or catching up")
        return self._engine

    async def _run(
        self,
        context: Ctx,
        rec: CallRecord,
        validate: Callable[[Violations], None],
        work: Callable[[MemoryEngine, Deadline], T],
        write: bool = False,
        batch: bool = True,
    ) -> T:
        """`Handler._call` with the engine (UNAVAILABLE until `ready`)."""
        return await self._call(
            context, rec, validate, lambda d: work(self._eng(), d), write, batch
        )

    async def Remember(self, request: spb.RememberRequest, context: Ctx) -> spb.RememberResponse:
        return await self._run(
            context,
            CallRecord("Remember", request.record.namespace, 1),
            lambda v: self._validator.remember(v, "", request, time.time()),
            lambda eng, d: convert.write_result(eng.remember([convert.new_memory(request)], d)[0]),
            write=True,
            batch=False,
        )

    async def RememberBatch(
        self, request: spb.RememberBatchRequest, context: Ctx
    ) -> spb.RememberBatchResponse:
        def work(eng: MemoryEngine, d: Deadline) -> spb.RememberBatchResponse:
            results = eng.remember([convert.new_memory(it) for it in request.items], d)
            return spb.RememberBatchResponse(results=[convert.write_result(r) for r in results])

        first = request.items[0].record.namespace if request.items else ""
        return await self._run(
            context,
            CallRecord("RememberBatch", first, len(request.items)),
            lambda v: self._validator.remember_batch(v, request, time.time()),
            work,
            write=True,
        )

    async def Recall(self, request: spb.RecallRequest, context: Ctx) -> spb.RecallResponse:
        rec = CallRecord("Recall", request.namespace, 0)

        def work(eng: MemoryEngine, d: Deadline) -> spb.RecallResponse:
            res = eng.recall(convert.recall_query(request), d)
            rec.items = len(res.hits)
            return convert.recall_response(res)

        return await self._run(context, rec, lambda v: self._validator.recall(v, request), work)

    async def Explain(self, request: spb.ExplainRequest, context: Ctx) -> spb.ExplainResponse:
        rec = CallRecord("Explain", request.recall.namespace, 0)

        def work(eng: MemoryEngine, d: Deadline) -> spb.ExplainResponse:
            if self._explainer is None:
                raise FailedPreconditionError("this server has no router to explain", "NO_ROUTER")
            q = convert.recall_query(request.recall)
            ctx, explained = self._explainer.explain(q, list(request.policies), request.run, d)
            rec.items = len(explained)
            return explain_response(ctx, explained)

        return await self._run(context, rec, lambda v: self._validator.explain(v, request), work)

    async def Get(self, request: spb.GetRequest, context: Ctx) -> spb.GetResponse:
        def work(eng: MemoryEngine, d: Deadline) -> spb.GetResponse:
            rec, vec = eng.get(request.namespace, request.memory_id, request.include_vector)
            return spb.GetResponse(record=convert.record_pb(rec, vec))

        return await self._run(
            context,
            CallRecord("Get", request.namespace, 1),
            lambda v: self._validator.get(v, request),
            work,
        )

    async def Forget(self, request: spb.ForgetRequest, context: Ctx) -> spb.ForgetResponse:
        rec = CallRecord("Forget", request.namespace, 0)

        def work(eng: MemoryEngine, d: Deadline) -> spb.ForgetResponse:
            if request.WhichOneof("target") == "memory_id":
                n = eng.forget(request.namespace, request.memory_id, None, d)
            else:
                flt = convert.memory_filter(request.filter)
                n = eng.forget(request.namespace, None, flt, d)
            rec.items = n
            return spb.ForgetResponse(forgotten_count=n)

        # A read's worker: a delete is short and must not wait behind writers held back by
        # backpressure (it takes the writer's lock only for the delete itself).
        return await self._run(context, rec, lambda v: self._validator.forget(v, request), work)

    async def List(self, request: spb.ListRequest, context: Ctx) -> spb.ListResponse:
        rec = CallRecord("List", request.namespace, 0)

        def work(eng: MemoryEngine, d: Deadline) -> spb.ListResponse:
            size = request.page_size if request.HasField("page_size") else DEFAULT_PAGE_SIZE
            after = fields.page_token(request.page_token) if request.page_token else None
            flt = convert.memory_filter(request.filter)
            page = eng.list(request.namespace, flt, size, after)
            rec.items = len(page.records)
            return convert.list_response(page)

        return await self._run(context, rec, lambda v: self._validator.list(v, request), work)

    async def Stats(self, request: spb.StatsRequest, context: Ctx) -> spb.StatsResponse:
        return await self._run(
            context,
            CallRecord("Stats", request.namespace, 0),
            lambda v: self._validator.stats(v, request),
            lambda eng, d: convert.stats_response(eng.stats(request.namespace)),
        )
