"""Shared fixtures: real adapters in a temporary directory, a fake clock, an in-process gRPC server
on port 0."""

from __future__ import annotations

import os

os.environ.setdefault(
    "NUMBA_CACHE_DIR",
    os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), ".numba_cache"),
)

import contextlib
import importlib.util
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import msgspec
import numpy as np
import pytest
import redis
from hypothesis import HealthCheck
from hypothesis import settings as hsettings
from hypothesis.stateful import RuleBasedStateMachine

from server.adapters.columns_file import ColumnsFile
from server.adapters.journal_file import JournalFile
from server.adapters.onnx_encoder import OnnxTextEncoder
from server.adapters.sqlite_ledger import SqliteLedgerStore
from server.adapters.sqlite_store import SqliteRecordStore
from server.adapters.tantivy_index import TantivyKeywordIndex
from server.adapters.token_counter import TokenCounter
from server.api.calls import WorkerPools
from server.api.server import GrpcServer
from server.core.clock import Clock
from server.core.engine import MemoryEngine
from server.core.ledger.ledger import Ledger
from server.core.memory.state.sessions import MemoryHotSessions
from server.core.settings import MemorySettings, Settings, resolve_thresholds
from tests.redis_server import RedisServer

ROOT = Path(__file__).resolve().parent.parent
MODEL_DIR = ROOT / "models" / "use-m3"
TOKENIZER = ROOT / "models" / "tokenizer" / "tokenizer.json"
DIM = 512
DAY = 86_400.0

# Kernels compile on first use: a timing deadline would measure the JIT, not the code.
hsettings.register_profile("pocketd", deadline=None, max_examples=100)
hsettings.load_profile("pocketd")


def load_tool(name: str) -> ModuleType:
    """A script of tools/ (`tools/<name>.py`, not a package) imported as a module."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def wait_for(cond: Callable[[], bool], timeout: float = 120.0) -> None:
    """Wait for a condition with a deadline that holds on a loaded machine (never a fixed sleep
    standing in for it)."""
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.01)


class FakeClock:
    """A clock the test moves by hand."""

    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.t = now

    def now(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


@pytest.fixture(scope="session")
def encoder() -> OnnxTextEncoder:
    assert (MODEL_DIR / "model.onnx").exists(), "run `make models` (make test does it)"
    return OnnxTextEncoder(MODEL_DIR, threads=2, batch_size=32, max_tokens=256)


def make_settings(tmp: Path, **memory: object) -> Settings:
    """Settings for a server in `tmp`, with memory overrides."""
    base = Settings()
    mem = msgspec.structs.replace(base.memory, **memory) if memory else base.memory
    server = msgspec.structs.replace(base.server, data_dir=str(tmp), listen="127.0.0.1:0")
    enc = msgspec.structs.replace(base.encoder, model_dir=str(MODEL_DIR))
    return msgspec.structs.replace(base, server=server, memory=mem, encoder=enc)


def open_engine(
    data: Path,
    encoder: OnnxTextEncoder | None,
    clock: Clock,
    settings: MemorySettings | None = None,
    background_nice: int = 0,
    composed_lifecycle: bool = False,
) -> MemoryEngine:
    """An engine over `data`. Its lifecycle's parts: an in-process session memory, no
    summariser; with `composed_lifecycle`, the composition root's (`memory.hot.backend`, the
    configured summariser)."""
    from server.app import (
        LifecycleAdapters,
        assemble_engine,
        lifecycle_adapters,
        open_vectors,
        thresholds_of,
    )

    s = resolve_thresholds(settings or MemorySettings(), thresholds_of(encoder))
    store = SqliteRecordStore(data / "records.sqlite3", s.index.record_cache_bytes)
    lifecycle = (
        lifecycle_adapters(s, store, encoder, clock, data)
        if composed_lifecycle
        else LifecycleAdapters(
            MemoryHotSessions(clock), None, JournalFile(data / "maintenance.journal")
        )
    )
    eng = assemble_engine(
        s,
        store,
        open_vectors(data, s),
        TantivyKeywordIndex(
            data / "keywords", s.index.keyword_heap_bytes, s.index.keyword_term_cache
        ),
        encoder,
        clock,
        ColumnsFile(data / "columns"),
        background_nice,
        lifecycle=lifecycle,
    )
    eng.load()
    return eng


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def engine_factory(
    tmp_path: Path, encoder: OnnxTextEncoder, clock: FakeClock
) -> Iterator[Callable[..., MemoryEngine]]:
    opened: list[MemoryEngine] = []

    def make(settings: MemorySettings | None = None, use_encoder: bool = True) -> MemoryEngine:
        eng = open_engine(tmp_path / "data", encoder if use_encoder else None, clock, settings)
        opened.append(eng)
        return eng

    yield make
    for eng in opened:
        with contextlib.suppress(Exception):
            eng.close()


@pytest.fixture
def engine(engine_factory: Callable[..., MemoryEngine]) -> MemoryEngine:
    return engine_factory()


def unit_vec(rng: np.random.Generator, dim: int = DIM) -> np.ndarray:
    v = rng.normal(size=dim).astype(np.float32)
    return v / np.linalg.norm(v)


def near(v: np.ndarray, rng: np.random.Generator, noise: float) -> np.ndarray:
    w = v + noise * rng.normal(size=v.shape).astype(np.float32)
    return (w / np.linalg.norm(w)).astype(np.float32)


class RunningServer:
    def __init__(self, target: str, engine: MemoryEngine, grpc_server: GrpcServer) -> None:
        self.target = target
        self.engine = engine
        self.grpc = grpc_server
        self.loop: Any = None  # the agent loop


async def start_server(
    tmp: Path,
    encoder: OnnxTextEncoder | None,
    settings: Settings | None = None,
    clock: Clock | None = None,
    composed_lifecycle: bool = False,
) -> tuple[RunningServer, WorkerPools]:
    """A server in `tmp` on port 0; `clock`: its engine's and ledger's (None: the system's);
    `composed_lifecycle`: as `open_engine`'s."""
    settings = settings or make_settings(tmp)
    from server.app import SystemClock, agent_loop, keep_acknowledged

    clock = clock or SystemClock()
    executor = WorkerPools(4, 2)
    count = TokenCounter(TOKENIZER).count
    srv = GrpcServer(settings, executor, count)
    port = await srv.start("127.0.0.1:0")
    eng = open_engine(tmp, encoder, clock, settings.memory, 0, composed_lifecycle)
    store = SqliteLedgerStore(tmp / "ledger.sqlite3")
    ledger = Ledger(store, clock, settings.ledger)
    await srv.ledger_ready(ledger)
    keep_acknowledged(settings, eng, store)
    loop = agent_loop(settings, ledger, eng, encoder, count)
    await srv.agent_ready(loop)
    await srv.mark_serving(eng)
    running = RunningServer(f"127.0.0.1:{port}", eng, srv)
    running.loop = loop
    return running, executor


@pytest.fixture
async def server(tmp_path: Path, encoder: OnnxTextEncoder) -> AsyncIterator[RunningServer]:
    srv, executor = await start_server(tmp_path / "srv", encoder)
    yield srv
    await stop_server(srv, executor)


async def stop_server(srv: RunningServer, executor: WorkerPools) -> None:
    await srv.grpc.drain(1.0)
    srv.engine.close()  # (the acknowledged memories' queued writes first)
    executor.shutdown()


@pytest.fixture(scope="session")
def shared_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """One redis-server for the tests that only need a Redis (`redis_url`)."""
    srv = RedisServer(tmp_path_factory.mktemp("redis"))
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture
def redis_url(shared_redis: RedisServer) -> str:
    """The URL of an emptied Redis (a real redis-server: see tests/redis_server.py)."""
    with redis.Redis.from_url(shared_redis.url) as client:
        client.flushall()
    return shared_redis.url


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    """A redis-server of the test's own, which it may kill and start again."""
    srv = RedisServer(tmp_path / "redis")
    srv.start()
    yield srv
    srv.stop()


def run_state_machine(machine: type[RuleBasedStateMachine], default: int, steps: int) -> None:
    """A state machine's runs: `default` examples of `steps` steps, or
    `POCKETD_STATE_EXAMPLES` of them; no deadline (a step may restart an engine)."""
    machine.TestCase.settings = hsettings(
        max_examples=int(os.environ.get("POCKETD_STATE_EXAMPLES", str(default))),
        stateful_step_count=steps,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    machine.TestCase().runTest()
