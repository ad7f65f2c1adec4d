"""The Python client's media calls (issue 30) against a fake MemoryService: what
remember_image, remember_audio, remember_table and recall_by_image put on the wire, their
deadlines, and the media fields the typed results read back (processing state, warnings, a
hit's group members and vector space, a memory's blob, the media queue's stats).

The real server's media pipeline is tested in its own suites; here the client alone, so the
fake answers with every media field set."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from typing import Any

import grpc
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pocketd import AsyncClient, Blob, Client, MediaStats
from pocketd.requests import MEDIA_WAIT_TIMEOUT, media_input
from pocketd.v1 import memory_pb2 as pb
from pocketd.v1 import memory_service_pb2 as spb
from pocketd.v1 import memory_service_pb2_grpc as spb_grpc

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256))  # the server sniffs; the client sends as is
WAV = b"RIFF\x24\x00\x00\x00WAVEfmt " + bytes(32)
SHA = "ab" * 32
# gRPC rounds a deadline on the wire (to a few digits of its unit), so the server may see a
# little more time left than the client gave.
SLACK = 0.5


class Fake(spb_grpc.MemoryServiceServicer):  # type: ignore[misc]
    """Records each request and the deadline it had left; answers with the media fields set.
    `unavailable`: how many calls to answer UNAVAILABLE first."""

    def __init__(self) -> None:
        self.requests: list[Any] = []
        self.deadlines: list[float] = []
        self.unavailable = 0

    async def _note(self, request: Any, context: grpc.aio.ServicerContext) -> None:  # type: ignore[type-arg]
        self.requests.append(request)
        self.deadlines.append(context.time_remaining() or 0.0)
        if self.unavailable:
            self.unavailable -= 1
            await context.abort(grpc.StatusCode.UNAVAILABLE, "not serving yet")

    async def Remember(  # noqa: N802 (the proto's RPC name)
        self, request: spb.RememberRequest, context: grpc.aio.ServicerContext
    ) -> spb.RememberResponse:  # type: ignore[type-arg]
        await self._note(request, context)
        state = (
            pb.PROCESSING_STATE_READY if request.wait_processed else pb.PROCESSING_STATE_PROCESSING
        )
        return spb.RememberResponse(
            memory_id="m-img",
            decision=spb.GATE_DECISION_STORED,
            tier=pb.TIER_HOT,
            processing_state=state,
            warnings=["caption and image disagree (0.08 < 0.15)"],
        )

    async def RememberBatch(  # noqa: N802 (the proto's RPC name)
        self, request: spb.RememberBatchRequest, context: grpc.aio.ServicerContext
    ) -> spb.RememberBatchResponse:  # type: ignore[type-arg]
        await self._note(request, context)
        return spb.RememberBatchResponse(results=[spb.RememberResponse() for _ in request.items])

    async def Recall(  # noqa: N802 (the proto's RPC name)
        self, request: spb.RecallRequest, context: grpc.aio.ServicerContext
    ) -> spb.RecallResponse:  # type: ignore[type-arg]
        await self._note(request, context)
        record = pb.MemoryRecord(
            memory_id="m-ocr",
            modality=pb.MODALITY_IMAGE,
            text="Error E1234: refund declined",
            group_id="g1",
            blob=pb.BlobRef(uri=f"blob:sha256:{SHA}", mime_type="image/png", sha256=SHA),
        )
        score = pb.ScoreBreakdown(final=0.8, vector=0.7, vector_hit=True, vector_space="clip")
        hit = spb.RecallHit(record=record, score=score, group_member_ids=["m-img", "m-cap"])
        return spb.RecallResponse(hits=[hit])

    async def Get(  # noqa: N802 (the proto's RPC name)
        self, request: spb.GetRequest, context: grpc.aio.ServicerContext
    ) -> spb.GetResponse:  # type: ignore[type-arg]
        await self._note(request, context)
        blob = pb.BlobRef(
            uri=f"blob:sha256:{SHA}",
            mime_type="audio/wav",
            size_bytes=len(WAV),
            sha256=SHA,
            language="en",
            data=WAV if request.include_blob_data else b"",
        )
        record = pb.MemoryRecord(
            memory_id=request.memory_id,
            modality=pb.MODALITY_AUDIO,
            blob=blob,
            processing_state=pb.PROCESSING_STATE_FAILED,
            processing_note="no speech model for zh",
            space_vectors=[pb.SpaceVector(space="mine", values=[0.6, 0.8])],
        )
        return spb.GetResponse(record=record)

    async def Stats(  # noqa: N802 (the proto's RPC name)
        self, request: spb.StatsRequest, context: grpc.aio.ServicerContext
    ) -> spb.StatsResponse:  # type: ignore[type-arg]
        await self._note(request, context)
        media = spb.MediaStats(pending=3, processed=40, failed=2, blobs=37)
        return spb.StatsResponse(media=media)


@pytest.fixture
async def fake() -> AsyncIterator[tuple[str, Fake]]:
    servicer = Fake()
    server = grpc.aio.server()
    spb_grpc.add_MemoryServiceServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    yield f"127.0.0.1:{port}", servicer
    await server.stop(0)


async def blocking(target: str, call: Callable[[Client], Any]) -> Any:
    """`call` on a blocking Client, in a thread (the fake server runs on this loop)."""

    def run() -> Any:
        with Client(target) as c:
            return call(c)

    return await asyncio.get_running_loop().run_in_executor(None, run)


WHEN = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)


async def test_remember_image_sends_the_bytes_the_caption_and_the_fields(
    fake: tuple[str, Fake],
) -> None:
    target, f = fake
    async with AsyncClient(target) as c:
        r = await c.remember_image(
            "support",
            PNG,
            caption="the customer's refund error",
            session_id="s1",
            speaker="user",
            occurred_at=WHEN,
            tags=["refund"],
            group_id="g1",
        )
    assert (r.memory_id, r.decision, r.stored) == ("m-img", "stored", True)
    assert r.processing_state == "processing"
    assert r.warnings == ("caption and image disagree (0.08 < 0.15)",)
    req = f.requests[0]
    rec = req.record
    assert (rec.namespace, rec.modality, rec.kind) == (
        "support",
        pb.MODALITY_IMAGE,
        pb.MEMORY_KIND_OBSERVATION,
    )
    assert rec.blob.data == PNG and rec.blob.uri == "" and rec.blob.language == ""
    assert rec.text == "the customer's refund error"
    assert (rec.session_id, rec.speaker, list(rec.tags), rec.group_id) == (
        "s1",
        "user",
        ["refund"],
        "g1",
    )
    assert rec.occurred_at.ToDatetime(tzinfo=UTC) == WHEN
    assert not req.wait_processed
    # Without wait, the client's usual deadline (5 s).
    assert 3.0 < f.deadlines[0] <= 5.0 + SLACK


async def test_waiting_for_the_medium_to_be_read_lengthens_the_deadline(
    fake: tuple[str, Fake],
) -> None:
    target, f = fake
    async with AsyncClient(target, timeout=2.0) as c:
        r = await c.remember_image("support", PNG, wait=True, kind="fact")
    assert r.processing_state == "ready"
    assert f.requests[0].wait_processed
    assert f.requests[0].record.kind == pb.MEMORY_KIND_FACT
    assert MEDIA_WAIT_TIMEOUT - 5.0 < f.deadlines[0] <= MEDIA_WAIT_TIMEOUT + SLACK
    # remember_batch too, when an item waits.
    async with AsyncClient(target, timeout=2.0) as c:
        await c.remember_batch([media_input("support", "image", PNG, wait=True)])
    assert MEDIA_WAIT_TIMEOUT - 5.0 < f.deadlines[1] <= MEDIA_WAIT_TIMEOUT + SLACK


async def test_remember_audio_and_remember_table(fake: tuple[str, Fake]) -> None:
    target, f = fake
    async with AsyncClient(target) as c:
        await c.remember_audio("me", WAV, language="zh", caption="voice note from Bob")
        await c.remember_table("me", "sku,price\nA-1,3.20\n", caption="price list")
    audio, table = (r.record for r in f.requests)
    assert (audio.modality, audio.blob.data, audio.blob.language, audio.text) == (
        pb.MODALITY_AUDIO,
        WAV,
        "zh",
        "voice note from Bob",
    )
    assert (table.modality, table.blob.data, table.text) == (
        pb.MODALITY_TABLE,
        b"sku,price\nA-1,3.20\n",
        "price list",
    )
    assert audio.kind == table.kind == pb.MEMORY_KIND_OBSERVATION


async def test_recall_by_image_bytes_or_a_held_blob(fake: tuple[str, Fake]) -> None:
    target, f = fake
    async with AsyncClient(target) as c:
        res = await c.recall_by_image(
            "support", PNG, query_text="the error code", top_k=3, tags=["refund"]
        )
        await c.recall_by_image("support", sha256=SHA)
    by_bytes, by_hash = f.requests
    assert by_bytes.query_blob.data == PNG and by_bytes.query_blob.sha256 == ""
    assert by_bytes.query_modality == pb.MODALITY_IMAGE
    assert (by_bytes.query_text, by_bytes.top_k, list(by_bytes.filter.tags)) == (
        "the error code",
        3,
        ["refund"],
    )
    assert by_hash.query_blob.sha256 == SHA and by_hash.query_blob.data == b""
    assert by_hash.query_modality == pb.MODALITY_IMAGE and by_hash.query_text == ""
    (hit,) = res.hits
    assert hit.group_member_ids == ("m-img", "m-cap")
    assert (hit.score.vector_space, hit.score.vector_hit) == ("clip", True)
    assert hit.memory.blob == Blob(f"blob:sha256:{SHA}", "image/png", 0, SHA)
    assert hit.memory.processing_state == "ready"  # unset on the wire reads as ready


async def test_recall_carries_space_vectors_and_image_bytes(fake: tuple[str, Fake]) -> None:
    target, f = fake
    async with AsyncClient(target) as c:
        await c.recall("support", "refund", space_vectors={"mine": [0.6, 0.8]})
        await c.recall("support", "refund", image_data=PNG)
    spaces, image = f.requests
    (vec,) = spaces.query_space_vectors
    assert vec.space == "mine" and list(vec.values) == pytest.approx([0.6, 0.8])
    assert spaces.query_modality == pb.MODALITY_UNSPECIFIED and not spaces.HasField("query_blob")
    assert image.query_modality == pb.MODALITY_IMAGE and image.query_blob.data == PNG


async def test_get_with_the_blob_and_stats_of_the_media_queue(fake: tuple[str, Fake]) -> None:
    target, f = fake
    async with AsyncClient(target) as c:
        bare = await c.get("me", "m-audio")
        full = await c.get("me", "m-audio", include_blob_data=True)
        stats = await c.stats()
    assert [r.include_blob_data for r in f.requests[:2]] == [False, True]
    assert bare.blob is not None and bare.blob.data == b""
    assert full.blob == Blob(f"blob:sha256:{SHA}", "audio/wav", len(WAV), SHA, "en", WAV)
    assert (full.modality, full.processing_state, full.processing_note) == (
        "audio",
        "failed",
        "no speech model for zh",
    )
    assert full.space_vectors == {"mine": pytest.approx((0.6, 0.8))}
    assert stats.media == MediaStats(pending=3, processed=40, failed=2, blobs=37)


async def test_the_blocking_client_sends_the_same_requests(fake: tuple[str, Fake]) -> None:
    target, f = fake

    async def both(call: Callable[[Any], Any]) -> tuple[Any, Any]:
        async with AsyncClient(target) as c:
            a = await call(c)
        b = await blocking(target, call)
        return a, b

    calls: list[Callable[[Any], Any]] = [
        lambda c: c.remember_image("n", PNG, caption="x", tags=["t"], wait=True),
        lambda c: c.remember_audio("n", WAV, language="en"),
        lambda c: c.remember_table("n", b"a|b\n-|-\n1|2\n"),
        lambda c: c.recall_by_image("n", sha256=SHA, top_k=2),
        lambda c: c.get("n", "m1", include_blob_data=True),
    ]
    for call in calls:
        a, b = await both(call)
        assert a == b
    sent = f.requests
    assert len(sent) == 2 * len(calls)
    for i in range(0, len(sent), 2):
        assert sent[i] == sent[i + 1]


async def test_media_writes_are_not_retried(fake: tuple[str, Fake]) -> None:
    target, f = fake
    f.unavailable = 1
    async with AsyncClient(target) as c:
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await c.remember_image("n", PNG)
    assert info.value.code() == grpc.StatusCode.UNAVAILABLE
    assert len(f.requests) == 1


async def test_a_query_by_image_is_retried_as_a_read(fake: tuple[str, Fake]) -> None:
    target, f = fake
    f.unavailable = 2
    async with AsyncClient(target) as c:
        assert len((await c.recall_by_image("n", PNG)).hits) == 1
    assert len(f.requests) == 3


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda c: c.remember_image("n", "shot.png"), TypeError, "not a str"),
        (lambda c: c.remember_audio("n", b""), ValueError, "audio data: empty"),
        (lambda c: c.remember_image("n", [1, 2]), TypeError, "bytes expected, got list"),
        (lambda c: c.recall_by_image("n"), ValueError, "bytes or a held blob's sha256"),
        (lambda c: c.recall_by_image("n", PNG, sha256=SHA), ValueError, "not both"),
        (lambda c: c.remember_image("n", PNG, modality="text"), TypeError, "modality"),
    ],
)
async def test_bad_media_arguments_are_refused_before_sending(
    fake: tuple[str, Fake], call: Callable[[Any], Any], error: type[Exception], match: str
) -> None:
    target, f = fake
    with pytest.raises(error, match=match):
        await blocking(target, call)
    assert f.requests == []


@given(
    data=st.binary(min_size=1, max_size=512),
    caption=st.text(max_size=40),
    modality=st.sampled_from(["image", "audio", "table"]),
)
def test_a_media_input_carries_its_bytes_and_caption_unchanged(
    data: bytes, caption: str, modality: str
) -> None:
    req = media_input("n", modality, data, caption).to_pb()
    assert req.record.blob.data == data
    assert req.record.text == caption
    assert pb.Modality.Name(req.record.modality) == "MODALITY_" + modality.upper()
    # The wire form survives a round trip (what the server parses is what was built).
    assert spb.RememberRequest.FromString(req.SerializeToString()) == req
