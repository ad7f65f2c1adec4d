"""Every row of the error table in server.api.errors, and the readiness gate."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
from google.rpc import code_pb2, error_details_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc

from pocketd.v1 import memory_service_pb2 as spb
from pocketd.v1 import memory_service_pb2_grpc as spb_grpc
from server.api.calls import WorkerPools
from server.api.errors import field_path, to_status
from server.api.server import GrpcServer
from server.core.errors import (
    CallCancelledError,
    DeadlineExceededError,
    FailedPreconditionError,
    FieldViolation,
    InvalidArgumentError,
    Location,
    NotFoundError,
    PocketdError,
    ResourceExhaustedError,
    UnavailableError,
)
from tests.conftest import make_settings


@pytest.mark.parametrize(
    ("exc", "code", "detail"),
    [
        (
            InvalidArgumentError([FieldViolation("a.b", "bad")]),
            code_pb2.INVALID_ARGUMENT,
            error_details_pb2.BadRequest,
        ),
        (
            NotFoundError("memory", "m1", Location("memory_id")),
            code_pb2.NOT_FOUND,
            error_details_pb2.ResourceInfo,
        ),
        (
            FailedPreconditionError("no encoder", "ENCODER_DISABLED"),
            code_pb2.FAILED_PRECONDITION,
            error_details_pb2.ErrorInfo,
        ),
        (UnavailableError("starting"), code_pb2.UNAVAILABLE, None),
        (
            ResourceExhaustedError("busy", "server.max_concurrent_calls"),
            code_pb2.RESOURCE_EXHAUSTED,
            error_details_pb2.QuotaFailure,
        ),
        (DeadlineExceededError("late"), code_pb2.DEADLINE_EXCEEDED, None),
        (CallCancelledError("gone"), code_pb2.CANCELLED, None),
        (PocketdError("unmapped"), code_pb2.INTERNAL, None),
        (RuntimeError("secret path /etc/x"), code_pb2.INTERNAL, None),
    ],
)
def test_each_error_maps_to_its_status_and_detail(
    exc: Exception, code: int, detail: type | None
) -> None:
    st = to_status(exc)
    assert st.code == code
    if detail is not None:
        assert st.details and st.details[0].Is(detail.DESCRIPTOR)
    if code == code_pb2.INTERNAL:
        assert st.message == "internal error"  # nothing internal leaks


async def test_before_the_stores_load_health_is_not_serving_and_calls_are_unavailable(
    tmp_path: Path,
) -> None:
    executor = WorkerPools(1, 1)
    srv = GrpcServer(make_settings(tmp_path), executor)
    port = await srv.start("127.0.0.1:0")
    try:
        ch = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
        h = await health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest())
        assert h.status == health_pb2.HealthCheckResponse.NOT_SERVING
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await spb_grpc.MemoryServiceStub(ch).Stats(spb.StatsRequest())
        assert info.value.code() == grpc.StatusCode.UNAVAILABLE
    finally:
        await srv.drain(0)
        executor.shutdown()


def test_the_undecodable_log_is_rate_limited_and_counts_what_it_held_back(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from server.api.guard import RateLimitedLog

    now = [100.0]
    log = RateLimitedLog(10.0, clock=lambda: now[0])
    caplog.set_level("WARNING")
    for _ in range(5):
        log.warn("undecodable request on %s", "/m")
    now[0] += 10.5
    log.warn("undecodable request on %s", "/m")
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        "undecodable request on /m",
        "undecodable request on /m (4 more like it in the last 10s)",
    ]


@pytest.mark.parametrize(
    ("where", "batch", "path"),
    [
        (Location("supersedes", 3, 0), True, "items[3].supersedes[0]"),
        (Location("supersedes", 0, 2), False, "supersedes[2]"),
        (Location("blob", 1), True, "items[1].record.blob"),
        (Location("blob", 0), False, "record.blob"),
        (Location("memory_id"), True, "memory_id"),
    ],
)
def test_core_locations_render_as_wire_field_paths(where: Location, batch: bool, path: str) -> None:
    assert field_path(where, batch) == path
