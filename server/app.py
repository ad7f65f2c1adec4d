"""The composition root: build the adapters and the engine from `Settings` and run the server.

The only module that knows every layer. Start-up order: bind the port (health NOT_SERVING),
compile the kernels and open the stores off the event loop, then report SERVING. On SIGTERM or
SIGINT: NOT_SERVING, drain the calls in flight, stop the indexer, snapshot the indexes, close the
stores, return.
"""

from __future__ import annotations

import asyncio
import fcntl
import logging
import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO, Any

from kernels.warmup import compile_all
from server.adapters.onnx_encoder import OnnxTextEncoder
from server.adapters.sqlite_store import SqliteRecordStore
from server.adapters.tantivy_index import TantivyKeywordIndex
from server.adapters.usearch_index import UsearchIndexSet
from server.api.server import GrpcServer
from server.core.engine import MemoryEngine
from server.core.settings import Settings

log = logging.getLogger("pocketd")


class SystemClock:
    """Wall-clock time in seconds since the epoch."""

    def now(self) -> float:
        return time.time()


class DataDirLockedError(Exception):
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


def build_engine(settings: Settings) -> MemoryEngine:
    """Open every store under `server.data_dir` and wire the engine."""
    data = Path(settings.server.data_dir)
    m = settings.memory
    enc_s = settings.encoder
    encoder = None
    if enc_s.text == "minilm":
        encoder = OnnxTextEncoder(
            Path(enc_s.model_dir), enc_s.threads, enc_s.batch_size, enc_s.max_tokens
        )
    return MemoryEngine(
        m,
        SqliteRecordStore(data / "records.sqlite3"),
        UsearchIndexSet(
            data / "vectors",
            m.embedding_dim,
            m.index.vector_dtype,
            m.index.connectivity,
            m.index.expansion_add,
            m.hybrid_search.expansion_search,
        ),
        TantivyKeywordIndex(data / "keywords", m.index.keyword_heap_bytes),
        encoder,
        SystemClock(),
    )


def _open(settings: Settings) -> MemoryEngine:
    t0 = time.perf_counter()
    jit = compile_all()
    engine = build_engine(settings)
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


async def serve(settings: Settings, stop: asyncio.Event | None = None) -> None:
    """Run until `stop` is set or SIGTERM/SIGINT arrives, then shut down cleanly."""
    lock = lock_data_dir(Path(settings.server.data_dir))
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    executor = ThreadPoolExecutor(
        settings.server.worker_threads, thread_name_prefix="pocketd-worker"
    )
    grpc_server = GrpcServer(settings, executor)
    port = await grpc_server.start(settings.server.listen)
    host = settings.server.listen.rsplit(":", 1)[0]
    log.info("listening on %s:%d (NOT_SERVING until loaded), pid %d", host, port, os.getpid())
    engine: MemoryEngine | None = None
    try:
        opening: asyncio.Future[MemoryEngine] = loop.run_in_executor(executor, _open, settings)
        stopped: asyncio.Future[bool] = asyncio.ensure_future(stop.wait())
        waiting: set[asyncio.Future[Any]] = {opening, stopped}
        done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        if opening in done:
            engine = opening.result()
            await grpc_server.mark_serving(engine)
            log.info("SERVING on %s:%d", host, port)
            await stopped
        else:
            engine = await opening
        log.info("draining (up to %.1fs)", settings.server.drain_seconds)
        await grpc_server.drain(settings.server.drain_seconds)
    finally:
        if engine is not None:
            await loop.run_in_executor(executor, engine.close)
        executor.shutdown(wait=True)
        lock.close()
        log.info("stopped")
