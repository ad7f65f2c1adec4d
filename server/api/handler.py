"""The one path every RPC takes: admission and the per-call log (`server.api.calls`), then, in
the bounded worker pool with the call's `Deadline`, validation of the whole request, the check
that the caller's token grants its namespaces, and the blocking work (usearch, tantivy,
onnxruntime, numba and SQLite all release the GIL for their heavy work). An error becomes its
rich status (`server.api.errors`)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from grpc_status import rpc_status

from server.api.auth import call_tenant
from server.api.calls import CallRecord, CallRunner, Lane, code_name
from server.api.errors import to_status
from server.api.observe import call_info
from server.api.validation import Validator, Violations
from server.core.deadline import Deadline
from server.core.errors import Location, NotFoundError, PermissionDeniedError
from server.core.settings import Settings
from server.core.tenancy import Tenant

T = TypeVar("T")
# grpc.aio.ServicerContext: grpc ships no type hints, so it is Any to mypy either way.
Ctx = Any
log = logging.getLogger(__name__)


class Handler:
    """What a servicer shares: the validator and the call runner (one for every service)."""

    def __init__(self, settings: Settings, calls: CallRunner) -> None:
        self._validator = Validator(settings)
        self._calls = calls

    async def _call(
        self,
        context: Ctx,
        rec: CallRecord,
        validate: Callable[[Violations], None],
        work: Callable[[Deadline], T],
        lane: Lane = Lane.READ,
        batch: bool = True,
        namespaces: Sequence[tuple[str, str]] | None = None,
        weight: int = 1,
    ) -> T:
        """Admit, validate off the event loop (so a large batch being checked never delays
        another call), check that the caller's token grants the request's namespaces
        (`namespaces`: (field, namespace) pairs; None: `rec.namespace`, as `namespace`), then run
        `work` under the call's deadline in `lane`'s pool (`calls.WorkerPools`). `weight`: the
        work it counts as against the tenant's share (a StepBatch: its Steps). `batch` False:
        the request is not a batch, whose field paths have no `items[i].`."""
        log.debug("%s ns=%s started", rec.method, rec.namespace or "-")
        tenant = call_tenant(context)
        rec.tenant = tenant.name
        info = call_info(context)
        rec.request_id = "" if info is None else info.request_id
        names = namespaces if namespaces is not None else [("namespace", rec.namespace)]

        def check() -> None:
            v = Violations()
            validate(v)
            v.raise_if_any()
            for field, ns in names:
                if ns and not tenant.may_use(ns):
                    raise PermissionDeniedError(
                        f"this token does not grant namespace {ns!r}", field
                    )

        deadline: Deadline | None = None
        try:
            self._calls.admit(lane, tenant.name, weight)
            try:
                deadline = self._calls.deadline(context.time_remaining())
            except BaseException:
                self._calls.release(lane, tenant.name, weight)
                raise
            out = await self._calls.run(work, deadline, lane, tenant.name, weight, check, rec)
            left = context.time_remaining()
            if left is not None and left <= 0.0:  # done, but after the client's deadline
                rec.status = "DEADLINE_EXCEEDED"
            return out
        except Exception as exc:
            status = to_status(exc, batch)
            rec.status = code_name(status.code)
            await context.abort_with_status(rpc_status.to_status(status))
            raise  # unreachable: abort raises
        except BaseException:  # the client went away, or its deadline passed
            passed = deadline is not None and deadline.remaining() <= 0.0
            rec.status = "DEADLINE_EXCEEDED" if passed else "CANCELLED"
            raise
        finally:
            if info is not None:  # the metrics count the status the log line says
                info.status = rec.status
            if not rec.deferred:
                self._calls.log(rec)


def visible_task(tenant: Tenant, task_id: str, namespace_of: Callable[[str], str | None]) -> str:
    """The task as the ledger keys it, once the caller may see it: NOT_FOUND, as for a task
    that does not exist, when the namespace it was opened in is not granted to the caller's
    token (`namespace_of`: the ledger's lookup, asked only for a token with narrower grants)."""
    scoped = tenant.scope(task_id)
    if tenant.grants != ("*",):
        ns = namespace_of(scoped)
        if ns is None or not tenant.may_use(tenant.unscope(ns) or ""):
            raise NotFoundError("task", task_id, Location("task_id"))
    return scoped
