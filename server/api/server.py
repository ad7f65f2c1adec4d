"""Build the grpc.aio server: MemoryService, LedgerService, AgentService, the standard health
service and reflection, behind the token check (`server.api.auth`), over TLS when configured.

Health has a status for the server (`""`) and for each of the three services, each SERVING
once what it needs is open: LedgerService as soon as the ledger's file is (it needs no memory),
MemoryService and AgentService once the stores are loaded and the indexer has caught up
(`mark_serving`, `agent_ready`), and the server with MemoryService. All of them turn
NOT_SERVING the moment a drain begins, so load balancers stop sending work before calls are
cut.
"""

from __future__ import annotations

import errno
import secrets
import socket
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection, reflection_pb2_grpc
from grpc_reflection.v1alpha._async import ReflectionServicer

from pocketd.v1 import agent_service_pb2 as apb
from pocketd.v1 import agent_service_pb2_grpc as apb_grpc
from pocketd.v1 import ledger_service_pb2 as lpb
from pocketd.v1 import ledger_service_pb2_grpc as lpb_grpc
from pocketd.v1 import memory_service_pb2 as spb
from pocketd.v1 import memory_service_pb2_grpc as spb_grpc
from server.api.agent_servicer import AgentServicer
from server.api.auth import Authenticator, AuthGuard
from server.api.calls import CallRunner, WorkerPools
from server.api.guard import DecodeGuard
from server.api.ledger_servicer import LedgerServicer
from server.api.observe import CallObserver
from server.api.page_tokens import SECRET_BYTES, PageTokens
from server.api.servicer import MemoryServicer
from server.core.agent.ports import TokenCount
from server.core.agent.step import AgentLoop
from server.core.engine import MemoryEngine
from server.core.ledger.ledger import Ledger
from server.core.metrics import Metrics, NoMetrics
from server.core.settings import Settings, TlsSettings

SERVICE_NAME = spb.DESCRIPTOR.services_by_name["MemoryService"].full_name
LEDGER_NAME = lpb.DESCRIPTOR.services_by_name["LedgerService"].full_name
AGENT_NAME = apb.DESCRIPTOR.services_by_name["AgentService"].full_name
ALL_NAMES = ("", SERVICE_NAME, LEDGER_NAME, AGENT_NAME)
SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


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


class MethodReflection(ReflectionServicer):  # type: ignore[misc]
    """Server reflection that also finds the file of a method's name
    (`pocketd.v1.MemoryService.Recall`), as grpcurl and ghz ask for it: protobuf's Python
    descriptor pool knows services and messages but not their methods as symbols."""

    def _file_containing_symbol(self, request: Any, fully_qualified_name: str) -> Any:
        service, _, method = fully_qualified_name.rpartition(".")
        try:
            self._pool.FindFileContainingSymbol(fully_qualified_name)
        except KeyError:
            try:
                found = self._pool.FindServiceByName(service)
            except KeyError:
                found = None
            if found is not None and method in found.methods_by_name:
                fully_qualified_name = service
        return super()._file_containing_symbol(request, fully_qualified_name)


class GrpcServer:
    """The transport around one engine."""

    def __init__(
        self,
        settings: Settings,
        pools: WorkerPools,
        count_tokens: TokenCount | None = None,
        page_secret: bytes | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        """`count_tokens`: the tokenizer's count, for AgentService (None: it has none);
        `page_secret`: what List page tokens are sealed with (None: a new one, so tokens do not
        outlive the process); `metrics`: where every call's status and latency go."""
        metrics = metrics or NoMetrics()
        limit = settings.server.max_message_bytes
        self.auth = Authenticator(settings.auth)
        self._tls = settings.tls
        self.server = grpc.aio.server(
            interceptors=[CallObserver(metrics), AuthGuard(self.auth), DecodeGuard()],
            options=[
                ("grpc.max_receive_message_length", limit),
                ("grpc.max_send_message_length", limit),
                ("grpc.so_reuseport", 0),
            ],
        )
        tenants = len({t.tenant for t in settings.auth.tokens})
        self.calls = CallRunner(settings.server, pools, tenants, metrics)
        pages = PageTokens(page_secret or secrets.token_bytes(SECRET_BYTES))
        self.servicer = MemoryServicer(settings, self.calls, pages)
        spb_grpc.add_MemoryServiceServicer_to_server(self.servicer, self.server)
        self.ledger = LedgerServicer(settings, self.calls)
        lpb_grpc.add_LedgerServiceServicer_to_server(self.ledger, self.server)
        self.agent = AgentServicer(settings, self.calls, count_tokens)
        apb_grpc.add_AgentServiceServicer_to_server(self.agent, self.server)
        self.health = health.aio.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.server)
        reflection_pb2_grpc.add_ServerReflectionServicer_to_server(
            MethodReflection((*ALL_NAMES[1:], health.SERVICE_NAME, reflection.SERVICE_NAME)),
            self.server,
        )
        self.port = 0

    async def start(self, listen: str) -> int:
        """Bind and start (NOT_SERVING); return the bound port (useful with port 0)."""
        _probe(listen)
        creds = server_credentials(self._tls)
        try:
            if creds is None:
                self.port = self.server.add_insecure_port(listen)
            else:
                self.port = self.server.add_secure_port(listen, creds)
        except RuntimeError as exc:
            raise ListenError(f"cannot listen on {listen}") from exc
        if self.port == 0:
            raise ListenError(f"cannot listen on {listen}")
        await self._set(NOT_SERVING, *ALL_NAMES)
        await self.server.start()
        return self.port

    async def _set(self, status: int, *names: str) -> None:
        for name in names:
            await self.health.set(name, status)  # type: ignore[arg-type]

    async def agent_ready(self, loop: AgentLoop) -> None:
        """AgentService's Step answers from now on (it needs the memory engine)."""
        self.ledger.on_close(loop.closed)
        self.agent.ready(loop)
        await self._set(SERVING, AGENT_NAME)

    async def ledger_ready(self, ledger: Ledger) -> None:
        """The ledger answers from now on (it needs no memory engine)."""
        self.ledger.ready(ledger)
        await self._set(SERVING, LEDGER_NAME)

    async def mark_serving(self, engine: MemoryEngine) -> None:
        """MemoryService answers from now on, and the server as a whole is SERVING."""
        self.servicer.ready(engine)
        await self._set(SERVING, SERVICE_NAME, "")

    async def drain(self, grace_seconds: float) -> None:
        """Report NOT_SERVING, refuse new calls, wait up to `grace_seconds` for calls in flight."""
        await self._set(NOT_SERVING, *ALL_NAMES)
        await self.server.stop(grace_seconds)


def server_credentials(tls: TlsSettings) -> grpc.ServerCredentials | None:
    """TLS from PEM files (with `client_ca_file`: clients must show a certificate it signed);
    None: plaintext."""
    if not tls.cert_file:
        return None
    with open(tls.key_file, "rb") as fh:
        key = fh.read()
    with open(tls.cert_file, "rb") as fh:
        cert = fh.read()
    ca = None
    if tls.client_ca_file:
        with open(tls.client_ca_file, "rb") as fh:
            ca = fh.read()
    return grpc.ssl_server_credentials(
        [(key, cert)], root_certificates=ca, require_client_auth=ca is not None
    )
