"""Undecodable requests get INVALID_ARGUMENT, on every method of every service.

gRPC Python answers a request whose bytes do not parse with UNKNOWN, a message naming the
protobuf exception class, and an ERROR log line with a traceback per call. This interceptor wraps
each method's request deserializer: a message that does not parse becomes an `Undecodable` marker,
and the wrapped handler answers it with INVALID_ARGUMENT ("the request is not a valid
pocketd.v1.RecallRequest") before any servicer code runs. The log line is rate-limited: at most one
per `LOG_INTERVAL_S`, counting the ones it held back.
"""

from __future__ import annotations

import inspect
import logging
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
from google.protobuf.message import DecodeError

log = logging.getLogger(__name__)
LOG_INTERVAL_S = 10.0


class Undecodable:
    """Stands in for a request message whose bytes did not parse."""

    def __init__(self, size: int) -> None:
        self.size = size


class RateLimitedLog:
    """At most one WARNING per interval; the next one says how many were held back."""

    def __init__(self, interval_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._interval = interval_s
        self._clock = clock
        self._last = -float("inf")
        self._held = 0
        self._lock = threading.Lock()

    def warn(self, message: str, *args: object) -> None:
        with self._lock:
            now = self._clock()
            if now - self._last < self._interval:
                self._held += 1
                return
            held, self._held, self._last = self._held, 0, now
        suffix = f" ({held} more like it in the last {self._interval:.0f}s)" if held else ""
        log.warning(message + suffix, *args)


def _safe(deserialize: Callable[[bytes], Any] | None) -> Callable[[bytes], Any] | None:
    if deserialize is None:
        return None

    def parse(data: bytes) -> Any:
        try:
            return deserialize(data)
        except (DecodeError, ValueError, TypeError, RecursionError):
            return Undecodable(len(data))

    return parse


async def _refuse(method: str, request: Undecodable, context: Any, log: RateLimitedLog) -> None:
    log.warn("undecodable request on %s (%d bytes): INVALID_ARGUMENT", method, request.size)
    await context.abort(
        grpc.StatusCode.INVALID_ARGUMENT,
        f"the request is not a valid message for {method}: its bytes do not parse",
    )


async def _checked(
    method: str, requests: AsyncIterator[Any], context: Any, log: RateLimitedLog
) -> AsyncIterator[Any]:
    async for r in requests:
        if isinstance(r, Undecodable):
            await _refuse(method, r, context, log)
        yield r


def _unary_request(
    method: str, behaviour: Callable[..., Any], log: RateLimitedLog
) -> Callable[..., Any]:
    if inspect.isasyncgenfunction(behaviour):

        async def stream_out(request: Any, context: Any) -> AsyncIterator[Any]:
            if isinstance(request, Undecodable):
                await _refuse(method, request, context, log)
            async for r in behaviour(request, context):
                yield r

        return stream_out

    async def unary_out(request: Any, context: Any) -> Any:
        if isinstance(request, Undecodable):
            await _refuse(method, request, context, log)
        out = behaviour(request, context)
        return await out if inspect.isawaitable(out) else out

    return unary_out


def _stream_request(
    method: str, behaviour: Callable[..., Any], log: RateLimitedLog
) -> Callable[..., Any]:
    if inspect.isasyncgenfunction(behaviour):

        async def stream_out(requests: AsyncIterator[Any], context: Any) -> AsyncIterator[Any]:
            async for r in behaviour(_checked(method, requests, context, log), context):
                yield r

        return stream_out

    async def unary_out(requests: AsyncIterator[Any], context: Any) -> Any:
        out = behaviour(_checked(method, requests, context, log), context)
        return await out if inspect.isawaitable(out) else out

    return unary_out


def behaviour_slot(handler: Any) -> str:
    """The field of an RpcMethodHandler that holds its behaviour (`unary_unary`, …), for an
    interceptor that wraps it."""
    return {
        (False, False): "unary_unary",
        (False, True): "unary_stream",
        (True, False): "stream_unary",
        (True, True): "stream_stream",
    }[(handler.request_streaming, handler.response_streaming)]


class DecodeGuard(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """Wraps every handler so that an undecodable request is INVALID_ARGUMENT."""

    def __init__(self, log: RateLimitedLog | None = None) -> None:
        self._log = log or RateLimitedLog(LOG_INTERVAL_S)

    async def intercept_service(
        self,
        continuation: Callable[[Any], Awaitable[Any]],
        details: Any,
    ) -> Any:
        handler = await continuation(details)
        if handler is None or handler.request_deserializer is None:
            return handler
        method = details.method
        slot = behaviour_slot(handler)
        wrap = _stream_request if handler.request_streaming else _unary_request
        return handler._replace(
            request_deserializer=_safe(handler.request_deserializer),
            **{slot: wrap(method, getattr(handler, slot), self._log)},
        )
