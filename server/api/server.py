"""Build the grpc.aio server: MemoryService, the standard health service and reflection.

Health reports NOT_SERVING until `mark_serving()` (stores loaded, kernels compiled), and again
from the moment a drain begins, so load balancers stop sending work before calls are cut.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from pocketd.v1 import memory_service_pb2 as spb
from pocketd.v1 import memory_service_pb2_grpc as spb_grpc
from server.api.servicer import MemoryServicer
from server.core.engine import MemoryEngine
from server.core.settings import Settings

SERVICE_NAME = spb.DESCRIPTOR.services_by_name["MemoryService"].full_name


class GrpcServer:
    """The transport around one engine."""

    def __init__(self, settings: Settings, executor: ThreadPoolExecutor) -> None:
        limit = settings.server.max_message_bytes
        self.server = grpc.aio.server(
            options=[
                ("grpc.max_receive_message_length", limit),
                ("grpc.max_send_message_length", limit),
                ("grpc.so_reuseport", 0),
            ]
        )
        self.servicer = MemoryServicer(settings, executor)
        spb_grpc.add_MemoryServiceServicer_to_server(self.servicer, self.server)
        self.health = health.aio.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.server)
        reflection.enable_server_reflection(
            (SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME), self.server
        )
        self.port = 0

    async def start(self, listen: str) -> int:
        """Bind and start (NOT_SERVING); return the bound port (useful with port 0)."""
        self.port = self.server.add_insecure_port(listen)
        if self.port == 0:
            raise OSError(f"cannot listen on {listen}")
        await self._set(health_pb2.HealthCheckResponse.NOT_SERVING)
        await self.server.start()
        return self.port

    async def _set(self, status: int) -> None:
        for name in ("", SERVICE_NAME):
            await self.health.set(name, status)  # type: ignore[arg-type]

    async def mark_serving(self, engine: MemoryEngine) -> None:
        self.servicer.ready(engine)
        await self._set(health_pb2.HealthCheckResponse.SERVING)

    async def drain(self, grace_seconds: float) -> None:
        """Report NOT_SERVING, refuse new calls, wait up to `grace_seconds` for calls in flight."""
        await self._set(health_pb2.HealthCheckResponse.NOT_SERVING)
        await self.server.stop(grace_seconds)
