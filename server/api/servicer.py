"""MemoryService handlers: validate, convert, run the engine off the event loop, convert back.

Handlers stay thin: all logic is in `server.core`. Blocking engine calls run in a bounded thread
pool (usearch, tantivy, onnxruntime, numba and SQLite all release the GIL for their heavy work).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from pocketd.v1 import memory_service_pb2 as spb
from pocketd.v1 import memory_service_pb2_grpc as spb_grpc
from server.api import convert
from server.api.errors import abort
from server.api.validation import Validator, Violations
from server.core.engine import MemoryEngine
from server.core.errors import UnavailableError
from server.core.settings import Settings

T = TypeVar("T")
# grpc.aio.ServicerContext: grpc ships no type hints, so it is Any to mypy either way.
Ctx = Any


class MemoryServicer(spb_grpc.MemoryServiceServicer):  # type: ignore[misc]
    """The gRPC face of a `MemoryEngine`. Calls before `ready()` get UNAVAILABLE."""

    def __init__(self, settings: Settings, executor: ThreadPoolExecutor) -> None:
        self._validator = Validator(settings)
        self._executor = executor
        self._engine: MemoryEngine | None = None

    def ready(self, engine: MemoryEngine) -> None:
        self._engine = engine

    def _eng(self) -> MemoryEngine:
        if self._engine is None:
            raise UnavailableError("pocketd is starting: stores are still loading")
        return self._engine

    async def _call(
        self,
        context: Ctx,
        validate: Callable[[Violations], None],
        work: Callable[[MemoryEngine], T],
        rename: Callable[[Exception], Exception] = lambda e: e,
    ) -> T:
        """Validate on the loop, then convert and run the engine call in the executor."""
        try:
            v = Violations()
            validate(v)
            v.raise_if_any()
            eng = self._eng()
            return await asyncio.get_running_loop().run_in_executor(self._executor, work, eng)
        except Exception as exc:
            await abort(context, rename(exc))
            raise  # unreachable: abort raises

    async def Remember(self, request: spb.RememberRequest, context: Ctx) -> spb.RememberResponse:
        return await self._call(
            context,
            lambda v: self._validator.remember(v, "", request, time.time()),
            lambda eng: convert.write_result(eng.remember([convert.new_memory(request)])[0]),
            _single,
        )

    async def RememberBatch(
        self, request: spb.RememberBatchRequest, context: Ctx
    ) -> spb.RememberBatchResponse:
        def work(eng: MemoryEngine) -> spb.RememberBatchResponse:
            results = eng.remember([convert.new_memory(it) for it in request.items])
            return spb.RememberBatchResponse(results=[convert.write_result(r) for r in results])

        return await self._call(
            context, lambda v: self._validator.remember_batch(v, request, time.time()), work
        )

    async def Recall(self, request: spb.RecallRequest, context: Ctx) -> spb.RecallResponse:
        return await self._call(
            context,
            lambda v: self._validator.recall(v, request),
            lambda eng: convert.recall_response(eng.recall(convert.recall_query(request))),
        )

    async def Get(self, request: spb.GetRequest, context: Ctx) -> spb.GetResponse:
        def work(eng: MemoryEngine) -> spb.GetResponse:
            rec, vec = eng.get(request.namespace, request.memory_id, request.include_vector)
            return spb.GetResponse(record=convert.record_pb(rec, vec))

        return await self._call(context, lambda v: self._validator.get(v, request), work)

    async def Forget(self, request: spb.ForgetRequest, context: Ctx) -> spb.ForgetResponse:
        def work(eng: MemoryEngine) -> spb.ForgetResponse:
            if request.WhichOneof("target") == "memory_id":
                n = eng.forget(request.namespace, request.memory_id, None)
            else:
                n = eng.forget(request.namespace, None, convert.memory_filter(request.filter))
            return spb.ForgetResponse(forgotten_count=n)

        return await self._call(context, lambda v: self._validator.forget(v, request), work)

    async def Stats(self, request: spb.StatsRequest, context: Ctx) -> spb.StatsResponse:
        return await self._call(
            context,
            lambda v: self._validator.stats(v, request),
            lambda eng: convert.stats_response(eng.stats(request.namespace)),
        )


def _single(exc: Exception) -> Exception:
    """Errors of a single Remember name `supersedes[j]`, not `items[0].supersedes[j]`."""
    field = getattr(exc, "field", "")
    if isinstance(field, str) and field.startswith("items[0]."):
        exc.field = field[len("items[0].") :]  # type: ignore[attr-defined]
    return exc
