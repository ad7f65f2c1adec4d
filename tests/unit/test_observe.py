"""The call observer: a request id taken from metadata only when plausible, and the status the
metrics count is the one the handler's log line says (work that finished after the client's
deadline is DEADLINE_EXCEEDED there, not OK)."""

from __future__ import annotations

import contextlib
import re
from functools import partial
from typing import Any

import pytest

from server.api.observe import CallObserver, call_info, request_id


class Recorded:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str]] = []

    def call(self, method: str, tenant: str, code: str, seconds: float) -> None:
        self.calls.append((method, tenant, code))


class Handler:
    request_streaming = False
    response_streaming = False
    request_deserializer = None

    def __init__(self, behaviour: Any) -> None:
        self.unary_unary = behaviour

    def _replace(self, **kw: Any) -> Handler:
        return Handler(kw["unary_unary"])


class Details:
    method = "/pocketd.v1.MemoryService/Recall"
    invocation_metadata = (("x-request-id", "req-1"),)


class Context:
    def code(self) -> Any:
        return None

    def time_remaining(self) -> float:
        return 1.0


@pytest.mark.parametrize(
    ("given", "kept"),
    [("req-42.a", True), ("a/b:c_d-1", True), ("has space", False), ("x" * 65, False), ("", False)],
)
def test_a_request_id_is_kept_only_when_plausible(given: str, kept: bool) -> None:
    got = request_id((("authorization", "Bearer t"), ("x-request-id", given)))
    assert (got == given) is kept
    if not kept:
        assert re.fullmatch(r"[0-9a-f]{16}", got)


async def test_the_metrics_count_the_status_the_handler_logged() -> None:
    metrics = Recorded()

    async def late(request: Any, context: Any) -> str:
        info = call_info(context)
        assert info is not None and info.request_id == "req-1"
        info.tenant = "acme"
        info.status = "DEADLINE_EXCEEDED"  # done, but after the client's deadline
        return "answer"

    async def plain(request: Any, context: Any) -> str:
        return "answer"

    async def failing(request: Any, context: Any) -> str:
        raise RuntimeError("not through the error table")

    async def continuation(behaviour: Any, details: Any) -> Any:
        return Handler(behaviour)

    observer = CallObserver(metrics)  # type: ignore[arg-type]
    for behaviour in (late, plain, failing):
        handler = await observer.intercept_service(partial(continuation, behaviour), Details())
        with contextlib.suppress(RuntimeError):
            assert await handler.unary_unary(None, Context()) == "answer"
    assert metrics.calls == [
        ("MemoryService/Recall", "acme", "DEADLINE_EXCEEDED"),
        ("MemoryService/Recall", "", "OK"),
        ("MemoryService/Recall", "", "UNKNOWN"),
    ]
