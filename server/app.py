"""The composition root: build the adapters and the engine from `Settings` and run the server.

The only module that knows every layer. Start-up order: lock the data directory, load and check
the encoder's model, bind the port (health NOT_SERVING), compile the kernels and open the stores
off the event loop, let the indexer catch up until at most
`memory.hot.serving_max_pending` records wait for it (so a SERVING server never makes a writer
wait), then report SERVING. On SIGTERM or SIGINT: NOT_SERVING, drain the calls in flight, stop the
indexer, snapshot the indexes, close the stores, return.

Anything that stops start-up for a reason the operator can fix (a busy port, a locked data
directory, a missing model, a model that does not fit the configuration) is a `StartupError`:
the entry point prints its one-line message and exits 2.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import logging
import os
import secrets
import signal
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import IO, Any

from kernels.warmup import compile_all
from server.adapters.acknowledged_file import SqliteAcknowledgedStore
from server.adapters.blob_files import FileBlobStore
from server.adapters.clip_onnx import ClipModelError, OnnxImageSpace
from server.adapters.cold_segments import ColdArchive, ColdArchiveError
from server.adapters.columns_file import ColumnsFile
from server.adapters.decision_log import FileDecisionLog
from server.adapters.difficulty_models import load_difficulty
from server.adapters.durable import fsync_dir
from server.adapters.journal_file import JournalFile
from server.adapters.media_decode import PilDecoder
from server.adapters.media_ledger import SqliteMediaLedger
from server.adapters.metrics import PrometheusMetrics
from server.adapters.model_store import ModelStore, ModelWatcher
from server.adapters.onnx_encoder import ModelMissingError, OnnxTextEncoder
from server.adapters.onnx_policy import OnnxPocketModel
from server.adapters.openai_summariser import build_summariser
from server.adapters.rapid_ocr import RapidOcr
from server.adapters.redis_sessions import RedisUnreachableError, open_redis_sessions
from server.adapters.said_models import load_said
from server.adapters.space_index import SpaceIndexes
from server.adapters.sqlite_ledger import SqliteLedgerStore
from server.adapters.sqlite_store import SqliteRecordStore
from server.adapters.tantivy_index import TantivyKeywordIndex
from server.adapters.token_counter import TokenCounter
from server.adapters.usearch_index import UsearchIndexSet
from server.adapters.whisper_speech import WhisperSpeech
from server.api.calls import Lane, WorkerPools
from server.api.page_tokens import SECRET_BYTES
from server.api.server import GrpcServer, ListenError
from server.config import (
    MODELS_DIR,
    TEXT_ENCODERS,
    is_loopback,
    model_dir,
    speech_model_dir,
    tokenizer_file,
)
from server.core.agent.ports import TokenCount
from server.core.agent.step import AgentLoop, tier_settings
from server.core.agent.tiers import TierRouter
from server.core.agent.toolcache import ToolCache
from server.core.clock import Clock
from server.core.deadline import no_deadline
from server.core.engine import EngineParts, MemoryEngine
from server.core.ledger.ledger import Ledger
from server.core.media.blobs import BlobKeeper
from server.core.media.intake import MediaIntake
from server.core.media.ports import (
    BlobStore,
    MediaLedger,
    Ocr,
    OcrText,
    Pixels,
    Samples,
    Speech,
    Transcript,
)
from server.core.media.reading import MediaReader
from server.core.memory.lifecycle.compress import Compressor
from server.core.memory.lifecycle.parts import Lifecycle
from server.core.memory.lifecycle.reconcile import Reconciler
from server.core.memory.lifecycle.retention import Retention
from server.core.memory.lifecycle.run import LifecycleSchedule, Maintainer, MemoryJournal
from server.core.memory.lifecycle.session_end import SessionEnder
from server.core.memory.model import Vector
from server.core.memory.pockets import PocketCatalog, PocketScheme
from server.core.memory.ports import (
    ColumnsSnapshots,
    HotSessions,
    KeywordIndex,
    MaintenanceJournal,
    RecordStore,
    SpaceIndexSet,
    TextEncoder,
    VectorIndexSet,
)
from server.core.memory.state.access import AccessRecorder
from server.core.memory.state.checkpoint import Checkpoint
from server.core.memory.state.columns import Columns
from server.core.memory.state.hot import MemoryHotTier
from server.core.memory.state.indexer import Indexer
from server.core.memory.state.maintenance import Maintenance
from server.core.memory.state.sessions import MemoryHotSessions, hot_turns
from server.core.memory.summarise import ExtractiveSummariser, Summariser
from server.core.memory.write.supersede import SupersedePolicy
from server.core.memory.write.writer import Writer, new_memory_id
from server.core.metrics import Metrics, NoMetrics
from server.core.query.encoding import Encoding
from server.core.query.retriever import Retriever
from server.core.routing.inputs import LAYOUT, input_width
from server.core.routing.ports import DecisionSink
from server.core.routing.record import DecisionRecord
from server.core.routing.router import Router
from server.core.settings import (
    GENERIC_THRESHOLDS,
    EncoderThresholds,
    MediaSettings,
    MemorySettings,
    Settings,
    resolve_thresholds,
)

log = logging.getLogger("pocketd")


class SystemClock:
    """Wall-clock time in seconds since the epoch."""

    def now(self) -> float:
        return time.time()


class StartupError(Exception):
    """Start-up cannot go on; the message is one line that says what to fix."""


class DataDirLockedError(StartupError):
    """Another pocketd already serves this data directory."""


def lock_data_dir(data_dir: Path) -> IO[str]:
    """Hold an exclusive lock on DATA_DIR/LOCK for the life of the process."""
    data_dir.mkdir(parents=True, exist_ok=True)
    fh = open(data_dir / "LOCK", "a+")  # noqa: SIM115 - held open for the process lifetime
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError as exc:
        fh.close()
        raise DataDirLockedError(f"{data_dir} is in use by another pocketd process") from exc
    return fh


def build_encoder(settings: Settings) -> tuple[OnnxTextEncoder, OnnxTextEncoder] | None:
    """The built-in text encoder, checked against the configuration, as the queries' and the
    writes' sessions (the same one unless `encoder.write_session`); None when disabled."""
    enc_s = settings.encoder
    if enc_s.text not in TEXT_ENCODERS:
        return None
    where = model_dir(settings)
    origin = (
        f"encoder.model_dir is {enc_s.model_dir!r}"
        if enc_s.model_dir
        else f"encoder.model_dir is unset, so the built-in location {MODELS_DIR / enc_s.text}"
        " is used"
    )

    def open_session(threads: int, serialize: bool) -> OnnxTextEncoder:
        try:
            return OnnxTextEncoder(
                where, threads, enc_s.batch_size, enc_s.max_tokens, serialize, enc_s.max_chars
            )
        except ModelMissingError as exc:
            raise StartupError(f"{exc} ({origin})") from exc

    def opened(threads: int, serialize: bool) -> OnnxTextEncoder:
        # One encode now, on a thread that is not niced: the tokenizer's and onnxruntime's
        # worker threads are made at the first one and inherit its niceness, so a niced writer
        # must not be the first.
        enc = open_session(threads, serialize)
        enc.encode(["warm-up"])
        return enc

    # The writes' session is built beside the queries' (onnxruntime builds a session without
    # the GIL): about half the start-up time of building them one after the other.
    with ThreadPoolExecutor(1, thread_name_prefix="pocketd-encoder-open") as pool:
        later = pool.submit(opened, enc_s.write_threads, False) if enc_s.write_session else None
        encoder = opened(enc_s.threads, True)
        writes = encoder if later is None else later.result()
    dim = settings.memory.embedding_dim
    if encoder.dim != dim:
        raise StartupError(
            f"memory.embedding_dim is {dim}, but the encoder {encoder.manifest.name} in {where}"
            f" makes {encoder.dim}-d vectors: set memory.embedding_dim: {encoder.dim}, or"
            " encoder.text: none and send vectors of your own"
        )
    return encoder, writes


SPACE_FILE = "encoder.json"
PAGE_SECRET_FILE = "page_tokens.key"
# A data directory written before the space was recorded had MiniLM's vectors (the only
# built-in encoder then) if it has any records.
LEGACY_SPACE = "all-MiniLM-L6-v2"
# While `pocketd reembed` runs, the directory holds vectors of two spaces: no server may start.
REEMBEDDING = "reembedding to "


def client_space(dim: int) -> str:
    """The space of a directory written with `encoder.text: none`: the clients' own vectors."""
    return f"client vectors of {dim} dimensions"


def recorded_space(data_dir: Path) -> str | None:
    """The vector space the data directory's memories were encoded in, or None if it has none."""
    marker = data_dir / SPACE_FILE
    if marker.is_file():
        return str(json.loads(marker.read_text())["space"])
    records = data_dir / "records.sqlite3"
    if not records.is_file():
        return None
    with contextlib.closing(sqlite3.connect(f"file:{records}?mode=ro", uri=True)) as db:
        try:
            live = db.execute("SELECT 1 FROM records WHERE deleted=0 LIMIT 1").fetchone()
        except sqlite3.OperationalError:  # no table yet: nothing was ever written
            live = None
    return LEGACY_SPACE if live else None


def record_space(data_dir: Path, space: str, **about: object) -> None:
    marker = data_dir / SPACE_FILE
    tmp = marker.with_suffix(".tmp")
    tmp.write_text(json.dumps({"space": space, **about}, indent=2) + "\n")
    tmp.replace(marker)


def check_space(data_dir: Path, encoder: OnnxTextEncoder | None, dim: int) -> None:
    """Refuse a data directory whose memories were encoded in another vector space (their
    vectors cannot be compared with this configuration's queries); record the space of a new
    one. Without an encoder the space is the clients' own vectors, of `dim` dimensions."""
    space = client_space(dim) if encoder is None else encoder.space
    name = "encoder.text: none" if encoder is None else repr(encoder.manifest.name)
    have = recorded_space(data_dir)
    if have is None:
        about = {"dim": dim} if encoder is None else {"name": encoder.manifest.name, "dim": dim}
        record_space(data_dir, space, **about)
    elif have.startswith(REEMBEDDING):
        raise StartupError(
            f"{data_dir} is half re-embedded ({have[len(REEMBEDDING) :]!r}): a `pocketd reembed`"
            f" was interrupted; run `pocketd reembed --data-dir {data_dir}` again"
        )
    elif have != space:
        raise StartupError(
            f"{data_dir} holds vectors of the space {have!r}, but the configuration ({name})"
            f" makes vectors of the space {space!r}: run `pocketd reembed --data-dir {data_dir}`"
            " (with the configuration it will run with) to re-embed its memories, or configure"
            " the encoder it was written with"
        )


def thresholds_of(encoder: OnnxTextEncoder | None) -> EncoderThresholds:
    """The encoder-dependent thresholds: the built-in encoder's manifest's, or the generic ones
    (no encoder, or a stand-in)."""
    return (
        encoder.manifest.thresholds if isinstance(encoder, OnnxTextEncoder) else GENERIC_THRESHOLDS
    )


def page_secret(data_dir: Path) -> bytes:
    """The secret List page tokens are sealed with, made at first start (only the owner may
    read it), so that tokens outlive a restart."""
    path = data_dir / PAGE_SECRET_FILE
    if not path.exists():
        tmp = path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(secrets.token_bytes(SECRET_BYTES))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        fsync_dir(data_dir)
    return path.read_bytes()


def _say_access(settings: Settings) -> None:
    """Say at start who may call, and warn of a port anyone can reach."""
    tokens = settings.auth.tokens
    if tokens:
        tenants = sorted({t.tenant for t in tokens})
        log.info("auth: %d tokens for tenants %s", len(tokens), ", ".join(tenants))
        if not settings.tls.cert_file and not is_loopback(settings.server.listen):
            log.warning(
                "auth is on without TLS and %s is not loopback: tokens travel in the clear"
                " (set tls.cert_file and tls.key_file)",
                settings.server.listen,
            )
    elif not is_loopback(settings.server.listen):
        log.warning(
            "auth is off and %s is not loopback (server.allow_unauthenticated): anyone who"
            " reaches the port acts as the default tenant",
            settings.server.listen,
        )
    log.info(
        "transport: %s",
        "mTLS" if settings.tls.client_ca_file else "TLS" if settings.tls.cert_file else "plaintext",
    )
    metrics = settings.server.metrics_listen
    if metrics and not is_loopback(metrics):
        log.warning(
            "metrics on %s, beyond loopback and without a token: its labels name the tenants"
            " and their call counts; let only your scraper reach it",
            metrics,
        )


def agent_loop(
    settings: Settings,
    ledger: Ledger,
    engine: MemoryEngine,
    encoder: OnnxTextEncoder | None,
    count_tokens: TokenCount,
) -> AgentLoop:
    """The agent loop over the ledger and the engine, with the installed difficulty model if
    there is one (`pocketd models train-difficulty`), and the head that reads what users say
    (`said`: shipped, or installed by `pocketd models train-said`)."""
    clock = SystemClock()
    a = settings.agent
    tiers = TierRouter(tier_settings(a), clock, load_difficulty(settings, encoder))
    cache = ToolCache(clock, a.tool_cache_size)
    said = (  # a stand-in encoder (tests) has no space a head was fitted in
        load_said(settings, encoder.space, encoder.dim)
        if isinstance(encoder, OnnxTextEncoder)
        else None
    )
    return AgentLoop(
        a, ledger, engine, tiers, cache, count_tokens, said, settings.limits.max_query_chars
    )


def keep_acknowledged(
    settings: Settings, engine: MemoryEngine, ledger_store: SqliteLedgerStore
) -> None:
    """The engine's intake of acknowledged memories over its own file
    (`<data_dir>/acknowledged.sqlite3`); the memories a crash left acknowledged and unwritten
    are written again, with those an older pocketd kept in the ledger's file (handed over
    first)."""
    data = Path(settings.server.data_dir)
    intake = engine.keep_acknowledged(
        SqliteAcknowledgedStore(data / "acknowledged.sqlite3"), settings.server.background_nice
    )
    moved = ledger_store.hand_over_memories(intake.adopt)
    if moved:
        log.info("%d agent memories kept in the ledger's file handed over to memory", moved)
    kept = intake.replay()
    if kept:
        log.info("writing %d agent memories acknowledged before the last stop", kept)


def assemble_engine(
    settings: MemorySettings,
    store: RecordStore,
    vectors: VectorIndexSet,
    keywords: KeywordIndex,
    encoder: TextEncoder | None,
    clock: Clock,
    snapshots: ColumnsSnapshots,
    background_nice: int = 0,
    write_encoder: TextEncoder | None = None,
    lifecycle: LifecycleAdapters | None = None,
    media: MediaAdapters | None = None,
) -> MemoryEngine:
    """The engine and its parts over the given stores (`snapshots`: where the metadata
    columns' checkpoint is kept). `background_nice`: the niceness of the
    indexer's and the maintenance's threads; `write_encoder`: the encoder of memories, apart
    from the queries' (the same one when None); `lifecycle`: the hot tier's session memory,
    the summariser and the maintenance journal (default: in memory, extractive); `media`: the
    media pipeline's readers and stores (None: no media are read)."""
    if lifecycle is None:
        lifecycle = LifecycleAdapters(MemoryHotSessions(clock), None, MemoryJournal())
    columns = Columns(PocketCatalog(PocketScheme(settings.pockets)))
    hot = MemoryHotTier(settings.embedding_dim, keywords.analyze, clock)
    publish = threading.Lock()  # the writer's synchronous followers and the indexer's marks
    keeper = BlobKeeper(media.blobs, media.ledger) if media is not None else None
    writer = Writer(
        settings,
        store,
        columns,
        hot,
        vectors,
        keywords.analyze,
        clock,
        publish,
        followers=(columns, hot, lifecycle.sessions, *((keeper,) if keeper else ())),
        media_cosine=media.settings.dedup_image_cosine if media is not None else 1.0,
    )
    indexer = Indexer(
        settings.index,
        settings.context,
        store,
        vectors,
        keywords,
        hot,
        columns.catalog.scheme,
        columns.neighbours_many,
        clock,
        publish,
        background_nice,
        spaces=media.spaces if media is not None else None,
    )
    access = AccessRecorder(writer.add_access)
    checkpoint = Checkpoint(columns, store, snapshots, settings.index.columns_snapshot_seconds)
    encoding = Encoding(encoder, write_encoder, settings.embedding_dim)
    life = assemble_lifecycle(
        settings,
        lifecycle,
        encoding,
        writer,
        store,
        columns,
        keywords.analyze,
        clock,
        background_nice,
    )
    maintenance = Maintenance(
        [
            ("access statistics", access.flush),
            # Before the tier moves: a session idle past the TTL is summarised, then moved.
            ("session ends", lambda: life.ender.expire(no_deadline())),
            ("tier moves", lambda: writer.move_tiers(no_deadline())),
            ("metadata snapshot", checkpoint.save_if_due),
        ],
        settings.access_flush_seconds,
        background_nice,
    )
    parts = EngineParts(
        columns=columns,
        hot=hot,
        encoding=encoding,
        writer=writer,
        retriever=Retriever(
            settings,
            columns,
            hot,
            vectors,
            keywords,
            store,
            clock,
            media.spaces if media is not None else None,
            media.space_scales if media is not None else None,
        ),
        indexer=indexer,
        access=access,
        maintenance=maintenance,
        checkpoint=checkpoint,
        lifecycle=life,
        media=None
        if media is None or keeper is None
        else MediaIntake(
            media.settings,
            media.reader,
            media.blobs,
            keeper,
            media.ledger,
            clock,
            new_memory_id,
            background_nice,
        ),
    )
    return MemoryEngine(settings, parts, store, vectors, keywords, clock)


@dataclass(frozen=True)
class MediaAdapters:
    """What the media pipeline is given from outside the core: its settings, the readers (a
    decoder; OCR, speech and the image space where configured), the blob store, the media
    ledger, and the named spaces' indexes with each space's (floor, ceiling)."""

    settings: MediaSettings
    reader: MediaReader
    blobs: BlobStore
    ledger: MediaLedger
    spaces: SpaceIndexSet
    space_scales: dict[str, tuple[float, float]]


def media_adapters(settings: Settings, data: Path, fresh_rev: int) -> MediaAdapters:
    """The media pipeline over a data directory (`blobs/`, `media.sqlite`, `spaces/`):
    OCR and speech loaded on their first use (a server that is never sent an image pays
    nothing), the image space at start (its manifest's hashes checked: exit 2 naming
    media.clip.model_dir when it does not load). `fresh_rev`: the revision a new `spaces/`
    is current to (the other indexes')."""
    m = settings.media
    ocr = LazyOcr(lambda: RapidOcr(m.ocr)) if m.ocr.enabled else None
    speech: Speech | None = None
    if m.speech.enabled:
        english = speech_model_dir(settings)
        multi = Path(m.speech.multilingual_model_dir) if m.speech.multilingual_model_dir else None
        if english.exists():
            speech = LazySpeech(
                lambda: WhisperSpeech(m.speech, english, multi),
                ("en", "zh", "auto") if multi is not None else ("en",),
            )
        else:
            log.warning(
                "no speech model in %s (make models): recordings need a transcript", english
            )
    space = None
    scales: dict[str, tuple[float, float]] = {}
    if m.clip.model_dir:
        try:
            space = OnnxImageSpace(Path(m.clip.model_dir), m.clip)
        except (ClipModelError, OSError) as exc:
            raise StartupError(f"media.clip.model_dir: {exc}") from exc
        scales[space.name] = (space.vector_floor, space.vector_ceiling)
    return MediaAdapters(
        m,
        MediaReader(m, PilDecoder(m), ocr, speech, space),
        FileBlobStore(data / "blobs"),
        SqliteMediaLedger(data / "media.sqlite"),
        SpaceIndexes(data / "spaces", fresh_rev),
        scales,
    )


class LazyOcr:
    """An `Ocr` built on its first read (rapidocr's import and sessions take seconds)."""

    def __init__(self, build: Callable[[], Ocr]) -> None:
        self._build = build
        self._ocr: Ocr | None = None
        self._lock = threading.Lock()

    def read(self, image: Pixels) -> OcrText:
        with self._lock:
            if self._ocr is None:
                self._ocr = self._build()
        return self._ocr.read(image)


class LazySpeech:
    """A `Speech` built on its first transcript (a Whisper model takes a second to load)."""

    def __init__(self, build: Callable[[], Speech], languages: tuple[str, ...]) -> None:
        self._build = build
        self._speech: Speech | None = None
        self._lock = threading.Lock()
        self.languages = languages

    def transcribe(self, samples: Samples, language: str) -> Transcript:
        with self._lock:
            if self._speech is None:
                self._speech = self._build()
        return self._speech.transcribe(samples, language)


@dataclass(frozen=True)
class LifecycleAdapters:
    """What the lifecycle is given from outside the core: the hot tier's session memory (in
    memory or Redis), the summariser (None: the extractive one over the write encoder), and the
    maintenance journal."""

    sessions: HotSessions
    summariser: Summariser | None
    journal: MaintenanceJournal


def assemble_lifecycle(
    settings: MemorySettings,
    given: LifecycleAdapters,
    encoding: Encoding,
    writer: Writer,
    store: RecordStore,
    columns: Columns,
    terms: Callable[[str], list[str]],
    clock: Clock,
    nice: int,
) -> Lifecycle:
    """Session ends, reconciliation, retention, compression and the schedule that runs them."""
    lc = settings.lifecycle
    encode = None
    if encoding.available():

        def encode(texts: Sequence[str]) -> Vector:
            return encoding.encode(list(texts), "a summary", no_deadline(), write=True)

    summariser = given.summariser
    if summariser is None and encode is not None:
        summariser = ExtractiveSummariser(encode)
    ender = SessionEnder(
        settings, given.sessions, summariser, writer, store, columns, clock, encode
    )
    maintainer = Maintainer(
        ender,
        Retention(lc.retention, columns, store, writer, clock),
        Compressor(lc.compression, summariser, columns, store, writer, clock, encode),
        columns,
        given.journal,
        clock,
    )
    return Lifecycle(
        sessions=given.sessions,
        ender=ender,
        reconciler=Reconciler(SupersedePolicy(lc.supersede, terms), store, writer, clock),
        maintainer=maintainer,
        schedule=LifecycleSchedule(maintainer, lc.maintenance, nice),
    )


class CountedDecisions:
    """The decision log, with each decision counted in the metrics first."""

    def __init__(self, sink: DecisionSink, metrics: Metrics) -> None:
        self._sink = sink
        self._metrics = metrics

    def write(self, rec: DecisionRecord) -> None:
        self._metrics.decision(rec.asked or rec.policy, rec.policy, bool(rec.widened))
        self._sink.write(rec)

    def close(self) -> None:
        self._sink.close()


def open_vectors(data: Path, m: MemorySettings) -> UsearchIndexSet:
    """The vector indexes of a data directory: a usearch index per warm pocket, the cold
    archive's segments for the cold ones (`ColdArchiveError` when a segment is damaged)."""
    return UsearchIndexSet(
        data / "vectors",
        m.embedding_dim,
        m.index.vector_dtype,
        m.index.connectivity,
        m.index.expansion_add,
        m.hybrid_search.expansion_search,
        (m.pockets.coarse_min_rows, m.pockets.exact_max_rows),
        ColdArchive(data / "cold", m.embedding_dim, m.lifecycle.cold),
    )


def lifecycle_adapters(
    m: MemorySettings,
    store: RecordStore,
    encoder: TextEncoder | None,
    clock: Clock,
    data: Path,
) -> LifecycleAdapters:
    """The hot tier's session memory (in memory, or Redis: exit 2 naming memory.hot.url when
    it cannot be reached), the configured summariser and the journal file."""
    if m.hot.backend == "redis":
        try:
            sessions: HotSessions = open_redis_sessions(
                m.hot, clock, lambda: hot_turns(store.scan_live())
            )
        except RedisUnreachableError as exc:
            raise StartupError(str(exc)) from exc
    else:
        sessions = MemoryHotSessions(clock)
    summariser = None
    if encoder is not None:

        def encode(texts: Sequence[str]) -> Vector:
            return encoder.encode(list(texts))

        try:
            summariser = build_summariser(m.lifecycle.session_end, encode)
        except ValueError as exc:
            raise StartupError(f"memory.lifecycle.session_end: {exc}") from exc
    return LifecycleAdapters(sessions, summariser, JournalFile(data / "maintenance.journal"))


def build_engine(
    settings: Settings,
    encoder: OnnxTextEncoder | None,
    write_encoder: OnnxTextEncoder | None = None,
    metrics: Metrics | None = None,
) -> MemoryEngine:
    """Open every store under `server.data_dir`, wire the engine and its router (`metrics`:
    where its decisions are counted)."""
    data = Path(settings.server.data_dir)
    m = resolve_thresholds(settings.memory, thresholds_of(encoder))
    if m.hybrid_search.floor >= m.hybrid_search.ceiling:
        raise StartupError(
            f"memory.hybrid_search.vector_floor ({m.hybrid_search.floor}) must be below"
            f" vector_ceiling ({m.hybrid_search.ceiling}, set or the encoder's)"
        )
    keywords = TantivyKeywordIndex(
        data / "keywords", m.index.keyword_heap_bytes, m.index.keyword_term_cache
    )
    try:
        vectors = open_vectors(data, m)
    except ColdArchiveError as exc:  # the operator's to fix (the message says how)
        raise StartupError(str(exc)) from exc
    store = SqliteRecordStore(data / "records.sqlite3", m.index.record_cache_bytes)
    clock = SystemClock()
    media = media_adapters(settings, data, min(vectors.saved_rev(), keywords.committed_rev()))
    engine = assemble_engine(
        m,
        store,
        vectors,
        keywords,
        encoder,
        clock,
        ColumnsFile(data / "columns"),
        settings.server.background_nice,
        write_encoder,
        lifecycle_adapters(m, store, write_encoder or encoder, clock, data),
        media,
    )
    r = settings.router
    decisions = CountedDecisions(
        FileDecisionLog(data / "router", r.log_max_bytes, r.log_files), metrics or NoMetrics()
    )
    models = ModelWatcher(
        ModelStore(data / "router" / "models"),
        partial(OnnxPocketModel, layout=LAYOUT, inputs=input_width(r.prefix_dim)),
        r.reload_interval_s,
    )
    engine.planner = Router(
        r,
        m,
        keywords.analyze,
        engine.routable,
        keywords.pocket_terms,
        decisions,
        partial(engine.recall, shadow=True),
        models=models,
        encode=None if encoder is None else engine.encode,
    )
    if encoder is not None and r.policy != "full":  # the first routed Recall need not wait
        threading.Thread(target=_warm, args=(engine.planner,), daemon=True).start()
    return engine


def _warm(router: Router) -> None:
    try:
        router.intents.warm()
    except Exception:  # the first decision encodes them again, and says why it cannot
        log.exception("encoding the router's intent examples failed")


def _open(
    settings: Settings,
    encoder: OnnxTextEncoder | None,
    write_encoder: OnnxTextEncoder | None,
    metrics: Metrics,
) -> MemoryEngine:
    t0 = time.perf_counter()
    jit = compile_all()
    engine = build_engine(settings, encoder, write_encoder, metrics)
    timings = engine.load()
    log.info(
        "ready in %.2fs (kernels %.2fs, metadata %.2fs for %d records, tail %d)",
        time.perf_counter() - t0,
        jit,
        timings["columns_s"],
        timings["records"],
        timings["tail"],
    )
    return engine


async def _catch_up(engine: MemoryEngine, settings: Settings, stop: asyncio.Event) -> None:
    """Wait, with progress lines, until few enough records wait for the indexer to serve."""
    limit = settings.memory.hot.serving_max_pending
    first = engine.index_state().pending
    if first <= limit:
        return
    log.info("catching up: %d records wait for the indexer (serving at <= %d)", first, limit)
    t0 = last = time.monotonic()
    while not stop.is_set() and (pending := engine.index_state().pending) > limit:
        if time.monotonic() - last >= 2.0:
            last = time.monotonic()
            rate = (first - pending) / (last - t0)
            log.info("catching up: %d records left (%.0f records/s)", pending, rate)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 0.05)
    log.info("caught up in %.2fs", time.monotonic() - t0)


def _gauges(
    metrics: Metrics,
    grpc_server: GrpcServer,
    encoder: OnnxTextEncoder | None,
    write_encoder: OnnxTextEncoder | None,
) -> None:
    """The transport's and the encoders' gauges, read when the metrics are scraped."""
    for lane in Lane:
        metrics.gauge(
            f"pocketd_{lane.name.lower()}_calls_in_flight",
            f"Calls in flight (admitted, not yet stopped) in the {lane.value} lane",
            partial(grpc_server.calls.in_lane, lane),
        )
    if encoder is not None:
        metrics.gauge(
            "pocketd_encoder_queue",
            "Texts waiting for or running on the queries' encoder session",
            encoder.queued,
        )
    if write_encoder is not None and write_encoder is not encoder:
        metrics.gauge(
            "pocketd_write_encoder_queue",
            "Texts waiting for or running on the writes' encoder session (Remember, Step)",
            write_encoder.queued,
        )


def _engine_gauges(metrics: Metrics, engine: MemoryEngine) -> None:
    """The memory engine's gauges (from the moment it is open, catching up included)."""
    metrics.gauge(
        "pocketd_index_pending_records",
        "Memories acknowledged and not yet in the warm indexes (served by the hot tier)",
        engine.hot.pending,
    )
    metrics.gauge(
        "pocketd_index_lag_revisions",
        "Revisions of the record store the indexer has not followed yet",
        partial(_index_lag, engine),
    )
    metrics.gauge("pocketd_hot_records", "Memories in the hot tier", engine.hot.size)
    media = engine.media
    if media is not None:
        metrics.gauge(
            "pocketd_media_pending",
            "Media acknowledged and waiting to be read (OCR, speech, the image vector)",
            lambda: media.counts().pending,
        )
        metrics.gauge(
            "pocketd_media_failed", "Media whose reading failed", lambda: media.counts().failed
        )
        metrics.gauge(
            "pocketd_media_blobs", "Blobs held by a memory or a pending job", media.keeper.count
        )


def _index_lag(engine: MemoryEngine) -> int:
    state = engine.index_state()
    return state.head_rev - state.indexed_rev


async def serve(settings: Settings, stop: asyncio.Event | None = None) -> None:
    """Run until `stop` is set or SIGTERM/SIGINT arrives, then shut down cleanly."""
    lock = lock_data_dir(Path(settings.server.data_dir))
    try:  # before binding: a missing or mismatched model is one line and exit 2, nothing more
        encoders = build_encoder(settings)
        check_space(
            Path(settings.server.data_dir),
            None if encoders is None else encoders[0],
            settings.memory.embedding_dim,
        )
    except StartupError:
        lock.close()
        raise
    encoder, write_encoder = encoders or (None, None)
    # A thread doing Python work (the writer, the indexer) keeps the GIL for up to this long
    # before another gets it: a shorter slice bounds how long a Recall waits behind them.
    sys.setswitchinterval(settings.server.gil_switch_ms / 1000.0)
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    tenants = {t.tenant for t in settings.auth.tokens}
    pools = WorkerPools.from_settings(settings.server, len(tenants))
    tokenizer = tokenizer_file(settings)
    counter = TokenCounter(tokenizer) if tokenizer.is_file() else None
    exporter = PrometheusMetrics() if settings.server.metrics_listen else None
    metrics: Metrics = exporter or NoMetrics()
    grpc_server = GrpcServer(
        settings,
        pools,
        None if counter is None else counter.count,
        page_secret(Path(settings.server.data_dir)),
        metrics,
    )
    where = settings.server.metrics_listen
    try:
        if exporter is not None:  # both ports bound, or neither, before a line is logged
            try:
                bound = exporter.serve(where)
            except OSError as exc:
                raise ListenError(f"cannot serve metrics on {where}: {exc.strerror}") from exc
        port = await grpc_server.start(settings.server.listen)
    except ListenError as exc:
        if exporter is not None:
            exporter.close()
        lock.close()
        raise StartupError(str(exc)) from exc
    _gauges(metrics, grpc_server, encoder, write_encoder)
    host = settings.server.listen.rsplit(":", 1)[0]
    log.info("listening on %s:%d (NOT_SERVING until loaded), pid %d", host, port, os.getpid())
    if exporter is not None:
        log.info("metrics on http://%s:%d/metrics", where.rpartition(":")[0], bound)
    _say_access(settings)
    engine: MemoryEngine | None = None
    ledger_store: SqliteLedgerStore | None = None
    loop_: AgentLoop | None = None
    try:
        ledger_store = SqliteLedgerStore(
            Path(settings.server.data_dir) / "ledger.sqlite3", settings.ledger.reply_ttl_seconds
        )
        ledger = Ledger(ledger_store, SystemClock(), settings.ledger, metrics)
        await grpc_server.ledger_ready(ledger)
        opening: asyncio.Future[MemoryEngine] = loop.run_in_executor(
            pools.read, _open, settings, encoder, write_encoder, metrics
        )
        stopped: asyncio.Future[bool] = asyncio.ensure_future(stop.wait())
        waiting: set[asyncio.Future[Any]] = {opening, stopped}
        done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        if opening in done:
            engine = opening.result()
            _engine_gauges(metrics, engine)
            await _catch_up(engine, settings, stop)
            keep_acknowledged(settings, engine, ledger_store)
            if counter is not None:
                loop_ = agent_loop(settings, ledger, engine, encoder, counter.count)
                await grpc_server.agent_ready(loop_)
            if not stop.is_set():
                await grpc_server.mark_serving(engine)
                log.info("SERVING on %s:%d", host, port)
            await stopped
        else:
            engine = await opening
        log.info("draining (up to %.1fs)", settings.server.drain_seconds)
        await grpc_server.drain(settings.server.drain_seconds)
    except StartupError:
        # The engine did not open (an unreachable Redis, a damaged cold segment): close the
        # port while the loop still runs; left to grpc's clean-up at exit, it logs a traceback.
        await grpc_server.drain(0.0)
        raise
    finally:
        # The calls' work first (cancelled calls stop at their next deadline check), then the
        # stores: nothing still running can touch a closed store.
        await loop.run_in_executor(None, pools.shutdown)
        if engine is not None:  # (its acknowledged memories' queued writes first)
            await loop.run_in_executor(None, engine.close)
        if ledger_store is not None:
            ledger_store.close()
        if exporter is not None:
            exporter.close()
        lock.close()
        log.info("stopped")
