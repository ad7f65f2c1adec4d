"""The Python client: deadlines, and retries of idempotent calls only."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import grpc
import pytest

from pocketd import AsyncClient, Client, InsecureTokenError, MemoryInput
from pocketd.v1 import memory_service_pb2 as spb
from pocketd.v1 import memory_service_pb2_grpc as spb_grpc


class Flaky(spb_grpc.MemoryServiceServicer):  # type: ignore[misc]
    """Fails the first `failures` calls of each method with UNAVAILABLE; Get hangs."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.calls: dict[str, int] = {}

    async def _maybe_fail(self, name: str, context: grpc.aio.ServicerContext) -> None:  # type: ignore[type-arg]
        self.calls[name] = self.calls.get(name, 0) + 1
        if self.calls[name] <= self.failures:
            await context.abort(grpc.StatusCode.UNAVAILABLE, "warming up")

    async def Stats(
        self, request: spb.StatsRequest, context: grpc.aio.ServicerContext
    ) -> spb.StatsResponse:  # type: ignore[type-arg]
        await self._maybe_fail("Stats", context)
        return spb.StatsResponse(pending_index=7)

    async def Remember(
        self, request: spb.RememberRequest, context: grpc.aio.ServicerContext
    ) -> spb.RememberResponse:  # type: ignore[type-arg]
        await self._maybe_fail("Remember", context)
        return spb.RememberResponse(memory_id="m1", decision=spb.GATE_DECISION_STORED)

    async def Get(
        self, request: spb.GetRequest, context: grpc.aio.ServicerContext
    ) -> spb.GetResponse:  # type: ignore[type-arg]
        await asyncio.sleep(5)
        return spb.GetResponse()


@pytest.fixture
async def flaky() -> AsyncIterator[tuple[str, Flaky]]:
    servicer = Flaky(failures=2)
    server = grpc.aio.server()
    spb_grpc.add_MemoryServiceServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    yield f"127.0.0.1:{port}", servicer
    await server.stop(0)


async def test_idempotent_calls_are_retried_on_unavailable(flaky: tuple[str, Flaky]) -> None:
    target, servicer = flaky
    async with AsyncClient(target) as c:
        assert (await c.stats()).pending_index == 7
    assert servicer.calls["Stats"] == 3


async def test_writes_are_not_retried(flaky: tuple[str, Flaky]) -> None:
    target, servicer = flaky
    async with AsyncClient(target) as c:
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await c.remember("ns", "text")
    assert info.value.code() == grpc.StatusCode.UNAVAILABLE
    assert servicer.calls["Remember"] == 1


async def test_calls_have_deadlines(flaky: tuple[str, Flaky]) -> None:
    target, _ = flaky
    async with AsyncClient(target, timeout=0.2) as c:
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await c.get("ns", "m1")
    assert info.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED


async def test_the_blocking_client_retries_too(flaky: tuple[str, Flaky]) -> None:
    target, servicer = flaky
    loop = asyncio.get_running_loop()

    def call() -> int:
        with Client(target) as c:
            return c.stats().pending_index

    assert await loop.run_in_executor(None, call) == 7
    assert servicer.calls["Stats"] == 3


async def test_a_batch_deadline_grows_with_its_size(tmp_path) -> None:
    """256 turns to encode must not fail the client's default 5 s deadline (here 0.5 s)."""
    from tests.api.test_hardening import SlowEncoder
    from tests.conftest import start_server

    srv, pools = await start_server(tmp_path / "b", SlowEncoder(0.3))  # 4 chunks: 1.2 s
    try:
        items = [MemoryInput("imp", f"Turn {i} of the import") for i in range(256)]

        def call() -> int:
            with Client(srv.target, timeout=0.5) as c:
                return sum(r.stored for r in c.remember_batch(items))

        assert await asyncio.get_running_loop().run_in_executor(None, call) == 256
    finally:
        await srv.grpc.drain(1)
        srv.engine.close()
        pools.shutdown()


@pytest.mark.parametrize(
    ("target", "allowed"),
    [
        ("127.0.0.1:50051", True),
        ("localhost:50051", True),
        ("[::1]:50051", True),
        ("dns:///localhost:50051", True),
        ("unix:/run/pocketd.sock", True),
        ("10.0.0.7:50051", False),
        ("pocketd.internal:50051", False),
    ],
)
def test_a_token_goes_in_the_clear_only_to_loopback(target: str, allowed: bool) -> None:
    if allowed:
        Client(target, token="t0ken").close()
        return
    with pytest.raises(InsecureTokenError, match="in the clear"):
        Client(target, token="t0ken")
    Client(target).close()  # no token: nothing to leak
    Client(target, token="t0ken", allow_insecure_token=True).close()
