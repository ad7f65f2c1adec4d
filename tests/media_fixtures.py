"""What issue 30's media tests share: settings with the media keys a test names, an engine over a
data directory with the media pipeline (the composition root's adapters, with readers a test may
replace), an in-process server around such an engine that a whole module can share, a gate that
holds the media queue's readers, and the blobs on disk.

A module shares one server because OCR is what these tests pay for: rapidocr loads its models on
the first read (seconds), so one `LazyOcr` is shared by every engine a module opens. The server's
event loop runs in a thread of its own, so the tests call it with blocking stubs whatever their
scope.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import re
import struct
import threading
import zlib
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

import grpc
import msgspec
from google.protobuf.message import Message
from google.rpc import error_details_pb2
from grpc_status import rpc_status
from PIL import Image

from pocketd.v1 import memory_service_pb2_grpc as spb_grpc
from server.adapters.columns_file import ColumnsFile
from server.adapters.journal_file import JournalFile
from server.adapters.onnx_encoder import OnnxTextEncoder
from server.adapters.rapid_ocr import RapidOcr
from server.adapters.sqlite_store import SqliteRecordStore
from server.adapters.tantivy_index import TantivyKeywordIndex
from server.api.calls import WorkerPools
from server.api.server import GrpcServer
from server.app import (
    LazyOcr,
    LifecycleAdapters,
    assemble_engine,
    media_adapters,
    open_vectors,
    thresholds_of,
)
from server.config import speech_model_dir
from server.core.clock import Clock
from server.core.engine import MemoryEngine
from server.core.media.ports import ImageSpace, Ocr, OcrText, Pixels, Speech
from server.core.memory.state.sessions import MemoryHotSessions
from server.core.settings import OcrSettings, Settings, resolve_thresholds
from tests.conftest import make_settings, wait_for

_SHA = re.compile(r"[0-9a-f]{64}")


class _Keep:
    """The reader the settings give (the default of `open_media_engine`'s readers)."""


KEEP = _Keep()


def media_settings(tmp: Path, base: Settings | None = None, **parts: dict[str, Any]) -> Settings:
    """Settings for a server in `tmp` (`base`: from these, else the tests' defaults) with
    `media.<part>` overrides: `media_settings(tmp, queue={"workers": 1}, ocr={"enabled":
    False})`."""
    s = base or make_settings(tmp)
    m = s.media
    for name, values in parts.items():
        part = msgspec.structs.replace(getattr(m, name), **values)
        m = msgspec.structs.replace(m, **{name: part})
    return msgspec.structs.replace(s, media=m)


def shared_ocr() -> LazyOcr:
    """An OCR built on its first read, for every engine of a module to share."""
    return LazyOcr(lambda: RapidOcr(OcrSettings()))


def has_speech_model() -> bool:
    """Whether the built-in English speech model is there (`make models`)."""
    return speech_model_dir(Settings()).is_dir()


def open_media_engine(
    data: Path,
    encoder: OnnxTextEncoder | None,
    clock: Clock,
    settings: Settings,
    ocr: Ocr | _Keep | None = KEEP,
    speech: Speech | _Keep | None = KEEP,
    space: ImageSpace | _Keep | None = KEEP,
) -> MemoryEngine:
    """An engine over `data` with the media pipeline the settings describe (`media_adapters`),
    loaded; `ocr`, `speech`, `space`: readers in place of the settings' (None: none)."""
    s = resolve_thresholds(settings.memory, thresholds_of(encoder))
    store = SqliteRecordStore(data / "records.sqlite3", s.index.record_cache_bytes)
    vectors = open_vectors(data, s)
    keywords = TantivyKeywordIndex(
        data / "keywords", s.index.keyword_heap_bytes, s.index.keyword_term_cache
    )
    media = media_adapters(settings, data, min(vectors.saved_rev(), keywords.committed_rev()))
    reader = media.reader
    if not isinstance(ocr, _Keep):
        reader.ocr = ocr
    if not isinstance(speech, _Keep):
        reader.speech = speech
    if not isinstance(space, _Keep):
        reader.space = space
    engine = assemble_engine(
        s,
        store,
        vectors,
        keywords,
        encoder,
        clock,
        ColumnsFile(data / "columns"),
        0,
        lifecycle=LifecycleAdapters(
            MemoryHotSessions(clock), None, JournalFile(data / "maintenance.journal")
        ),
        media=media,
    )
    engine.load()
    return engine


class MediaServer:
    """An in-process server with the media pipeline on port 0, its event loop in a thread of its
    own; `stub` is a blocking MemoryService stub, `engine` and `data` are the server's."""

    def __init__(self, data: Path, engine: MemoryEngine, settings: Settings) -> None:
        self.data = data
        self.engine = engine
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._pools = WorkerPools(4, 2)
        self._grpc: GrpcServer | None = None
        port = self._call(self._start(settings))
        self.target = f"127.0.0.1:{port}"
        self._channel = grpc.insecure_channel(self.target)
        self.stub = spb_grpc.MemoryServiceStub(self._channel)

    async def _start(self, settings: Settings) -> int:
        # Made on its loop: a grpc.aio server belongs to the loop it was made on.
        self._grpc = GrpcServer(settings, self._pools)
        port = await self._grpc.start("127.0.0.1:0")
        await self._grpc.mark_serving(self.engine)
        return port

    def _call(self, coro: Any) -> Any:
        fut: Future[Any] = asyncio.run_coroutine_threadsafe(coro, self._loop)
        return fut.result(timeout=120)

    def close(self) -> None:
        """Stop serving, close the engine (the media queue's workers stop after their job)."""
        self._channel.close()
        assert self._grpc is not None
        self._call(self._grpc.drain(1.0))
        self.engine.close()
        self._pools.shutdown()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)
        self._loop.close()

    def drained(self, timeout: float = 240.0) -> None:
        """Wait until the media queue holds nothing (every job read, stored or failed)."""
        wait_for(lambda: self.engine.stats("").media.pending == 0, timeout)

    def indexed(self, timeout: float = 240.0) -> None:
        """Wait until the indexer has applied every change so far (the named spaces' indexes
        are fed by it alone)."""
        head = self.engine.index_state().head_rev
        wait_for(lambda: self.engine.index_state().indexed_rev >= head, timeout)

    def blobs(self) -> set[str]:
        return blob_files(self.data)


def blob_files(data: Path) -> set[str]:
    """The sha256 of every blob file under `<data>/blobs` (what is on disk, not what is held)."""
    root = data / "blobs"
    if not root.is_dir():
        return set()
    return {p.name for p in root.glob("*/*") if _SHA.fullmatch(p.name)}


class GatedOcr:
    """An `Ocr` that holds every read until the test opens it, so that media stay pending for as
    long as a test needs (no sleep stands in for a slow reader). `entered` is set once a read is
    waiting at the gate."""

    def __init__(self, inner: Ocr | None) -> None:
        self.inner = inner
        self.gate = threading.Event()
        self.entered = threading.Event()

    def read(self, image: Pixels) -> OcrText:
        self.entered.set()
        if not self.gate.wait(timeout=300):
            raise TimeoutError("the test never opened the OCR gate")
        return self.inner.read(image) if self.inner is not None else OcrText("")


class ColourOcr:
    """A fake `Ocr` for images made by `solid_png`: the text `texts` gives the image's colour
    (its top-left pixel), "" for a colour it does not know; `reads` counts its reads."""

    def __init__(self, texts: dict[tuple[int, int, int], str]) -> None:
        self.texts = texts
        self.reads = 0

    def read(self, image: Pixels) -> OcrText:
        self.reads += 1
        r, g, b = (int(c) for c in image[0, 0])
        return OcrText(self.texts.get((r, g, b), ""))


@contextlib.contextmanager
def held(engine: MemoryEngine) -> Iterator[GatedOcr]:
    """The engine's OCR behind a gate for the block: every image read waits until the block
    opens it (`gate.gate.set()`) or ends."""
    assert engine.media is not None
    reader = engine.media.reader
    gated = GatedOcr(reader.ocr)
    reader.ocr = gated
    try:
        yield gated
    finally:
        gated.gate.set()
        reader.ocr = gated.inner


# -- errors on the wire -----------------------------------------------------------------------


D = TypeVar("D", bound=Message)


def details(err: grpc.RpcError, kind: type[D]) -> list[D]:
    """The rich status details of one type (BadRequest, QuotaFailure, …) an error carries."""
    status = rpc_status.from_call(err)  # type: ignore[arg-type]
    assert status is not None, "no rich status"
    out: list[D] = []
    for d in status.details:
        if d.Is(kind.DESCRIPTOR):
            msg = kind()
            d.Unpack(msg)
            out.append(msg)
    return out


def violations(err: grpc.RpcError) -> dict[str, str]:
    """The BadRequest field violations of an error: field → description."""
    return {
        v.field: v.description
        for br in details(err, error_details_pb2.BadRequest)
        for v in br.field_violations
    }


def quota_subjects(err: grpc.RpcError) -> list[str]:
    """The QuotaFailure subjects of a RESOURCE_EXHAUSTED (the limits' setting keys)."""
    return [v.subject for q in details(err, error_details_pb2.QuotaFailure) for v in q.violations]


def precondition_subjects(err: grpc.RpcError) -> list[str]:
    """The PreconditionFailure subjects of a FAILED_PRECONDITION (the fields that need what is
    missing)."""
    return [
        v.subject for p in details(err, error_details_pb2.PreconditionFailure) for v in p.violations
    ]


def refused(call: Callable[[], object], code: grpc.StatusCode) -> grpc.RpcError:
    """The error `call` fails with, checked to carry `code`."""
    try:
        call()
    except grpc.RpcError as err:
        assert err.code() == code, f"{err.code()}: {err.details()}"
        return err
    raise AssertionError(f"expected {code}, the call succeeded")


# -- media made small ---------------------------------------------------------------------------


def solid_png(rgb: tuple[int, int, int], side: int = 8) -> bytes:
    """A small PNG of one colour (for tests whose reader is a fake)."""
    buf = io.BytesIO()
    Image.new("RGB", (side, side), rgb).save(buf, format="PNG")
    return buf.getvalue()


def png_header(width: int, height: int) -> bytes:
    """A PNG whose header declares `width` × `height` pixels, with one tiny compressed row
    after it: the decompression bomb's shape, refused before anything is decoded."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body) & 0xFFFFFFFF
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

    idat = zlib.compress(b"\x00" * 1024)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


def jpeg_of(png: bytes) -> bytes:
    """The same picture as a JPEG."""
    buf = io.BytesIO()
    Image.open(io.BytesIO(png)).convert("RGB").save(buf, format="JPEG", quality=90)
    return buf.getvalue()
