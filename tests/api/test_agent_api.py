"""AgentService over a real channel: CompressTools, and its errors by field."""

from __future__ import annotations

import json

import grpc

from pocketd.v1 import agent_service_pb2 as apb
from pocketd.v1 import agent_service_pb2_grpc as apb_grpc
from tests.api.test_memory_api import expect, violations
from tests.conftest import RunningServer
from tests.unit.agent.test_tools import SEARCH


def stub(srv: RunningServer) -> apb_grpc.AgentServiceStub:
    return apb_grpc.AgentServiceStub(grpc.aio.insecure_channel(srv.target))


async def test_compress_tools_returns_compact_lines_and_token_counts(
    server: RunningServer,
) -> None:
    calc = {"name": "calc", "description": "Evaluate an arithmetic expression. Returns a number."}
    resp = await stub(server).CompressTools(
        apb.CompressToolsRequest(tools_json=[json.dumps(SEARCH), json.dumps(calc)])
    )
    assert [t.name for t in resp.tools] == ["search_tickets", "calc"]
    assert resp.tools[1].text == "calc() — Evaluate an arithmetic expression. Returns a number."
    assert resp.tokens_after < resp.tokens_before / 2
    assert resp.tokens_before == sum(t.tokens_before for t in resp.tools)


async def test_bad_tools_are_invalid_argument_naming_the_tool(server: RunningServer) -> None:
    s = stub(server)
    err = await expect(
        s.CompressTools(apb.CompressToolsRequest(tools_json=["{}", "not json", "[1]"])),
        grpc.StatusCode.INVALID_ARGUMENT,
    )
    v = violations(err)
    assert "not JSON" in v["tools_json[1]"] and "not a JSON object" in v["tools_json[2]"]
    err = await expect(
        s.CompressTools(apb.CompressToolsRequest(tools_json=["{}"])),
        grpc.StatusCode.INVALID_ARGUMENT,
    )
    assert "has no name" in violations(err)["tools_json[0]"]
    err = await expect(
        s.CompressTools(apb.CompressToolsRequest()), grpc.StatusCode.INVALID_ARGUMENT
    )
    assert "tools_json" in violations(err)
