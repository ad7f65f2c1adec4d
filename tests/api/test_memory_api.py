"""MemoryService over a real channel to an in-process server on port 0."""

from __future__ import annotations

import math
import time
from pathlib import Path

import grpc
import numpy as np
import pytest
from google.rpc import error_details_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from grpc_status import rpc_status

from pocketd import AsyncClient, MemoryInput
from pocketd.v1 import memory_pb2 as pb
from pocketd.v1 import memory_service_pb2 as spb
from pocketd.v1 import memory_service_pb2_grpc as spb_grpc
from server.adapters.onnx_encoder import OnnxTextEncoder
from tests.conftest import DAY, DIM, RunningServer, make_settings, start_server


def stub(srv: RunningServer) -> spb_grpc.MemoryServiceStub:
    return spb_grpc.MemoryServiceStub(grpc.aio.insecure_channel(srv.target))


def record(**kw: object) -> pb.MemoryRecord:
    base: dict[str, object] = {
        "namespace": "ns1",
        "kind": pb.MEMORY_KIND_FACT,
        "text": "The build host is ci-7",
    }
    base.update(kw)
    return pb.MemoryRecord(**base)  # type: ignore[arg-type]


def violations(err: grpc.aio.AioRpcError) -> dict[str, str]:
    status = rpc_status.from_call(err)  # type: ignore[arg-type]
    assert status is not None, "no rich status"
    out: dict[str, str] = {}
    for d in status.details:
        if d.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            br = error_details_pb2.BadRequest()
            d.Unpack(br)
            out.update({v.field: v.description for v in br.field_violations})
    return out


async def expect(call: object, code: grpc.StatusCode) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await call  # type: ignore[misc]
    assert info.value.code() == code, info.value.details()
    return info.value


async def test_round_trip_with_the_typed_client(server: RunningServer) -> None:
    async with AsyncClient(server.target) as c:
        r = await c.remember(
            "alice",
            "Alice only uses Android phones",
            kind="preference",
            session_id="s1",
            tags=["device"],
            source_type="user_statement",
        )
        assert r.decision == "stored" and r.stored and r.importance == 4
        assert r.expires_at is not None
        got = await c.get("alice", r.memory_id)
        assert got.text == "Alice only uses Android phones" and got.kind == "preference"
        assert (
            got.tier == "warm" and got.source_type == "user_statement" and got.tags == ("device",)
        )
        res = await c.recall("alice", "which phone does Alice use")
        assert res.hits[0].memory.memory_id == r.memory_id
        s = res.hits[0].score
        assert s.vector_hit and s.final == pytest.approx(s.fused * s.decay)
        rejected = await c.remember("alice", "thanks!", kind="episode")
        assert (
            rejected.decision == "rejected"
            and not rejected.stored
            and "small talk" in rejected.reason
        )
        batch = await c.remember_batch(
            [
                MemoryInput("alice", "Alice's invoice address is Berlin", kind="fact"),
                MemoryInput("alice", "ok", kind="episode"),
                MemoryInput(
                    "alice",
                    "",
                    vector=[1.0] + [0.0] * (DIM - 1),
                    kind="observation",
                    modality="image",
                    blob_uri="file:///tmp/shot.png",
                    blob_mime_type="image/png",
                ),
            ]
        )
        assert [b.decision for b in batch] == ["stored", "rejected", "stored"]
        st = await c.stats("alice")
        assert (
            st.namespaces[0].record_count == 3 and st.namespaces[0].tiers["hot"] == 0
        )  # the observation has no session: it arrives warm
        assert await c.forget("alice", batch[0].memory_id) == 1
        assert await c.forget("alice", session_id="s1") == 1
        assert (await c.stats("alice")).namespaces[0].record_count == 1


async def test_recall_orders_an_old_fact_below_a_new_one_over_grpc(server: RunningServer) -> None:
    async with AsyncClient(server.target) as c:
        old = await c.remember(
            "n", "The app does not support Android", created_at=time.time() - 40 * DAY
        )
        new = await c.remember("n", "The app now supports Android")
        # The flipped negation of the same thing superseded the old fact, no id given.
        hits = (await c.recall("n", "does the app support Android")).hits
        assert old.memory_id not in [h.memory.memory_id for h in hits]
        asked = "does the app support Android"
        hits = (await c.recall("n", asked, include_obsolete=True)).hits
        assert [h.memory.memory_id for h in hits[:2]] == [new.memory_id, old.memory_id]
        assert hits[1].memory.superseded_by == new.memory_id
        assert hits[1].memory.supersede_reason == "value:negation"
        assert hits[1].score.decay == pytest.approx(0.4)


async def test_health_serving_and_reflection(server: RunningServer) -> None:
    ch = grpc.aio.insecure_channel(server.target)
    h = await health_pb2_grpc.HealthStub(ch).Check(
        health_pb2.HealthCheckRequest(service="pocketd.v1.MemoryService")
    )
    assert h.status == health_pb2.HealthCheckResponse.SERVING
    refl = reflection_pb2_grpc.ServerReflectionStub(ch)
    async for resp in refl.ServerReflectionInfo(
        iter([reflection_pb2.ServerReflectionRequest(list_services="")])
    ):
        names = {s.name for s in resp.list_services_response.service}
        assert {"pocketd.v1.MemoryService", "grpc.health.v1.Health"} <= names
        break
    # A method's name finds its service's file, as grpcurl and ghz ask for it; a name that
    # is no method of a service is still NOT_FOUND.
    for symbol, found in (
        ("pocketd.v1.MemoryService.Recall", True),
        ("pocketd.v1.LedgerService.Reserve", True),
        ("pocketd.v1.MemoryService", True),
        ("pocketd.v1.MemoryService.NoSuchMethod", False),
    ):
        req = reflection_pb2.ServerReflectionRequest(file_containing_symbol=symbol)
        async for resp in refl.ServerReflectionInfo(iter([req])):
            files = resp.file_descriptor_response.file_descriptor_proto
            assert bool(files) is found, symbol
            assert found or resp.error_response.error_code == grpc.StatusCode.NOT_FOUND.value[0]
            break


BAD_REMEMBER = [
    (record(text=""), "record", "at least one of text, vector, blob.data or blob.uri"),
    (record(text="x" * 40_000), "record.text", "maximum is 32768"),
    (record(vector=[0.1] * 3), "record.vector", "embedding_dim is 512"),
    (record(vector=[math.nan] + [0.1] * (DIM - 1)), "record.vector", "NaN or Inf"),
    (record(vector=[math.inf] + [0.1] * (DIM - 1)), "record.vector", "NaN or Inf"),
    (record(vector=[0.0] * DIM), "record.vector", "zero vector"),
    (record(kind=42), "record.kind", "not a known MemoryKind"),
    (record(kind=pb.MEMORY_KIND_UNSPECIFIED), "record.kind", "is required"),
    (record(modality=9), "record.modality", "not a known Modality"),
    (record(source_type=77), "record.source_type", "not a known SourceType"),
    (record(importance=0), "record.importance", "outside 1-5"),
    (record(importance=6), "record.importance", "outside 1-5"),
    (record(importance=-1), "record.importance", "outside 1-5"),
    (record(namespace=""), "record.namespace", "is required"),
    (record(namespace="bad namespace!"), "record.namespace", "must be 1-128 characters"),
    (record(namespace="x" * 200), "record.namespace", "must be 1-128 characters"),
    (record(memory_id="has space"), "record.memory_id", "must be 1-128 characters"),
    (record(tags=[""]), "record.tags[0]", "1-64 characters"),
]


@pytest.mark.parametrize(("rec", "field", "why"), BAD_REMEMBER)
async def test_bad_records_are_invalid_argument_naming_the_field(
    server: RunningServer, rec: pb.MemoryRecord, field: str, why: str
) -> None:
    err = await expect(
        stub(server).Remember(spb.RememberRequest(record=rec)), grpc.StatusCode.INVALID_ARGUMENT
    )
    v = violations(err)
    assert field in v and why in v[field], v


async def test_batch_errors_name_the_item(server: RunningServer) -> None:
    req = spb.RememberBatchRequest(
        items=[
            spb.RememberRequest(record=record()),
            spb.RememberRequest(record=record(vector=[1.0])),
        ]
    )
    v = violations(await expect(stub(server).RememberBatch(req), grpc.StatusCode.INVALID_ARGUMENT))
    assert "items[1].record.vector" in v
    v = violations(
        await expect(
            stub(server).RememberBatch(spb.RememberBatchRequest()), grpc.StatusCode.INVALID_ARGUMENT
        )
    )
    assert "items" in v
    # Nothing of a rejected batch is stored.
    st = await stub(server).Stats(spb.StatsRequest(namespace="ns1"))
    assert len(st.namespaces) == 0


@pytest.mark.parametrize(
    ("req", "field"),
    [
        (spb.RecallRequest(namespace="ns1", query_text="x", top_k=0), "top_k"),
        (spb.RecallRequest(namespace="ns1", query_text="x", top_k=-3), "top_k"),
        (spb.RecallRequest(namespace="ns1", query_text="x", top_k=101), "top_k"),
        (spb.RecallRequest(namespace="", query_text="x"), "namespace"),
        (spb.RecallRequest(namespace="a b", query_text="x"), "namespace"),
        (spb.RecallRequest(namespace="ns1"), "query_text"),
        (spb.RecallRequest(namespace="ns1", query_vector=[1.0, 2.0]), "query_vector"),
        (spb.RecallRequest(namespace="ns1", query_text="x", query_modality=12), "query_modality"),
        (
            spb.RecallRequest(namespace="ns1", query_text="x", filter=spb.MemoryFilter(kinds=[99])),
            "filter.kinds[0]",
        ),
        (
            spb.RecallRequest(
                namespace="ns1", query_text="x", filter=spb.MemoryFilter(min_importance=9)
            ),
            "filter.min_importance",
        ),
    ],
)
async def test_bad_recalls_are_invalid_argument_naming_the_field(
    server: RunningServer, req: spb.RecallRequest, field: str
) -> None:
    v = violations(await expect(stub(server).Recall(req), grpc.StatusCode.INVALID_ARGUMENT))
    assert field in v, v


async def test_unknown_memory_is_not_found(server: RunningServer) -> None:
    s = stub(server)
    err = await expect(
        s.Get(spb.GetRequest(namespace="ns1", memory_id="nope")), grpc.StatusCode.NOT_FOUND
    )
    assert "nope" in (err.details() or "")
    await expect(
        s.Forget(spb.ForgetRequest(namespace="ns1", memory_id="nope")), grpc.StatusCode.NOT_FOUND
    )
    err = await expect(
        s.Remember(spb.RememberRequest(record=record(), supersedes=["ghost"])),
        grpc.StatusCode.NOT_FOUND,
    )
    assert "supersedes[0]" in violations(err)
    v = violations(
        await expect(s.Get(spb.GetRequest(namespace="ns1")), grpc.StatusCode.INVALID_ARGUMENT)
    )
    assert "memory_id" in v


async def test_forget_needs_a_target_and_a_non_empty_filter(server: RunningServer) -> None:
    s = stub(server)
    v = violations(
        await expect(s.Forget(spb.ForgetRequest(namespace="ns1")), grpc.StatusCode.INVALID_ARGUMENT)
    )
    assert "target" in v
    req = spb.ForgetRequest(namespace="ns1", filter=spb.MemoryFilter())
    v = violations(await expect(s.Forget(req), grpc.StatusCode.INVALID_ARGUMENT))
    assert "filter" in v
    await s.Remember(spb.RememberRequest(record=record()))
    req.all = True
    assert (await s.Forget(req)).forgotten_count == 1


async def test_too_large_a_message_is_resource_exhausted(
    tmp_path: Path, encoder: OnnxTextEncoder
) -> None:
    import msgspec

    settings = make_settings(tmp_path)
    settings = msgspec.structs.replace(
        settings, server=msgspec.structs.replace(settings.server, max_message_bytes=64_000)
    )
    srv, executor = await start_server(tmp_path / "d", encoder, settings)
    try:
        big = record(text="y" * 30_000, tags=["z" * 60] * 30, topic="t" * 100)
        req = spb.RememberBatchRequest(items=[spb.RememberRequest(record=big)] * 4)
        await expect(stub(srv).RememberBatch(req), grpc.StatusCode.RESOURCE_EXHAUSTED)
    finally:
        await srv.grpc.drain(1)
        srv.engine.close()
        executor.shutdown()


async def test_no_encoder_is_failed_precondition(tmp_path: Path) -> None:
    srv, executor = await start_server(tmp_path / "d", None)
    try:
        err = await expect(
            stub(srv).Remember(spb.RememberRequest(record=record())),
            grpc.StatusCode.FAILED_PRECONDITION,
        )
        status = rpc_status.from_call(err)  # type: ignore[arg-type]
        info = error_details_pb2.ErrorInfo()
        assert status is not None and status.details[0].Unpack(info)
        assert info.reason == "ENCODER_DISABLED"
        ok = await stub(srv).Remember(spb.RememberRequest(record=record(vector=list(np.ones(DIM)))))
        assert ok.decision == spb.GATE_DECISION_STORED
    finally:
        await srv.grpc.drain(1)
        srv.engine.close()
        executor.shutdown()


async def test_a_blob_only_record_is_failed_precondition_naming_the_blob(
    server: RunningServer,
) -> None:
    """Two different screenshots with no text used to be encoded as "" and merged."""
    s = stub(server)
    shot = record(text="", kind=pb.MEMORY_KIND_OBSERVATION, blob=pb.BlobRef(uri="file:///a.png"))
    err = await expect(
        s.Remember(spb.RememberRequest(record=shot)), grpc.StatusCode.FAILED_PRECONDITION
    )
    status = rpc_status.from_call(err)  # type: ignore[arg-type]
    pre = error_details_pb2.PreconditionFailure()
    assert status is not None and any(d.Unpack(pre) for d in status.details)
    assert pre.violations[0].subject == "record.blob"
    assert pre.violations[0].type == "BLOB_NEEDS_TEXT"
    batch = spb.RememberBatchRequest(
        items=[spb.RememberRequest(record=record()), spb.RememberRequest(record=shot)]
    )
    err = await expect(s.RememberBatch(batch), grpc.StatusCode.FAILED_PRECONDITION)
    assert "items[1].record.blob" in str(rpc_status.from_call(err))  # type: ignore[arg-type]
    assert len((await s.Stats(spb.StatsRequest(namespace="ns1"))).namespaces) == 0
