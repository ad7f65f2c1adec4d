"""AgentService handlers: validate, run the agent's cost tools in the worker pool, convert."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from pocketd.v1 import agent_service_pb2 as apb
from pocketd.v1 import agent_service_pb2_grpc as apb_grpc
from server.api.calls import CallRecord, WorkerPools
from server.api.handler import Ctx, Handler
from server.api.validation import Violations
from server.core.agent.tools import ToolSchemaError, compact
from server.core.errors import FailedPreconditionError, FieldViolation, InvalidArgumentError
from server.core.settings import Settings

MAX_TOOLS = 256
MAX_TOOL_BYTES = 65_536


class AgentServicer(Handler, apb_grpc.AgentServiceServicer):  # type: ignore[misc]
    def __init__(
        self, settings: Settings, pools: WorkerPools, count: Callable[[str], int] | None
    ) -> None:
        """`count`: the tokenizer's token count (None: no tokenizer; CompressTools says so)."""
        super().__init__(settings, pools)
        self._count = count

    async def CompressTools(
        self, request: apb.CompressToolsRequest, context: Ctx
    ) -> apb.CompressToolsResponse:
        parsed: list[dict[str, Any]] = []

        def validate(v: Violations) -> None:
            if not 1 <= len(request.tools_json) <= MAX_TOOLS:
                v.add("tools_json", f"has {len(request.tools_json)} tools; 1 to {MAX_TOOLS}")
                return
            for i, text in enumerate(request.tools_json):
                if len(text.encode()) > MAX_TOOL_BYTES:
                    v.add(f"tools_json[{i}]", f"is over {MAX_TOOL_BYTES} bytes")
                    continue
                try:
                    tool = json.loads(text)
                except (ValueError, RecursionError) as e:  # RecursionError: nested too deep
                    v.add(f"tools_json[{i}]", f"is not JSON we can read: {e}")
                    continue
                if not isinstance(tool, dict):
                    v.add(f"tools_json[{i}]", "is not a JSON object")
                    continue
                parsed.append(tool)

        def work(_: object) -> apb.CompressToolsResponse:
            if self._count is None:
                raise FailedPreconditionError(
                    "no tokenizer to count tokens with (encoder.model_dir has no tokenizer.json)",
                    "NO_TOKENIZER",
                )
            out = apb.CompressToolsResponse()
            for i, (tool, text) in enumerate(zip(parsed, request.tools_json, strict=True)):
                try:
                    line = compact(tool, i)
                except ToolSchemaError as e:
                    raise InvalidArgumentError([FieldViolation(f"tools_json[{i}]", str(e))]) from e
                out.tools.add(
                    name=tool["name"],
                    text=line,
                    tokens_before=self._count(text),
                    tokens_after=self._count(line),
                )
            out.tokens_before = sum(t.tokens_before for t in out.tools)
            out.tokens_after = sum(t.tokens_after for t in out.tools)
            return out

        return await self._call(
            context, CallRecord("CompressTools", "", len(request.tools_json)), validate, work
        )
