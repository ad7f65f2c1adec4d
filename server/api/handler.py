"""The one path every RPC takes: admission and the per-call log (`server.api.calls`), then, in
the bounded worker pool with the call's `Deadline`, validation of the whole request and the
blocking work (usearch, tantivy, onnxruntime, numba and SQLite all release the GIL for their
heavy work). An error becomes its rich status (`server.api.errors`)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

from grpc_status import rpc_status

from server.api.calls import CallRecord, CallRunner, WorkerPools, code_name
from server.api.errors import to_status
from server.api.validation import Validator, Violations
from server.core.deadline import Deadline
from server.core.settings import Settings

T = TypeVar("T")
# grpc.aio.ServicerContext: grpc ships no type hints, so it is Any to mypy either way.
Ctx = Any
log = logging.getLogger(__name__)


class Handler:
    """What a servicer shares: the validator and the call runner."""

    def __init__(self, settings: Settings, pools: WorkerPools) -> None:
        self._validator = Validator(settings)
        self._calls = CallRunner(settings.server, pools)

    async def _call(
        self,
        context: Ctx,
        rec: CallRecord,
        validate: Callable[[Violations], None],
        work: Callable[[Deadline], T],
        write: bool = False,
        batch: bool = True,
    ) -> T:
        """Admit, validate off the event loop (so a large batch being checked never delays
        another call), then run `work` in its pool under the call's deadline. `batch` False: the
        request is not a batch, whose field paths have no `items[i].`."""
        log.debug("%s ns=%s started", rec.method, rec.namespace or "-")

        def check() -> None:
            v = Violations()
            validate(v)
            v.raise_if_any()

        try:
            self._calls.admit(write)
            try:
                deadline = self._calls.deadline(context.time_remaining())
            except BaseException:
                self._calls.release(write)
                raise
            return await self._calls.run(work, deadline, write, check)
        except Exception as exc:
            status = to_status(exc, batch)
            rec.status = code_name(status.code)
            await context.abort_with_status(rpc_status.to_status(status))
            raise  # unreachable: abort raises
        except BaseException:  # the client went away (asyncio cancelled the handler)
            rec.status = "CANCELLED"
            raise
        finally:
            self._calls.log(rec)
