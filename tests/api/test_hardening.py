"""Regression tests for the defects found by attacking pocketd from outside (the hardening issue):
caps, timestamps, extreme vectors, garbage bytes, look-alike identifiers, deadlines, cancellation
and the bound on concurrent calls. Each test fails on the code before the fix."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path

import grpc
import msgspec
import numpy as np
import pytest
from google.protobuf.timestamp_pb2 import Timestamp
from google.rpc import error_details_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_status import rpc_status

from pocketd import AsyncClient
from pocketd.v1 import memory_pb2 as pb
from pocketd.v1 import memory_service_pb2 as spb
from server.api.calls import Lane
from server.core.settings import Settings
from tests.api.test_memory_api import expect, record, stub, violations
from tests.conftest import DIM, RunningServer, make_settings, start_server, wait_for

MAX_TS = 253_402_300_799  # 9999-12-31T23:59:59Z


def ts(seconds: int, nanos: int = 0) -> Timestamp:
    return Timestamp(seconds=seconds, nanos=nanos)


class SlowEncoder:
    """A stand-in encoder whose every batch takes `delay` seconds: work long enough to stop."""

    dim = DIM

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.calls = 0
        self.started = threading.Event()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        self.started.set()
        time.sleep(self.delay)
        rng = np.random.default_rng(len(texts))
        v = rng.normal(size=(len(texts), DIM)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)


async def until(cond: Callable[[], bool], within: float = 60.0) -> None:
    """Wait for a condition, with a deadline generous enough for a loaded machine."""
    deadline = time.monotonic() + within
    while not cond():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


def with_server(settings: Settings, **server: object) -> Settings:
    return msgspec.structs.replace(
        settings, server=msgspec.structs.replace(settings.server, **server)
    )


@pytest.fixture
async def slow_server(tmp_path: Path) -> AsyncIterator[tuple[RunningServer, SlowEncoder]]:
    enc = SlowEncoder(0.3)
    srv, executor = await start_server(tmp_path / "slow", enc)  # type: ignore[arg-type]
    yield srv, enc
    await srv.grpc.drain(1.0)
    srv.engine.close()
    executor.shutdown()


def in_flight(srv: RunningServer) -> int:
    return srv.grpc.servicer._calls.in_flight


def encoded_batch(n: int, namespace: str = "slow") -> spb.RememberBatchRequest:
    """`n` distinct texts for the server to encode (in chunks of 64, one deadline check each)."""
    return spb.RememberBatchRequest(
        items=[
            spb.RememberRequest(
                record=record(namespace=namespace, text=f"Ticket {i} needs a refund", importance=4)
            )
            for i in range(n)
        ]
    )


# 1. Caps on repeated fields, with kinds and modalities deduplicated.


async def test_a_huge_kinds_filter_is_refused_at_once_naming_the_cap(server: RunningServer) -> None:
    req = spb.RecallRequest(
        namespace="ns1",
        query_text="x",
        filter=spb.MemoryFilter(kinds=[pb.MEMORY_KIND_FACT] * 20_000),
    )
    v = violations(await expect(stub(server).Recall(req), grpc.StatusCode.INVALID_ARGUMENT))
    assert "maximum is 16" in v["filter.kinds"]  # before the cap, 20k entries took 45 s of work


def test_repeated_kinds_and_modalities_are_dropped_before_the_engine_sees_them() -> None:
    from server.api.convert import memory_filter
    from server.core.memory.model import Kind, Modality

    f = memory_filter(spb.MemoryFilter(kinds=[2, 2, 1, 2], modalities=[1, 1, 2]))
    assert f.kinds == (Kind.FACT, Kind.PREFERENCE)
    assert f.modalities == (Modality.TEXT, Modality.IMAGE)


async def test_repeated_kinds_and_modalities_count_once(server: RunningServer) -> None:
    s = stub(server)
    got = await s.Remember(spb.RememberRequest(record=record(kind=pb.MEMORY_KIND_FACT)))
    flt = spb.MemoryFilter(
        kinds=[pb.MEMORY_KIND_FACT] * 16, modalities=[pb.MODALITY_TEXT] * 16, tags=[]
    )
    res = await s.Recall(spb.RecallRequest(namespace="ns1", query_text="build host", filter=flt))
    assert [h.record.memory_id for h in res.hits] == [got.memory_id]


@pytest.mark.parametrize(
    ("req", "field", "why"),
    [
        (
            spb.RecallRequest(
                namespace="ns1", query_text="x", filter=spb.MemoryFilter(modalities=[1] * 17)
            ),
            "filter.modalities",
            "maximum is 16",
        ),
        (
            spb.RecallRequest(
                namespace="ns1", query_text="x", filter=spb.MemoryFilter(tags=["t"] * 33)
            ),
            "filter.tags",
            "maximum is 32",
        ),
        (
            spb.RecallRequest(namespace="ns1", query_text="x" * 4097),
            "query_text",
            "maximum is 4096",
        ),
        (
            spb.RecallRequest(namespace="ns1", query_text="x", min_score=-0.5),
            "min_score",
            "outside",
        ),
        (
            spb.RecallRequest(namespace="ns1", query_text="x", min_score=float("nan")),
            "min_score",
            "outside",
        ),
        (
            spb.RecallRequest(
                namespace="ns1",
                query_text="x",
                filter=spb.MemoryFilter(created_after=ts(-1)),
            ),
            "filter.created_after",
            "1970",
        ),
        (
            spb.RecallRequest(
                namespace="ns1", query_text="x", filter=spb.MemoryFilter(session_id="s 1")
            ),
            "filter.session_id",
            "characters of",
        ),
    ],
)
async def test_capped_and_ruled_recall_fields(
    server: RunningServer, req: spb.RecallRequest, field: str, why: str
) -> None:
    v = violations(await expect(stub(server).Recall(req), grpc.StatusCode.INVALID_ARGUMENT))
    assert why in v.get(field, ""), v


# 2. Timestamps in a documented range, validated before anything is stored.


@pytest.mark.parametrize(
    ("rec", "field", "why"),
    [
        (record(expires_at=ts(2**63 - 1)), "record.expires_at", "9999-12-31"),
        (record(created_at=ts(1_000_000_000_000)), "record.created_at", "9999-12-31"),
        (record(created_at=ts(-5)), "record.created_at", "1970-01-01"),
        (record(created_at=ts(100, nanos=-1)), "record.created_at", "nanos"),
        (record(expires_at=ts(100, nanos=2_000_000_000)), "record.expires_at", "nanos"),
        (record(created_at=ts(int(time.time()) + 3600)), "record.created_at", "ahead"),
        (record(created_at=ts(2000), expires_at=ts(1000)), "record.expires_at", "after"),
    ],
)
async def test_out_of_range_timestamps_are_invalid_argument(
    server: RunningServer, rec: pb.MemoryRecord, field: str, why: str
) -> None:
    err = await expect(
        stub(server).Remember(spb.RememberRequest(record=rec)), grpc.StatusCode.INVALID_ARGUMENT
    )
    assert why in violations(err).get(field, ""), violations(err)


async def test_a_batch_with_one_bad_timestamp_stores_nothing(server: RunningServer) -> None:
    s = stub(server)
    items = [spb.RememberRequest(record=record(text=f"fact number {i}")) for i in range(5)]
    items[3].record.expires_at.CopyFrom(ts(2**63 - 1))
    v = violations(
        await expect(
            s.RememberBatch(spb.RememberBatchRequest(items=items)),
            grpc.StatusCode.INVALID_ARGUMENT,
        )
    )
    assert "items[3].record.expires_at" in v
    assert len((await s.Stats(spb.StatsRequest(namespace="ns1"))).namespaces) == 0


async def test_the_extremes_of_the_range_are_kept_as_given(server: RunningServer) -> None:
    """1970-01-01 is a time, not "unset"; year 9999 reads back in the Python client. (A
    created_at sent on write is the event time, read back as occurred_at.)"""
    s = stub(server)
    r = await s.Remember(
        spb.RememberRequest(record=record(created_at=ts(0), expires_at=ts(MAX_TS)))
    )
    got = (await s.Get(spb.GetRequest(namespace="ns1", memory_id=r.memory_id))).record
    assert got.HasField("occurred_at") and got.occurred_at.seconds == 0
    assert got.expires_at.seconds == MAX_TS and got.created_at.seconds > 0  # stored now
    async with AsyncClient(server.target) as c:
        mem = await c.get("ns1", r.memory_id)
        assert mem.occurred_at is not None and mem.occurred_at.year == 1970
        assert mem.expires_at is not None and mem.expires_at.year == 9999
        res = await c.recall("ns1", "build host", include_expired=True)
        assert res.hits and res.hits[0].memory.expires_at.year == 9999  # type: ignore[union-attr]


# 3. Extreme vector values keep their direction.


@pytest.mark.parametrize("scale", [1e20, 1e-30, 1e38])
async def test_a_vector_scaled_far_out_keeps_its_direction(
    server: RunningServer, scale: float
) -> None:
    rng = np.random.default_rng(3)
    base = rng.normal(size=DIM)
    base /= np.linalg.norm(base)
    scaled = (base * scale / np.abs(base).max()).astype(np.float32)
    assert np.isfinite(scaled).all()
    s = stub(server)
    other = rng.normal(size=DIM).astype(np.float32)
    await s.Remember(spb.RememberRequest(record=record(text="", vector=list(other), kind=6)))
    r = await s.Remember(spb.RememberRequest(record=record(text="", vector=list(scaled), kind=6)))
    res = await s.Recall(
        spb.RecallRequest(namespace="ns1", query_vector=list(base.astype(np.float32)), top_k=1)
    )
    assert res.hits[0].record.memory_id == r.memory_id
    assert res.hits[0].score.vector == pytest.approx(1.0, abs=1e-3)


@pytest.mark.parametrize(
    "values",
    [
        [1e-45] + [0.0] * (DIM - 1),  # a denormal float32 keeps a direction: accepted below
        [0.0] * DIM,
    ],
)
async def test_only_a_vector_without_direction_is_refused(
    server: RunningServer, values: list[float]
) -> None:
    req = spb.RememberRequest(record=record(text="", vector=values, kind=6))
    if any(values):
        assert (await stub(server).Remember(req)).decision == spb.GATE_DECISION_STORED
    else:
        v = violations(await expect(stub(server).Remember(req), grpc.StatusCode.INVALID_ARGUMENT))
        assert "no direction" in v["record.vector"]


# 4. Garbage bytes are INVALID_ARGUMENT, with a rate-limited log line.

METHODS = [
    "/pocketd.v1.MemoryService/Remember",
    "/pocketd.v1.MemoryService/RememberBatch",
    "/pocketd.v1.MemoryService/Recall",
    "/pocketd.v1.MemoryService/Get",
    "/pocketd.v1.MemoryService/Forget",
    "/pocketd.v1.MemoryService/Stats",
    "/pocketd.v1.MemoryService/Reconcile",
    "/pocketd.v1.MemoryService/Unsupersede",
    "/pocketd.v1.MemoryService/EndSession",
    "/pocketd.v1.MemoryService/Maintain",
    "/grpc.health.v1.Health/Check",
]


@pytest.mark.parametrize("method", METHODS)
async def test_garbage_bytes_are_invalid_argument(
    server: RunningServer, method: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    async with grpc.aio.insecure_channel(server.target) as ch:
        call = ch.unary_unary(method)
        for junk in (b"\xff", b"\x0a\xff\xff\xff\xff\x0f", b"\x08" * 7, bytes(range(256))):
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await call(junk, timeout=10)
            assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert "DecodeError" not in (info.value.details() or "")
    lines = [r for r in caplog.records if "undecodable" in r.getMessage()]
    assert len(lines) == 1  # rate-limited: one line per interval, not one per call
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]  # no gRPC traceback


async def test_garbage_on_the_reflection_stream_is_invalid_argument(server: RunningServer) -> None:
    async with grpc.aio.insecure_channel(server.target) as ch:
        call = ch.stream_stream("/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo")
        with pytest.raises(grpc.aio.AioRpcError) as info:
            async for _ in call(iter([b"\xff\xff"]), timeout=10):
                pass
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT


# 5. Look-alike identifiers.


@pytest.mark.parametrize(
    ("rec", "field"),
    [
        (record(namespace="r4\n"), "record.namespace"),
        (record(memory_id="id\n"), "record.memory_id"),
        (record(memory_id="a" * 129), "record.memory_id"),
        (record(session_id="s1\n"), "record.session_id"),
        (record(session_id="x" * 129), "record.session_id"),
        (record(group_id="g 1"), "record.group_id"),
        (record(tags=["ok", "bad\ttag"]), "record.tags[1]"),
        (record(tags=[" padded"]), "record.tags[0]"),
        (record(tags=["\u200bzero-width"]), "record.tags[0]"),
        (record(topic="line\nbreak"), "record.topic"),
        (record(source=pb.MemorySource(tool="t\x00")), "record.source.tool"),
        (record(source=pb.MemorySource(task_id="task 1")), "record.source.task_id"),
        (record(blob=pb.BlobRef(uri="no scheme")), "record.blob.uri"),
        (record(blob=pb.BlobRef(uri="s3://b/k", mime_type="png")), "record.blob.mime_type"),
        (record(blob=pb.BlobRef(uri="s3://b/k", sha256="XYZ")), "record.blob.sha256"),
        (record(blob=pb.BlobRef(mime_type="image/png")), "record.blob.uri"),
    ],
)
async def test_look_alike_identifiers_and_labels_are_refused(
    server: RunningServer, rec: pb.MemoryRecord, field: str
) -> None:
    err = await expect(
        stub(server).Remember(spb.RememberRequest(record=rec)), grpc.StatusCode.INVALID_ARGUMENT
    )
    assert field in violations(err), violations(err)


async def test_unicode_labels_are_welcome(server: RunningServer) -> None:
    r = await stub(server).Remember(
        spb.RememberRequest(record=record(tags=["设备", "Café au lait"], topic="支付 方式"))
    )
    assert r.decision == spb.GATE_DECISION_STORED


# 1 (cont.). Work honours the deadline and cancellation; concurrent calls are bounded.


async def test_work_stops_at_the_deadline_and_nothing_is_stored(
    slow_server: tuple[RunningServer, SlowEncoder],
) -> None:
    srv, enc = slow_server
    s = stub(srv)
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await s.RememberBatch(encoded_batch(640), timeout=0.5)  # 10 chunks of 0.3 s
    assert info.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    await until(lambda: in_flight(srv) == 0)
    assert enc.calls < 10, "the encoding ran to the end although nobody waited for it"
    assert len((await s.Stats(spb.StatsRequest(namespace="slow"))).namespaces) == 0


async def test_a_cancelled_call_stops_its_work(
    slow_server: tuple[RunningServer, SlowEncoder],
) -> None:
    srv, enc = slow_server
    call = stub(srv).RememberBatch(encoded_batch(640), timeout=120)
    await until(enc.started.is_set)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    await until(lambda: in_flight(srv) == 0)
    assert enc.calls < 10
    st = await stub(srv).Stats(spb.StatsRequest(namespace="slow"), timeout=10)
    assert len(st.namespaces) == 0


async def test_beyond_the_bound_calls_are_refused_at_once(tmp_path: Path) -> None:
    enc = SlowEncoder(1.0)  # 10 s of work per call: still busy when the third call comes
    settings = with_server(make_settings(tmp_path), max_concurrent_calls=2)
    srv, executor = await start_server(tmp_path / "b", enc, settings)  # type: ignore[arg-type]
    try:
        s = stub(srv)
        busy = [s.RememberBatch(encoded_batch(640), timeout=120) for _ in range(2)]
        await until(lambda: in_flight(srv) == 2)
        err = await expect(  # refused at once, not queued behind the busy calls
            s.RememberBatch(encoded_batch(1), timeout=30), grpc.StatusCode.RESOURCE_EXHAUSTED
        )
        status = rpc_status.from_call(err)  # type: ignore[arg-type]
        quota = error_details_pb2.QuotaFailure()
        assert status is not None and status.details[0].Unpack(quota)
        assert quota.violations[0].subject == "server.max_concurrent_calls"
        # Reads are counted apart from writes, a single Remember apart from the imports (its
        # own lane, bound and pool), and health is not a MemoryService call: all still answer.
        assert srv.grpc.calls.in_lane(Lane.BULK) == 2
        vec = list(np.random.default_rng(6).normal(size=DIM))
        one = await s.Remember(
            spb.RememberRequest(record=record(text="", vector=vec, kind=6)), timeout=30
        )
        assert one.memory_id
        assert (await s.Stats(spb.StatsRequest(), timeout=30)).pending_index >= 0
        h = await health_pb2_grpc.HealthStub(grpc.aio.insecure_channel(srv.target)).Check(
            health_pb2.HealthCheckRequest()
        )
        assert h.status == health_pb2.HealthCheckResponse.SERVING
        for c in busy:
            c.cancel()
        await until(lambda: in_flight(srv) == 0)
        assert (await s.Stats(spb.StatsRequest(), timeout=30)).pending_index == 0
    finally:
        await srv.grpc.drain(1)
        srv.engine.close()
        executor.shutdown()


async def test_every_call_is_logged_once_without_its_text(
    server: RunningServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="pocketd.calls")
    s = stub(server)
    await s.Remember(spb.RememberRequest(record=record(text="secret card 4111 1111 1111 1111")))
    await expect(
        s.Get(spb.GetRequest(namespace="ns1", memory_id="nope")), grpc.StatusCode.NOT_FOUND
    )

    # The server logs a failed call once its handler has unwound, which can be just after the
    # client got the status.
    def logged() -> list[logging.LogRecord]:
        return [r for r in caplog.records if r.name == "pocketd.calls"]

    await asyncio.to_thread(wait_for, lambda: len(logged()) >= 2, 30.0)
    calls = logged()
    assert [r.fields["method"] for r in calls] == ["Remember", "Get"]  # type: ignore[attr-defined]
    assert [r.fields["status"] for r in calls] == ["OK", "NOT_FOUND"]  # type: ignore[attr-defined]
    assert all(r.fields["namespace"] == "ns1" for r in calls)  # type: ignore[attr-defined]
    assert not any("4111" in r.getMessage() for r in caplog.records)


async def test_a_slow_call_is_logged_at_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="pocketd.calls")
    settings = with_server(make_settings(tmp_path), slow_call_ms=1.0)
    srv, executor = await start_server(tmp_path / "w", SlowEncoder(0.05), settings)  # type: ignore[arg-type]
    try:
        await stub(srv).Remember(spb.RememberRequest(record=record()))
        (line,) = [r for r in caplog.records if r.name == "pocketd.calls"]
        assert line.levelno == logging.WARNING and "slow" in line.getMessage()
    finally:
        await srv.grpc.drain(1)
        srv.engine.close()
        executor.shutdown()


# Recall's relevance floor.


async def test_recall_leaves_out_irrelevant_hits(server: RunningServer) -> None:
    async with AsyncClient(server.target) as c:
        phone = await c.remember("alice", "Alice only uses Android phones", kind="preference")
        await c.remember(
            "alice", "Build failed with error E1234; fixed by raising the disk quota", kind="skill"
        )
        hits = (await c.recall("alice", "E1234")).hits
        assert [h.memory.kind for h in hits] == ["skill"]
        everything = (await c.recall("alice", "E1234", min_score=0.0)).hits
        assert phone.memory_id in [h.memory.memory_id for h in everything]
        assert all(h.score.fused >= 0.1 for h in hits)


async def test_writers_held_by_backpressure_never_keep_a_recall_waiting(tmp_path: Path) -> None:
    """Reads and writes have their own workers: with every write worker stuck waiting for an
    indexer that makes no progress, Recall still answers."""
    import msgspec as ms

    settings = make_settings(tmp_path)
    hot = ms.structs.replace(settings.memory.hot, max_pending_index=1)
    settings = ms.structs.replace(settings, memory=ms.structs.replace(settings.memory, hot=hot))
    srv, pools = await start_server(tmp_path / "bp", None, settings)
    try:
        s = stub(srv)
        vec = list(np.random.default_rng(5).normal(size=DIM))
        srv.engine.indexer.stop()  # nothing gets indexed from here on
        for _ in range(2):  # two unindexed records: over max_pending_index (1)
            await s.Remember(spb.RememberRequest(record=record(text="", vector=vec, kind=6)))
        stuck = [
            s.Remember(spb.RememberRequest(record=record(text="", vector=vec, kind=4)), timeout=60)
            for _ in range(6)  # more than all the worker threads together
        ]
        await until(lambda: in_flight(srv) == 6)
        # Before the pools were split, this waited behind the stuck writers for the 30 s
        # backpressure timeout.
        res = await s.Recall(spb.RecallRequest(namespace="ns1", query_vector=vec), timeout=10)
        assert res.hits
        # A bad write is refused at once too: it is validated before it queues for a writer.
        with pytest.raises(grpc.aio.AioRpcError) as bad:
            await s.Remember(
                spb.RememberRequest(record=record(text="", vector=vec[:3], kind=4)), timeout=10
            )
        assert bad.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "record.vector" in (bad.value.details() or "")
        for c in stuck:
            c.cancel()
        await until(lambda: in_flight(srv) == 0)
    finally:
        await srv.grpc.drain(1)
        srv.engine.close()
        pools.shutdown()
