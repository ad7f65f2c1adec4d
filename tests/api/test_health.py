"""Health per service: each turns SERVING when what it needs is open (the ledger before the
memory engine has caught up), and all turn NOT_SERVING when a drain begins."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from pocketd.v1 import ledger_service_pb2 as lpb
from pocketd.v1 import ledger_service_pb2_grpc as lpb_grpc
from pocketd.v1 import memory_service_pb2 as spb
from pocketd.v1 import memory_service_pb2_grpc as spb_grpc
from server.adapters.onnx_encoder import OnnxTextEncoder
from server.adapters.sqlite_ledger import SqliteLedgerStore
from server.adapters.token_counter import TokenCounter
from server.api.calls import WorkerPools
from server.api.server import AGENT_NAME, LEDGER_NAME, SERVICE_NAME, GrpcServer
from server.app import SystemClock, agent_loop
from server.core.ledger.ledger import Ledger
from tests.conftest import TOKENIZER, make_settings, open_engine

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


async def statuses(target: str) -> dict[str, int]:
    async with grpc.aio.insecure_channel(target) as ch:
        stub = health_pb2_grpc.HealthStub(ch)
        out = {}
        for name in ("", SERVICE_NAME, LEDGER_NAME, AGENT_NAME):
            r = await stub.Check(health_pb2.HealthCheckRequest(service=name), timeout=30)
            out[name] = r.status
        return out


async def test_each_service_is_serving_once_what_it_needs_is_open(
    tmp_path: Path, encoder: OnnxTextEncoder
) -> None:
    settings = make_settings(tmp_path)
    pools = WorkerPools(2, 1)
    count = TokenCounter(TOKENIZER).count
    srv = GrpcServer(settings, pools, count)
    target = f"127.0.0.1:{await srv.start('127.0.0.1:0')}"
    store = SqliteLedgerStore(tmp_path / "ledger.sqlite3")
    eng = None
    loop = None
    try:
        assert set((await statuses(target)).values()) == {NOT_SERVING}

        # The ledger needs no memory: it answers while the engine is still loading.
        ledger = Ledger(store, SystemClock(), settings.ledger)
        await srv.ledger_ready(ledger)
        got = await statuses(target)
        assert got[LEDGER_NAME] == SERVING
        assert got[""] == got[SERVICE_NAME] == got[AGENT_NAME] == NOT_SERVING
        async with grpc.aio.insecure_channel(target) as ch:
            budget = lpb.TaskBudget(total_micros=1000)
            opened = await lpb_grpc.LedgerServiceStub(ch).OpenTask(
                lpb.OpenTaskRequest(task_id="t", namespace="n", budget=budget), timeout=30
            )
            assert opened.task_id == "t"
            with pytest.raises(grpc.aio.AioRpcError) as starting:
                await spb_grpc.MemoryServiceStub(ch).Stats(spb.StatsRequest(), timeout=30)
            assert starting.value.code() is grpc.StatusCode.UNAVAILABLE

        eng = open_engine(tmp_path / "mem", encoder, SystemClock(), settings.memory)  # type: ignore[arg-type]
        loop = agent_loop(settings, ledger, eng, encoder, count)
        await srv.agent_ready(loop)
        assert (await statuses(target))[AGENT_NAME] == SERVING
        await srv.mark_serving(eng)
        assert set((await statuses(target)).values()) == {SERVING}

        async with grpc.aio.insecure_channel(target) as ch:
            stub = health_pb2_grpc.HealthStub(ch)
            with pytest.raises(grpc.aio.AioRpcError) as unknown:
                await stub.Check(health_pb2.HealthCheckRequest(service="nope.V1"), timeout=30)
            assert unknown.value.code() is grpc.StatusCode.NOT_FOUND
            watch = stub.Watch(health_pb2.HealthCheckRequest(service=LEDGER_NAME), timeout=60)
            assert (await watch.read()).status == SERVING
            await srv.drain(1.0)
            assert (await watch.read()).status == NOT_SERVING
    finally:
        await srv.drain(0.1)
        if eng is not None:
            eng.close()
        store.close()
        pools.shutdown()
