"""MemoryService handlers: validate, convert, run the engine off the event loop, convert back.

Handlers stay thin: all logic is in `server.core`. Each call goes through `Handler._call`
(`server.api.handler`): admission, validation and the engine call in the worker pool.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import TypeVar

from pocketd.v1 import memory_service_pb2 as spb
from pocketd.v1 import memory_service_pb2_grpc as spb_grpc
from server.api import convert
from server.api.auth import call_tenant
from server.api.calls import CallRecord, CallRunner, Lane
from server.api.convert_routing import explain_response
from server.api.handler import Ctx, Handler
from server.api.page_tokens import PageTokens
from server.api.validation import Violations
from server.core.deadline import Deadline
from server.core.engine import MemoryEngine
from server.core.errors import FailedPreconditionError, PermissionDeniedError, UnavailableError
from server.core.memory.model import MaintainReport
from server.core.routing.explain import Explainer
from server.core.routing.router import Router
from server.core.settings import Settings
from server.core.tenancy import Tenant

T = TypeVar("T")
log = logging.getLogger(__name__)
DEFAULT_PAGE_SIZE = 100


class MemoryServicer(Handler, spb_grpc.MemoryServiceServicer):  # type: ignore[misc]
    """The gRPC face of a `MemoryEngine`. Calls before `ready()` get UNAVAILABLE."""

    def __init__(self, settings: Settings, calls: CallRunner, pages: PageTokens) -> None:
        super().__init__(settings, calls)
        self._pages = pages
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
        lane: Lane = Lane.READ,
        batch: bool = True,
        namespaces: Sequence[tuple[str, str]] | None = None,
    ) -> T:
        """`Handler._call` with the engine (UNAVAILABLE until `ready`). (What Steps
        acknowledged in a namespace, the engine writes before it reads or changes it.)"""
        return await self._call(
            context,
            rec,
            validate,
            lambda d: work(self._eng(), d),
            lane,
            batch,
            namespaces,
        )

    async def Remember(self, request: spb.RememberRequest, context: Ctx) -> spb.RememberResponse:
        t = call_tenant(context)
        return await self._run(
            context,
            CallRecord("Remember", request.record.namespace, 1),
            lambda v: self._validator.remember(v, "", request, time.time()),
            lambda eng, d: convert.write_result(
                eng.remember([convert.new_memory(request, t)], d)[0]
            ),
            lane=Lane.WRITE,
            batch=False,
            namespaces=[("record.namespace", request.record.namespace)],
        )

    async def RememberBatch(
        self, request: spb.RememberBatchRequest, context: Ctx
    ) -> spb.RememberBatchResponse:
        t = call_tenant(context)

        def work(eng: MemoryEngine, d: Deadline) -> spb.RememberBatchResponse:
            results = eng.remember([convert.new_memory(it, t) for it in request.items], d)
            return spb.RememberBatchResponse(results=[convert.write_result(r) for r in results])

        first = request.items[0].record.namespace if request.items else ""
        return await self._run(
            context,
            CallRecord("RememberBatch", first, len(request.items)),
            lambda v: self._validator.remember_batch(v, request, time.time()),
            work,
            lane=Lane.BULK,
            namespaces=[
                (f"items[{i}].record.namespace", it.record.namespace)
                for i, it in enumerate(request.items)
            ],
        )

    async def Recall(self, request: spb.RecallRequest, context: Ctx) -> spb.RecallResponse:
        rec = CallRecord("Recall", request.namespace, 0)
        t = call_tenant(context)

        def work(eng: MemoryEngine, d: Deadline) -> spb.RecallResponse:
            res = eng.recall(convert.recall_query(request, t), d)
            rec.items = len(res.hits)
            self._calls.metrics.recall(t.name, res.pockets_searched, res.cost_units)
            return convert.recall_response(res, t)

        return await self._run(
            context,
            rec,
            lambda v: self._validator.recall(v, request),
            work,
        )

    async def Explain(self, request: spb.ExplainRequest, context: Ctx) -> spb.ExplainResponse:
        rec = CallRecord("Explain", request.recall.namespace, 0)
        t = call_tenant(context)

        def work(eng: MemoryEngine, d: Deadline) -> spb.ExplainResponse:
            if self._explainer is None:
                raise FailedPreconditionError("this server has no router to explain", "NO_ROUTER")
            q = convert.recall_query(request.recall, t)
            ctx, explained = self._explainer.explain(q, list(request.policies), request.run, d)
            rec.items = len(explained)
            return explain_response(ctx, explained, t)

        return await self._run(
            context,
            rec,
            lambda v: self._validator.explain(v, request),
            work,
            namespaces=[("recall.namespace", request.recall.namespace)],
        )

    async def Get(self, request: spb.GetRequest, context: Ctx) -> spb.GetResponse:
        t = call_tenant(context)

        def work(eng: MemoryEngine, d: Deadline) -> spb.GetResponse:
            ns = t.scope(request.namespace)
            rec, vec = eng.get(ns, request.memory_id, request.include_vector, d)
            out = spb.GetResponse(record=convert.record_pb(rec, t, vec))
            if request.include_blob_data and rec.blob is not None and rec.blob.held:
                data = eng.blob(rec.blob.sha256)
                if data is not None:
                    out.record.blob.data = data
            return out

        return await self._run(
            context,
            CallRecord("Get", request.namespace, 1),
            lambda v: self._validator.get(v, request),
            work,
        )

    async def Forget(self, request: spb.ForgetRequest, context: Ctx) -> spb.ForgetResponse:
        rec = CallRecord("Forget", request.namespace, 0)
        t = call_tenant(context)

        def work(eng: MemoryEngine, d: Deadline) -> spb.ForgetResponse:
            ns = t.scope(request.namespace)
            if request.WhichOneof("target") == "memory_id":
                n = eng.forget(ns, request.memory_id, None, d)
            else:
                flt = convert.memory_filter(request.filter)
                n = eng.forget(ns, None, flt, d)
            rec.items = n
            return spb.ForgetResponse(forgotten_count=n)

        # A read's worker: a delete is short and must not wait behind writers held back by
        # backpressure (it takes the writer's lock only for the delete itself).
        return await self._run(
            context,
            rec,
            lambda v: self._validator.forget(v, request),
            work,
        )

    async def List(self, request: spb.ListRequest, context: Ctx) -> spb.ListResponse:
        rec = CallRecord("List", request.namespace, 0)
        t = call_tenant(context)
        ns = t.scope(request.namespace)

        opened: list[tuple[float, int, int] | None] = [None]  # the token, opened once

        def validate(v: Violations) -> None:
            self._validator.list(v, request)
            if request.page_token:
                opened[0] = self._pages.open(ns, request.page_token)
                if opened[0] is None:
                    v.add("page_token", "is not a next_page_token of List for this namespace")

        def work(eng: MemoryEngine, d: Deadline) -> spb.ListResponse:
            size = request.page_size if request.HasField("page_size") else DEFAULT_PAGE_SIZE
            after = opened[0]
            flt = convert.memory_filter(request.filter)
            page = eng.list(ns, flt, size, after, d)
            rec.items = len(page.records)
            return convert.list_response(page, t, partial(self._pages.seal, ns))

        return await self._run(context, rec, validate, work)

    async def Stats(self, request: spb.StatsRequest, context: Ctx) -> spb.StatsResponse:
        t = call_tenant(context)
        ns = t.scope(request.namespace) if request.namespace else ""
        return await self._run(
            context,
            CallRecord("Stats", request.namespace, 0),
            lambda v: self._validator.stats(v, request),
            lambda eng, d: convert.stats_response(eng.stats(ns, t.sees, d), t),
        )

    async def Reconcile(self, request: spb.ReconcileRequest, context: Ctx) -> spb.ReconcileResponse:
        rec = CallRecord("Reconcile", request.namespace, len(request.facts))
        t = call_tenant(context)
        ns = t.scope(request.namespace)

        def work(eng: MemoryEngine, d: Deadline) -> spb.ReconcileResponse:
            facts = [convert.authoritative_fact(f, ns) for f in request.facts]
            return convert.reconcile_response(eng.reconcile(ns, facts, request.dry_run, d))

        # The bulk lane: up to `limits.max_batch_items` facts, each searched, then one write.
        return await self._run(
            context,
            rec,
            lambda v: self._validator.reconcile(v, request),
            work,
            lane=Lane.BULK,
            batch=False,
        )

    async def Unsupersede(
        self, request: spb.UnsupersedeRequest, context: Ctx
    ) -> spb.UnsupersedeResponse:
        rec = CallRecord("Unsupersede", request.namespace, len(request.memory_ids))
        t = call_tenant(context)
        ns = t.scope(request.namespace)

        def work(eng: MemoryEngine, d: Deadline) -> spb.UnsupersedeResponse:
            restored = eng.unsupersede(ns, list(request.memory_ids), d)
            rec.items = len(restored)
            return spb.UnsupersedeResponse(restored=restored)

        return await self._run(
            context,
            rec,
            lambda v: self._validator.unsupersede(v, request),
            work,
            lane=Lane.WRITE,
            batch=False,
        )

    async def EndSession(
        self, request: spb.EndSessionRequest, context: Ctx
    ) -> spb.EndSessionResponse:
        t = call_tenant(context)
        ns = t.scope(request.namespace)
        return await self._run(
            context,
            CallRecord("EndSession", request.namespace, 1),
            lambda v: self._validator.end_session(v, request),
            lambda eng, d: convert.end_session_response(eng.end_session(ns, request.session_id, d)),
            lane=Lane.WRITE,
            batch=False,
        )

    async def Maintain(self, request: spb.MaintainRequest, context: Ctx) -> spb.MaintainResponse:
        rec = CallRecord("Maintain", request.namespace, 0)
        t = call_tenant(context)

        def validate(v: Violations) -> None:
            self._validator.maintain(v, request)
            v.raise_if_any()
            if not request.namespace and not any(set(g) == {"*"} for g in t.grants):
                raise PermissionDeniedError(
                    "Maintain without a namespace runs over every namespace, and this token"
                    " does not grant every one: name a namespace",
                    "namespace",
                )

        def work(eng: MemoryEngine, d: Deadline) -> spb.MaintainResponse:
            reports = _maintain(eng, t, t.scope(request.namespace) if request.namespace else "", d)
            rec.items = len(reports)
            return convert.maintain_response(reports)

        # The bulk lane: a run may take long, and must not hold a Remember's worker.
        return await self._run(
            context,
            rec,
            validate,
            work,
            lane=Lane.BULK,
        )


def _maintain(eng: MemoryEngine, t: Tenant, ns: str, d: Deadline) -> list[MaintainReport]:
    """The maintenance runs of one Maintain: of `ns` (as the core keeps it); with none, of every
    namespace the caller's tenant sees, as Stats without a namespace counts them: one run when
    that is every namespace kept (a server without tenants), else one run per namespace, so
    that another tenant's memory is neither changed nor counted."""
    if ns:
        return [eng.maintain(ns, d)]
    kept = list(eng.columns.namespaces())
    mine = [n for n in kept if t.sees(n)]
    if len(mine) == len(kept):
        return [eng.maintain("", d)]
    return [eng.maintain(n, d) for n in sorted(mine)]
