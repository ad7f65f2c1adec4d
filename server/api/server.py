"""Build the grpc.aio server: MemoryService, the standard health service and reflection.

Health reports NOT_SERVING until `mark_serving()` (stores loaded, kernels compiled), and again
from the moment a drain begins, so load balancers stop sending work before calls are cut.
"""

from __future__ import annotations

import errno
import socket
from collections.abc import Callable

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from pocketd.v1 import agent_service_pb2 as apb
from pocketd.v1 import agent_service_pb2_grpc as apb_grpc
from pocketd.v1 import ledger_service_pb2 as lpb
from pocketd.v1 import ledger_service_pb2_grpc as lpb_grpc
from pocketd.v1 import memory_service_pb2 as spb
from pocketd.v1 import memory_service_pb2_grpc as spb_grpc
from server.api.agent_servicer import AgentServicer
from server.api.calls import WorkerPools
from server.api.guard import DecodeGuard
from server.api.ledger_servicer import LedgerServicer
from server.api.servicer import MemoryServicer
from server.core.agent.ledger import Ledger
from server.core.agent.step import AgentLoop
from server.core.engine import MemoryEngine
from server.core.settings import Settings

SERVICE_NAME = spb.DESCRIPTOR.services_by_name["MemoryService"].full_name
LEDGER_NAME = lpb.DESCRIPTOR.services_by_name["LedgerService"].full_name
AGENT_NAME = apb.DESCRIPTOR.services_by_name["AgentService"].full_name


class ListenError(Exception):
    """The address cannot be listened on (in use, not local, not resolvable)."""


def _probe(listen: str) -> None:
    """Fail with a clear `ListenError` if `listen` is taken, before gRPC tries (its own failure
    is a C-level log line and a bare RuntimeError)."""
    host, _, port = listen.rpartition(":")
    if int(port) == 0:
        return
    host = host.strip("[]")
    try:
        infos = socket.getaddrinfo(host, int(port), type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise ListenError(f"cannot listen on {listen}: {exc.strerror}") from exc
    family, kind, proto, _, addr = infos[0]
    with socket.socket(family, kind, proto) as sock:
        # As gRPC does: a port whose old connections linger in TIME_WAIT (a restart) is free;
        # only a listening socket makes the bind fail.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(addr)
        except OSError as exc:
            why = "the port is in use" if exc.errno == errno.EADDRINUSE else exc.strerror
            raise ListenError(f"cannot listen on {listen}: {why}") from exc


class GrpcServer:
    """The transport around one engine."""

    def __init__(
        self,
        settings: Settings,
        pools: WorkerPools,
        count_tokens: Callable[[str], int] | None = None,
    ) -> None:
        """`count_tokens`: the tokenizer's count, for AgentService (None: it has none)."""
        limit = settings.server.max_message_bytes
        self.server = grpc.aio.server(
            interceptors=[DecodeGuard()],
            options=[
                ("grpc.max_receive_message_length", limit),
                ("grpc.max_send_message_length", limit),
                ("grpc.so_reuseport", 0),
            ],
        )
        self.servicer = MemoryServicer(settings, pools)
        spb_grpc.add_MemoryServiceServicer_to_server(self.servicer, self.server)
        self.ledger = LedgerServicer(settings, pools)
        lpb_grpc.add_LedgerServiceServicer_to_server(self.ledger, self.server)
        self.agent = AgentServicer(settings, pools, count_tokens)
        apb_grpc.add_AgentServiceServicer_to_server(self.agent, self.server)
        self.health = health.aio.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.server)
        reflection.enable_server_reflection(
            (SERVICE_NAME, LEDGER_NAME, AGENT_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME),
            self.server,
        )
        self.port = 0

    async def start(self, listen: str) -> int:
        """Bind and start (NOT_SERVING); return the bound port (useful with port 0)."""
        _probe(listen)
        try:
            self.port = self.server.add_insecure_port(listen)
        except RuntimeError as exc:
            raise ListenError(f"cannot listen on {listen}") from exc
        if self.port == 0:
            raise ListenError(f"cannot listen on {listen}")
        await self._set(health_pb2.HealthCheckResponse.NOT_SERVING)
        await self.server.start()
        return self.port

    async def _set(self, status: int) -> None:
        for name in ("", SERVICE_NAME):
            await self.health.set(name, status)  # type: ignore[arg-type]

    def agent_ready(self, loop: AgentLoop) -> None:
        """AgentService's Step answers from now on (it needs the memory engine)."""
        self.agent.ready(loop)

    def ledger_ready(self, ledger: Ledger) -> None:
        """The ledger answers from now on (it needs no memory engine)."""
        self.ledger.ready(ledger)

    async def mark_serving(self, engine: MemoryEngine) -> None:
        self.servicer.ready(engine)
        await self._set(health_pb2.HealthCheckResponse.SERVING)

    async def drain(self, grace_seconds: float) -> None:
        """Report NOT_SERVING, refuse new calls, wait up to `grace_seconds` for calls in flight."""
        await self._set(health_pb2.HealthCheckResponse.NOT_SERVING)
        await self.server.stop(grace_seconds)
