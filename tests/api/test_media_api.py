"""Multimodal memory over gRPC (issue 30), against in-process servers with the media pipeline:
rendered screenshots read by OCR and found by text, a spoken note found by its words, the
alignment check (reject and warn), MIME sniffing and refused media, blob reference counting
(Forget, a Forget while the medium is read, expiry, a cold move), backpressure, a Recall that
waits for its session's media, groups, the image space of the tiny CLIP-style model (caption,
image and held-blob queries) and a client's own space.

OCR is what these tests pay for (one to three seconds a screenshot on a loaded machine), so the
module's servers share one OCR (`shared_ocr`), the screenshots are small, and an image whose
words do not matter is a few solid pixels (OCR reads nothing there in a fraction of a second).
Tests that hold the media queue put the server's OCR behind a gate (`held`), never a sleep.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import io
import random
import time
import wave
from collections.abc import Iterator
from pathlib import Path

import grpc
import msgspec
import numpy as np
import pytest
from google.protobuf.timestamp_pb2 import Timestamp
from PIL import Image

from pocketd.v1 import memory_pb2 as pb
from pocketd.v1 import memory_service_pb2 as spb
from server.adapters.onnx_encoder import OnnxTextEncoder
from server.app import LazyOcr, SystemClock
from server.core.settings import Settings
from tests.api.test_lifecycle_api import life_settings
from tests.conftest import DAY, FakeClock, load_tool
from tests.media_fixtures import (
    MediaServer,
    has_speech_model,
    held,
    jpeg_of,
    media_settings,
    open_media_engine,
    png_header,
    precondition_subjects,
    quota_subjects,
    refused,
    shared_ocr,
    solid_png,
    violations,
)
from tests.media_samples import render_screenshot, speak

CALL = 300.0  # a call's deadline: a write that waits for OCR on a loaded machine

EN_ERROR = render_screenshot(
    ["Payment failed", "Error code: E1234", "Your card was declined"], width=400, seed=1
)
ZH_ERROR = render_screenshot(["报错：无法连接服务器", "错误代码 E5502"], width=400, seed=2)
ZH_REFUND = render_screenshot(["退款被拒", "订单 ORD-77120 已超过退款期限"], width=400, seed=3)
LOGIN = render_screenshot(["Login failed", "Error code: E7710"], width=400, seed=4)
NOTES = [
    "The team lunch is on Thursday at noon",
    "The printer on the second floor is out of toner",
    "报销单已经提交给财务了",
    "明天上午十点开项目周会",
]


def server_settings(
    data: Path, base: Settings | None = None, **parts: dict[str, object]
) -> Settings:
    """The tests' settings with the media keys given, and calls that may wait for OCR."""
    s = media_settings(data, base, **parts)
    return msgspec.structs.replace(
        s, server=msgspec.structs.replace(s.server, max_call_seconds=CALL)
    )


def start(
    data: Path,
    encoder: OnnxTextEncoder,
    ocr: LazyOcr,
    settings: Settings | None = None,
    clock: FakeClock | None = None,
) -> MediaServer:
    data.mkdir(parents=True, exist_ok=True)
    s = settings or server_settings(data, queue={"recall_wait_seconds": CALL})
    engine = open_media_engine(data, encoder, clock or SystemClock(), s, ocr=ocr)
    return MediaServer(data, engine, s)


@pytest.fixture(scope="module")
def ocr() -> LazyOcr:
    return shared_ocr()


@pytest.fixture(scope="module")
def srv(
    tmp_path_factory: pytest.TempPathFactory, encoder: OnnxTextEncoder, ocr: LazyOcr
) -> Iterator[MediaServer]:
    """The module's server: OCR, speech where its model is, the alignment check warning."""
    server = start(tmp_path_factory.mktemp("media") / "data", encoder, ocr)
    yield server
    server.close()


# -- calls -------------------------------------------------------------------------------------


def image(namespace: str, data: bytes, text: str = "", **fields: object) -> pb.MemoryRecord:
    """An observation that carries a medium's bytes (and a caption, when `text`)."""
    mime = str(fields.pop("mime_type", ""))
    return pb.MemoryRecord(
        namespace=namespace,
        kind=pb.MEMORY_KIND_OBSERVATION,
        text=text,
        blob=pb.BlobRef(data=data, mime_type=mime),
        **fields,  # type: ignore[arg-type]
    )


def remember(srv: MediaServer, record: pb.MemoryRecord, wait: bool = True) -> spb.RememberResponse:
    req = spb.RememberRequest(record=record, wait_processed=wait)
    got: spb.RememberResponse = srv.stub.Remember(req, timeout=CALL)
    return got


def get(srv: MediaServer, namespace: str, memory_id: str, data: bool = False) -> pb.MemoryRecord:
    req = spb.GetRequest(namespace=namespace, memory_id=memory_id, include_blob_data=data)
    got: spb.GetResponse = srv.stub.Get(req, timeout=CALL)
    return got.record


def gone(srv: MediaServer, namespace: str, memory_id: str) -> bool:
    """Whether Get says NOT_FOUND."""
    try:
        get(srv, namespace, memory_id)
    except grpc.RpcError as err:
        assert err.code() == grpc.StatusCode.NOT_FOUND, err.details()
        return True
    return False


def recall(
    srv: MediaServer, namespace: str, text: str = "", **fields: object
) -> list[spb.RecallHit]:
    req = spb.RecallRequest(namespace=namespace, query_text=text, top_k=5, **fields)  # type: ignore[arg-type]
    got: spb.RecallResponse = srv.stub.Recall(req, timeout=CALL)
    return list(got.hits)


def ids(hits: list[spb.RecallHit]) -> list[str]:
    return [h.record.memory_id for h in hits]


def media(srv: MediaServer) -> spb.MediaStats:
    got: spb.StatsResponse = srv.stub.Stats(spb.StatsRequest(), timeout=CALL)
    return got.media


def records_in(srv: MediaServer, namespace: str) -> int:
    got: spb.StatsResponse = srv.stub.Stats(spb.StatsRequest(namespace=namespace), timeout=CALL)
    return sum(n.record_count for n in got.namespaces)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def silence_wav(seconds: float) -> bytes:
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16_000)
        w.writeframes(b"\x00\x00" * int(16_000 * seconds))
    return buf.getvalue()


# -- screenshots and voice notes, found by what they say ------------------------------------------


def test_screenshots_without_captions_are_read_and_found_by_text(srv: MediaServer) -> None:
    ns = "shots"
    for note in NOTES:
        srv.stub.Remember(
            spb.RememberRequest(
                record=pb.MemoryRecord(namespace=ns, kind=pb.MEMORY_KIND_FACT, text=note)
            ),
            timeout=CALL,
        )
    acked = {}
    for name, png in (("en", EN_ERROR), ("zh", ZH_ERROR), ("refund", ZH_REFUND)):
        r = remember(srv, image(ns, png), wait=False)  # bytes alone: no caption, no text
        assert r.processing_state == pb.PROCESSING_STATE_PROCESSING and r.memory_id
        acked[name] = r.memory_id
    srv.drained()

    en = get(srv, ns, acked["en"], data=True)
    assert en.processing_state == pb.PROCESSING_STATE_READY
    assert en.modality == pb.MODALITY_IMAGE
    assert "E1234" in en.text and "Payment failed" in en.text  # the description: the OCR text
    assert en.blob.mime_type == "image/png" and en.blob.sha256 == sha(EN_ERROR)
    assert en.blob.size_bytes == len(EN_ERROR) and en.blob.data == EN_ERROR
    assert en.blob.uri == f"blob:sha256:{sha(EN_ERROR)}"
    assert "退款被拒" in get(srv, ns, acked["refund"]).text

    assert ids(recall(srv, ns, "E1234"))[0] == acked["en"]
    assert acked["zh"] in ids(recall(srv, ns, "这张截图里的报错"))
    assert ids(recall(srv, ns, "退款被拒"))[0] == acked["refund"]
    assert acked["en"] in ids(recall(srv, ns, "what was the error code when the payment failed"))


def test_a_spoken_note_is_found_by_its_words(srv: MediaServer) -> None:
    if not has_speech_model():
        pytest.skip("models/whisper-tiny-en is absent (make models)")
    ns = "voice"
    said = "Remember to call the plumber about the leaking kitchen tap on Friday morning."
    wav = speak(said)
    for note in NOTES:
        srv.stub.Remember(
            spb.RememberRequest(
                record=pb.MemoryRecord(namespace=ns, kind=pb.MEMORY_KIND_FACT, text=note)
            ),
            timeout=CALL,
        )
    r = remember(srv, image(ns, wav))
    assert r.processing_state == pb.PROCESSING_STATE_READY, r.reason
    rec = get(srv, ns, r.memory_id)
    assert rec.modality == pb.MODALITY_AUDIO and rec.blob.mime_type == "audio/wav"
    assert "plumber" in rec.text.lower()
    assert ids(recall(srv, ns, "who do I need to call about the kitchen tap"))[0] == r.memory_id


# -- the alignment check -------------------------------------------------------------------------


def test_a_caption_that_names_another_code_is_rejected_in_reject_mode(
    tmp_path: Path, encoder: OnnxTextEncoder, ocr: LazyOcr
) -> None:
    data = tmp_path / "strict"
    s = server_settings(data, alignment={"mode": "reject"})
    strict = start(data, encoder, ocr, s)
    try:
        ns = "align"
        r = remember(strict, image(ns, EN_ERROR, "Checkout error E9876", memory_id="shot-1"))
        assert r.decision == spb.GATE_DECISION_REJECTED
        assert r.processing_state == pb.PROCESSING_STATE_FAILED
        assert "E9876" in r.reason and "E1234" in r.reason, r.reason
        rec = get(strict, ns, "shot-1")
        assert rec.processing_state == pb.PROCESSING_STATE_FAILED
        assert "disagree" in rec.processing_note and "E9876" in rec.processing_note
        assert recall(strict, ns, "E1234") == [] and recall(strict, ns, "E9876") == []
        assert records_in(strict, ns) == 0
        assert strict.blobs() == set() and media(strict).blobs == 0
        assert media(strict).failed == 1

        # The same screenshot with a caption it bears out is stored.
        ok = remember(strict, image(ns, EN_ERROR, "Payment failed with error E1234"))
        assert ok.decision == spb.GATE_DECISION_STORED
        assert ok.processing_state == pb.PROCESSING_STATE_READY and not ok.warnings
        assert strict.blobs() == {sha(EN_ERROR)}
    finally:
        strict.close()


def test_a_caption_that_disagrees_is_stored_with_a_warning_in_warn_mode(srv: MediaServer) -> None:
    ns = "warned"
    r = remember(srv, image(ns, EN_ERROR, "Checkout error E9876"))
    assert r.decision == spb.GATE_DECISION_STORED
    assert r.processing_state == pb.PROCESSING_STATE_READY
    assert len(r.warnings) == 1 and "E9876" in r.warnings[0] and "E1234" in r.warnings[0]
    rec = get(srv, ns, r.memory_id)
    assert rec.processing_note == r.warnings[0]
    assert rec.text == "Checkout error E9876"  # the client's caption is the description


# -- MIME sniffing and refused media --------------------------------------------------------------


def test_the_type_is_sniffed_from_the_bytes_not_taken_from_the_client(srv: MediaServer) -> None:
    png = solid_png((200, 10, 10))
    r = remember(srv, image("sniffed", png, mime_type="audio/wav"))
    assert r.processing_state == pb.PROCESSING_STATE_READY
    rec = get(srv, "sniffed", r.memory_id)
    assert rec.blob.mime_type == "image/png" and rec.modality == pb.MODALITY_IMAGE
    assert rec.text == "image 8×8"  # nothing readable: the description says what it is


def _wav_cut() -> bytes:
    wav = silence_wav(1.0)
    return wav[: len(wav) // 2]


@pytest.mark.parametrize(
    ("data", "field", "says"),
    [
        (
            b"\x00\x01\x02\x03 not a medium \xff\xfe" * 8,
            "record.blob.data",
            "application/octet-stream",
        ),
        (EN_ERROR[: len(EN_ERROR) // 2], "record.blob.data", "image/png"),
        (jpeg_of(EN_ERROR)[:400], "record.blob.data", "image/jpeg"),
        (_wav_cut(), "record.blob.data", "audio/wav"),
        (png_header(50_000, 50_000), "record.blob.data", "media.image.max_pixels"),
    ],
    ids=["not-a-medium", "truncated-png", "truncated-jpeg", "truncated-wav", "bomb"],
)
def test_a_medium_that_cannot_be_read_is_refused_and_nothing_is_stored(
    srv: MediaServer, data: bytes, field: str, says: str
) -> None:
    ns = "refused"
    before, files = media(srv).blobs, srv.blobs()
    err = refused(lambda: remember(srv, image(ns, data)), grpc.StatusCode.INVALID_ARGUMENT)
    v = violations(err)
    assert set(v) == {field} and says in v[field], v
    assert media(srv).blobs == before and srv.blobs() == files
    assert records_in(srv, ns) == 0


def test_a_bad_medium_in_a_batch_names_its_item_and_nothing_of_the_batch_is_stored(
    srv: MediaServer,
) -> None:
    ns = "batch"
    before, files = media(srv).blobs, srv.blobs()
    items = [
        spb.RememberRequest(record=image(ns, solid_png((1, 2, 3)))),
        spb.RememberRequest(
            record=pb.MemoryRecord(namespace=ns, kind=pb.MEMORY_KIND_FACT, text="A plain fact")
        ),
        spb.RememberRequest(record=image(ns, b"\x00garbage\xff" * 16)),
    ]
    err = refused(
        lambda: srv.stub.RememberBatch(spb.RememberBatchRequest(items=items), timeout=CALL),
        grpc.StatusCode.INVALID_ARGUMENT,
    )
    assert set(violations(err)) == {"items[2].record.blob.data"}
    assert "application/octet-stream" in violations(err)["items[2].record.blob.data"]
    assert media(srv).blobs == before and media(srv).pending == 0
    assert srv.blobs() == files and records_in(srv, ns) == 0


def test_a_refused_batch_leaves_no_table_blob_on_disk(srv: MediaServer) -> None:
    ns = "batch-table"
    files = srv.blobs()
    table = b"name,amount\nalice,12\nbob,30\n"
    items = [
        spb.RememberRequest(record=image(ns, table)),
        spb.RememberRequest(record=image(ns, b"\x00garbage\xff" * 16)),
    ]
    refused(
        lambda: srv.stub.RememberBatch(spb.RememberBatchRequest(items=items), timeout=CALL),
        grpc.StatusCode.INVALID_ARGUMENT,
    )
    assert records_in(srv, ns) == 0
    assert srv.blobs() == files


# -- blob reference counting ------------------------------------------------------------------


def test_a_blob_lives_while_a_memory_holds_it(srv: MediaServer) -> None:
    png = solid_png((10, 200, 10))
    before = media(srv).blobs
    a = remember(srv, image("held-a", png))
    b = remember(srv, image("held-b", png))
    assert a.processing_state == b.processing_state == pb.PROCESSING_STATE_READY
    assert get(srv, "held-a", a.memory_id).blob.sha256 == sha(png)
    assert get(srv, "held-b", b.memory_id).blob.sha256 == sha(png)
    assert sha(png) in srv.blobs() and media(srv).blobs == before + 1  # one blob, two holders

    srv.stub.Forget(spb.ForgetRequest(namespace="held-a", memory_id=a.memory_id), timeout=CALL)
    assert sha(png) in srv.blobs() and media(srv).blobs == before + 1
    assert get(srv, "held-b", b.memory_id, data=True).blob.data == png

    srv.stub.Forget(spb.ForgetRequest(namespace="held-b", memory_id=b.memory_id), timeout=CALL)
    assert sha(png) not in srv.blobs() and media(srv).blobs == before


def test_the_same_image_twice_in_a_namespace_is_one_memory(srv: MediaServer) -> None:
    png = solid_png((10, 10, 200))
    first = remember(srv, image("twice", png, session_id="s1"))
    again = remember(srv, image("twice", png, session_id="s1"))
    assert first.decision == spb.GATE_DECISION_STORED
    assert again.decision == spb.GATE_DECISION_MERGED and again.memory_id == first.memory_id
    assert records_in(srv, "twice") == 1


def test_forgetting_a_memory_still_being_read_cancels_it(srv: MediaServer) -> None:
    ns = "cancelled"
    png = solid_png((33, 66, 99))
    srv.drained()
    with held(srv.engine) as gate:
        r = remember(srv, image(ns, png, "the quarterly tax form"), wait=False)
        assert r.processing_state == pb.PROCESSING_STATE_PROCESSING
        assert gate.entered.wait(CALL)  # its reading has begun, and waits at the gate
        rec = get(srv, ns, r.memory_id)
        assert rec.processing_state == pb.PROCESSING_STATE_PROCESSING
        assert rec.blob.sha256 == sha(png) and sha(png) in srv.blobs()
        got = srv.stub.Forget(spb.ForgetRequest(namespace=ns, memory_id=r.memory_id), timeout=CALL)
        assert got.forgotten_count == 1
        assert sha(png) not in srv.blobs()
    srv.drained()
    assert gone(srv, ns, r.memory_id)
    assert records_in(srv, ns) == 0 and recall(srv, ns, "quarterly tax form") == []
    assert sha(png) not in srv.blobs()


def test_forgetting_by_filter_cancels_the_media_still_being_read_it_matches(
    srv: MediaServer,
) -> None:
    """A session's media forgotten by filter while they wait to be read never arrive; another
    session's stay; forgetting the whole namespace (`all`) takes the rest."""
    ns = "forget-all"
    mine = [solid_png((40, 80, c)) for c in (1, 2, 3)]
    theirs = solid_png((40, 80, 4))
    srv.drained()
    with held(srv.engine) as gate:
        acks = [remember(srv, image(ns, p, session_id="s1"), wait=False) for p in mine]
        other = remember(srv, image(ns, theirs, session_id="s2"), wait=False)
        assert gate.entered.wait(CALL)  # the first is being read, the others wait
        session = spb.ForgetRequest(namespace=ns, filter=spb.MemoryFilter(session_id="s1"))
        got = srv.stub.Forget(session, timeout=CALL)
        assert got.forgotten_count == 3  # the one being read (its write never happens) too
    srv.drained()
    assert srv.stub.Forget(session, timeout=CALL).forgotten_count == 0
    for a in acks:
        assert gone(srv, ns, a.memory_id)
    assert not {sha(p) for p in mine} & srv.blobs()
    assert get(srv, ns, other.memory_id).blob.sha256 == sha(theirs)
    everything = spb.ForgetRequest(namespace=ns, filter=spb.MemoryFilter(), all=True)
    assert srv.stub.Forget(everything, timeout=CALL).forgotten_count == 1
    assert records_in(srv, ns) == 0 and sha(theirs) not in srv.blobs()


def test_expiry_removes_the_blob_and_a_cold_move_keeps_it(
    tmp_path: Path, encoder: OnnxTextEncoder, ocr: LazyOcr
) -> None:
    data = tmp_path / "life"
    clock = FakeClock(time.time())
    s = server_settings(data, life_settings(data))
    server = start(data, encoder, ocr, s, clock)
    try:
        ns = "old"
        short_png, kept_png = solid_png((1, 90, 1)), solid_png((2, 91, 2))
        short = remember(
            server,
            image(
                ns,
                short_png,
                "The visitor badge code is 5521",
                expires_at=Timestamp(seconds=int(clock.now() + 3600)),
            ),
        )
        kept = remember(
            server,
            image(
                ns,
                kept_png,
                "The printer on the second floor jams on A3 paper",
                expires_at=Timestamp(seconds=int(clock.now() + 365 * DAY)),
            ),
        )
        assert server.blobs() == {sha(short_png), sha(kept_png)}
        clock.advance(120 * DAY)
        report = server.stub.Maintain(spb.MaintainRequest(namespace=ns), timeout=CALL)
        assert (report.expired, report.moved_to_cold) == (1, 1)
        assert gone(server, ns, short.memory_id)
        cold = get(server, ns, kept.memory_id, data=True)
        assert cold.tier == pb.TIER_COLD and cold.blob.data == kept_png
        assert server.blobs() == {sha(kept_png)} and media(server).blobs == 1
    finally:
        server.close()


# -- the queue ----------------------------------------------------------------------------------


def test_a_full_queue_refuses_with_resource_exhausted(
    tmp_path: Path, encoder: OnnxTextEncoder, ocr: LazyOcr
) -> None:
    data = tmp_path / "full"
    server = start(data, encoder, ocr, server_settings(data, queue={"max_pending": 1}))
    try:
        first, second = solid_png((5, 5, 250)), solid_png((6, 6, 251))
        with held(server.engine):
            r = remember(server, image("full", first), wait=False)
            assert r.processing_state == pb.PROCESSING_STATE_PROCESSING
            err = refused(
                lambda: remember(server, image("full", second), wait=False),
                grpc.StatusCode.RESOURCE_EXHAUSTED,
            )
            assert quota_subjects(err) == ["media.queue.max_pending"]
            assert server.blobs() == {sha(first)} and media(server).pending == 1
        server.drained()
        again = remember(server, image("full", second))
        assert again.processing_state == pb.PROCESSING_STATE_READY
        assert server.blobs() == {sha(first), sha(second)}
    finally:
        server.close()


def test_a_recall_waits_for_its_sessions_media(srv: MediaServer) -> None:
    ns = "waits"
    srv.drained()
    with held(srv.engine) as gate, concurrent.futures.ThreadPoolExecutor(2) as pool:
        r = remember(
            srv,
            image(
                ns, solid_png((120, 7, 7)), "the parking permit for building C", session_id="s-wait"
            ),
            wait=False,
        )
        assert get(srv, ns, r.memory_id).processing_state == pb.PROCESSING_STATE_PROCESSING
        assert gate.entered.wait(CALL)
        mine = pool.submit(
            recall, srv, ns, "parking permit", filter=spb.MemoryFilter(session_id="s-wait")
        )
        # Another session's Recall waits for nothing of this one's.
        other = recall(srv, ns, "parking permit", filter=spb.MemoryFilter(session_id="s-other"))
        assert other == []
        # The session's own Recall is held while its medium is read…
        done, _ = concurrent.futures.wait([mine], timeout=1.0)
        assert not done, "the Recall did not wait for its session's medium"
        gate.gate.set()
        # …and finds it once it is.
        assert ids(mine.result(timeout=CALL)) == [r.memory_id]


# -- groups ---------------------------------------------------------------------------------------


def test_an_image_with_a_caption_is_one_group_returned_once(srv: MediaServer) -> None:
    ns = "groups"
    caption = "Login failed with error E7710"
    r = remember(srv, image(ns, LOGIN, caption))
    assert r.processing_state == pb.PROCESSING_STATE_READY and not r.warnings
    item = get(srv, ns, r.memory_id)
    said = get(srv, ns, r.memory_id + ".ocr")
    assert item.text == caption and item.blob.sha256 == sha(LOGIN)
    assert "E7710" in said.text and not said.blob.sha256
    assert item.group_id == said.group_id == r.memory_id
    assert list(said.derived_from) == [r.memory_id]

    hits = recall(srv, ns, "E7710 login failed")
    assert len(hits) == 1  # the group once, as its best member
    members = {hits[0].record.memory_id, *hits[0].group_member_ids}
    assert members == {r.memory_id, said.memory_id}

    got = srv.stub.Forget(spb.ForgetRequest(namespace=ns, memory_id=r.memory_id), timeout=CALL)
    assert got.forgotten_count == 2
    assert gone(srv, ns, r.memory_id) and gone(srv, ns, said.memory_id)
    assert sha(LOGIN) not in srv.blobs() and recall(srv, ns, "E7710") == []


# -- spaces ---------------------------------------------------------------------------------------


SKETCHES = (
    "A pencil sketch of the harbour at dawn",
    "Floor plan of the new kitchen",
    "Logo draft for the bakery",
    "Wiring diagram of the garage lights",
    "Seating chart for the wedding",
    "Storyboard of the product video",
)


def test_a_client_space_is_searched_and_keeps_its_dimension(srv: MediaServer) -> None:
    ns = "mine"
    rng = np.random.default_rng(7)
    # Well apart (cosines below the text ceiling, where a client space's scores saturate: a
    # client space has the text space's floor and ceiling), so that the nearest is the only
    # full match.
    vecs = (np.eye(8)[:6] + 0.1 * rng.normal(size=(6, 8))).astype(np.float32)
    stored = []
    for i, v in enumerate(vecs):
        rec = pb.MemoryRecord(
            namespace=ns,
            kind=pb.MEMORY_KIND_FACT,
            # Unrelated texts: "sketch number 0 … 5" would read as one fact updated five times
            # (the lifecycle's succession shows the newest only).
            text=SKETCHES[i],
            space_vectors=[pb.SpaceVector(space="mine", values=v.tolist())],
        )
        stored.append(srv.stub.Remember(spb.RememberRequest(record=rec), timeout=CALL).memory_id)
    srv.indexed()  # a space's vectors are searchable once the indexer has put them in
    for i in (0, 4):
        q = vecs[i] + 0.05 * rng.normal(size=8).astype(np.float32)
        hits = recall(
            srv, ns, query_space_vectors=[pb.SpaceVector(space="mine", values=q.tolist())]
        )
        assert hits[0].record.memory_id == stored[i]
        assert hits[0].score.vector_space == "mine"

    wrong = pb.MemoryRecord(
        namespace=ns,
        kind=pb.MEMORY_KIND_FACT,
        text="A sketch from another model",
        space_vectors=[pb.SpaceVector(space="mine", values=[0.5] * 9)],
    )
    err = refused(
        lambda: srv.stub.Remember(spb.RememberRequest(record=wrong), timeout=CALL),
        grpc.StatusCode.INVALID_ARGUMENT,
    )
    assert set(violations(err)) == {"record.space_vectors[0]"}
    assert "dimension 8" in violations(err)["record.space_vectors[0]"]


def test_an_image_with_a_space_vector_of_the_wrong_dimension_is_refused_at_once(
    srv: MediaServer,
) -> None:
    ns = "mine-image"
    first = pb.MemoryRecord(
        namespace=ns,
        kind=pb.MEMORY_KIND_FACT,
        text="A sketch",
        space_vectors=[pb.SpaceVector(space="sketch", values=[0.5] * 8)],
    )
    srv.stub.Remember(spb.RememberRequest(record=first), timeout=CALL)
    bad = image(
        ns, solid_png((3, 3, 3)), space_vectors=[pb.SpaceVector(space="sketch", values=[0.5] * 9)]
    )
    err = refused(lambda: remember(srv, bad, wait=False), grpc.StatusCode.INVALID_ARGUMENT)
    assert set(violations(err)) == {"record.space_vectors[0]"}


def test_a_query_by_image_needs_an_image_space(srv: MediaServer) -> None:
    err = refused(
        lambda: recall(srv, "any", query_blob=pb.BlobRef(data=solid_png((9, 9, 9)))),
        grpc.StatusCode.FAILED_PRECONDITION,
    )
    assert precondition_subjects(err) == ["query_blob"]


@pytest.fixture(scope="module")
def clip_srv(
    tmp_path_factory: pytest.TempPathFactory, encoder: OnnxTextEncoder
) -> Iterator[MediaServer]:
    """A server with the tiny CLIP-style model as its image space, and OCR off."""
    tiny = load_tool("tiny_clip")
    try:
        model = tiny.tiny_clip_dir(tmp_path_factory)
    except FileNotFoundError as exc:
        pytest.skip(str(exc))
    data = tmp_path_factory.mktemp("clip") / "data"
    data.mkdir()
    s = server_settings(data, ocr={"enabled": False}, clip={"model_dir": str(model)})
    engine = open_media_engine(data, encoder, SystemClock(), s)
    server = MediaServer(data, engine, s)
    yield server
    server.close()


def drawn(caption: str, rng: random.Random) -> bytes:
    """A fresh drawing of one of the tiny model's captions, as a PNG."""
    px = load_tool("tiny_clip").draw([caption], rng)[0]
    buf = io.BytesIO()
    Image.fromarray(px).save(buf, format="PNG")
    return buf.getvalue()


def test_the_image_space_finds_drawn_images_by_caption_by_image_and_by_blob(
    clip_srv: MediaServer,
) -> None:
    ns = "drawn"
    classes: list[str] = load_tool("tiny_clip").synth().CLASSES
    rng = random.Random(11)
    stored: dict[str, str] = {}
    pictures: dict[str, bytes] = {}
    for caption in classes:
        png = drawn(caption, rng)
        r = remember(clip_srv, image(ns, png), wait=False)  # no caption: the picture alone
        stored[r.memory_id], pictures[caption] = caption, png
    clip_srv.drained()
    clip_srv.indexed()
    by_caption = {c: m for m, c in stored.items()}
    rec = get(clip_srv, ns, by_caption["a red circle"])
    assert rec.text == "image 64×64" and [sv.space for sv in rec.space_vectors] == ["clip"]

    for caption in ("a red circle", "a blue triangle", "the digit 7"):
        hits = recall(clip_srv, ns, caption)
        assert by_caption[caption] in ids(hits), (caption, [stored[i] for i in ids(hits)])
        best = hits[ids(hits).index(by_caption[caption])]
        assert best.score.vector_space == "clip"

        fresh = drawn(caption, rng)  # another drawing of the same thing
        hits = recall(clip_srv, ns, query_blob=pb.BlobRef(data=fresh))
        assert by_caption[caption] in ids(hits), (caption, [stored[i] for i in ids(hits)])

        own = recall(clip_srv, ns, query_blob=pb.BlobRef(sha256=sha(pictures[caption])))
        assert ids(own)[0] == by_caption[caption]
        assert own[0].score.vector_space == "clip"

    # Another namespace (another tenant's, say) cannot query by this namespace's blob: it is as
    # absent there as a blob never sent.
    held = pb.BlobRef(sha256=sha(pictures["a red circle"]))
    err = refused(lambda: recall(clip_srv, "elsewhere", query_blob=held), grpc.StatusCode.NOT_FOUND)
    never = pb.BlobRef(sha256="0" * 64)
    other = refused(
        lambda: recall(clip_srv, "elsewhere", query_blob=never), grpc.StatusCode.NOT_FOUND
    )
    assert err.details().replace(held.sha256, "X") == other.details().replace(never.sha256, "X")
