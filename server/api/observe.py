"""Interceptor: every call's request id, and its status and latency into `Metrics`.

The outermost interceptor. A call's request id is the client's `x-request-id` metadata when it
is a plausible one (1-64 of `[A-Za-z0-9._:/-]`), else one made here; the handler puts it in the
call's log line (`server.api.calls`), so a client that sends its own can find its calls in the
server's logs. The status is the one the client sees: the handler's abort code, OK, or
DEADLINE_EXCEEDED / CANCELLED when the client's deadline passed or it left; for a pocketd call,
the status its handler's log line says (`CallInfo.status`). Health and reflection calls are
counted too, under the tenant "-".

The call's facts travel on the context the inner interceptors and the handler are given
(`ObservedContext.call`); `server.api.auth` fills in the tenant, explicitly rather than in a
contextvar (grpc #37881).
"""

from __future__ import annotations

import asyncio
import inspect
import re
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc

from server.api.guard import behaviour_slot
from server.core.metrics import Metrics

REQUEST_ID_KEY = "x-request-id"
_REQUEST_ID_RE = re.compile(r"[A-Za-z0-9._:/-]{1,64}")


class CallInfo:
    """What the log and the metrics say of one call."""

    __slots__ = ("method", "request_id", "service", "status", "tenant")

    def __init__(self, service: str, method: str, request_id: str) -> None:
        self.service = service
        self.method = method
        self.request_id = request_id
        self.tenant = ""
        # Set by the handler (`server.api.handler`): the status its log line says, which knows
        # the server's own cap on the deadline and work that finished after the client's.
        self.status = ""


class ObservedContext:
    """The servicer context, carrying the call's `call` (a `CallInfo`)."""

    def __init__(self, context: Any, call: CallInfo) -> None:
        self._context = context
        self.call = call

    def __getattr__(self, name: str) -> Any:
        return getattr(self._context, name)


def request_id(metadata: Any) -> str:
    """The client's `x-request-id` if it is a plausible one, else a new one."""
    for key, value in metadata or ():
        if key == REQUEST_ID_KEY:
            if isinstance(value, str) and _REQUEST_ID_RE.fullmatch(value):
                return value
            break
    return secrets.token_hex(8)


def call_info(context: Any) -> CallInfo | None:
    """The `CallInfo` the observer attached to this call's context (None without one)."""
    info = getattr(context, "call", None)
    return info if isinstance(info, CallInfo) else None


def _code(context: Any, exc: BaseException | None) -> str:
    if isinstance(exc, asyncio.CancelledError):
        left = context.time_remaining()
        return "DEADLINE_EXCEEDED" if left is not None and left <= 0.0 else "CANCELLED"
    code = context.code()
    name = str(code.name) if isinstance(code, grpc.StatusCode) else ""
    if exc is None:
        return name or "OK"
    return name if name and name != "OK" else "UNKNOWN"  # raised without a status


class CallObserver(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """Gives each call its `CallInfo` and reports how it ended."""

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics

    async def intercept_service(
        self, continuation: Callable[[Any], Awaitable[Any]], details: Any
    ) -> Any:
        handler = await continuation(details)
        if handler is None:
            return handler
        service, _, method = details.method.rpartition("/")
        info = CallInfo(service.rpartition(".")[2], method, request_id(details.invocation_metadata))
        slot = behaviour_slot(handler)
        return handler._replace(**{slot: self._observed(getattr(handler, slot), info)})

    def _observed(self, behaviour: Callable[..., Any], info: CallInfo) -> Callable[..., Any]:
        metrics = self._metrics

        def done(context: Any, t0: float, exc: BaseException | None) -> None:
            metrics.call(
                f"{info.service}/{info.method}",
                info.tenant,
                info.status or _code(context, exc),
                time.perf_counter() - t0,
            )

        if inspect.isasyncgenfunction(behaviour):

            async def stream_out(request: Any, context: Any) -> AsyncIterator[Any]:
                t0 = time.perf_counter()
                try:
                    async for r in behaviour(request, ObservedContext(context, info)):
                        yield r
                except BaseException as exc:
                    done(context, t0, exc)
                    raise
                done(context, t0, None)

            return stream_out

        async def unary_out(request: Any, context: Any) -> Any:
            t0 = time.perf_counter()
            try:
                out = behaviour(request, ObservedContext(context, info))
                out = await out if inspect.isawaitable(out) else out
            except BaseException as exc:
                done(context, t0, exc)
                raise
            done(context, t0, None)
            return out

        return unary_out
