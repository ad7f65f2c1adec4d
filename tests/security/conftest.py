"""Two tenants on one server, each with its own token, and a third token of the victim's tenant
that grants only `team-a/*`. Every stub carries its caller's token."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import pytest

from pocketd.requests import open_channel
from pocketd.v1 import agent_service_pb2_grpc as apb_grpc
from pocketd.v1 import ledger_service_pb2_grpc as lpb_grpc
from pocketd.v1 import memory_service_pb2_grpc as spb_grpc
from server.adapters.onnx_encoder import OnnxTextEncoder
from server.api.auth import token_sha256
from server.core.settings import AuthSettings, Settings, TokenSettings
from tests.conftest import RunningServer, make_settings, start_server, stop_server

VICTIM, ATTACKER, NARROW = "victim-token-0123456789", "attacker-token-9876543210", "narrow-tok"


def with_tokens(settings: Settings) -> Settings:
    tokens = (
        TokenSettings(tenant="victim", sha256=token_sha256(VICTIM), admin=True),
        TokenSettings(tenant="attacker", sha256=token_sha256(ATTACKER)),
        TokenSettings(tenant="victim", sha256=token_sha256(NARROW), namespaces=("team-a/*",)),
    )
    return msgspec.structs.replace(settings, auth=AuthSettings(tokens=tokens))


@dataclass
class Caller:
    memory: spb_grpc.MemoryServiceStub
    ledger: lpb_grpc.LedgerServiceStub
    agent: apb_grpc.AgentServiceStub
    channel: Any


def caller(target: str, token: str | None) -> Caller:
    ch = open_channel(target, 16 << 20, token, None, sync=False)
    return Caller(
        spb_grpc.MemoryServiceStub(ch),
        lpb_grpc.LedgerServiceStub(ch),
        apb_grpc.AgentServiceStub(ch),
        ch,
    )


@pytest.fixture
async def tenants(
    tmp_path: Path, encoder: OnnxTextEncoder
) -> AsyncIterator[tuple[RunningServer, Caller, Caller, Caller]]:
    settings = with_tokens(make_settings(tmp_path / "srv"))
    srv, executor = await start_server(tmp_path / "srv", encoder, settings)
    callers = [caller(srv.target, t) for t in (VICTIM, ATTACKER, NARROW)]
    yield srv, callers[0], callers[1], callers[2]
    for c in callers:
        await c.channel.close()
    await stop_server(srv, executor)
