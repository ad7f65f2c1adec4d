"""AgentService handlers: validate, run the agent's cost tools in the agent pool, convert.

A Step's texts have the limits of what they feed: the goal, the input and the observation may
be stored as memories, so each is at most `limits.max_text_chars`; the Recall query the loop
makes of them is their first `limits.max_query_chars` characters. Tool schemas have
CompressTools' limits, and every JSON document (a schema, a tool call's parameters) nests at
most `MAX_JSON_DEPTH` deep. Task ids are kept under the caller's tenant (see the ledger's
servicer)."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from typing import Any

from pocketd.v1 import agent_service_pb2 as apb
from pocketd.v1 import agent_service_pb2_grpc as apb_grpc
from server.api import fields as f
from server.api.auth import call_tenant
from server.api.calls import CallRecord, CallRunner, Lane, code_name
from server.api.convert_agent import step_pb
from server.api.errors import to_status
from server.api.handler import Ctx, Handler, visible_task
from server.api.validation import Violations
from server.core.agent.jsondepth import MAX_JSON_DEPTH, depth
from server.core.agent.ports import TokenCount
from server.core.agent.step import AgentLoop
from server.core.agent.step_io import StepIn, ToolRun, Usage
from server.core.agent.tools import ToolSchemaError, compact
from server.core.deadline import Deadline
from server.core.errors import (
    CallCancelledError,
    DeadlineExceededError,
    FailedPreconditionError,
    FieldViolation,
    InvalidArgumentError,
    UnavailableError,
)
from server.core.settings import Settings
from server.core.tenancy import Tenant

MAX_TOOLS = 256
MAX_TOOL_BYTES = 65_536
MAX_ROUND = 1_000_000
MAX_TEXT = 65_536
MAX_TOKENS = 10_000_000
MAX_REPORTS = 64
MAX_BATCH = 64
MAX_NAME = 128
# A StepBatch starts no Step with less than this left before its deadline (nor less than 1.5 of
# its slowest Step so far), so that its answer reaches the client in time.
ANSWER_MARGIN_S = 0.05
NAME_RULE = f"must be at most {MAX_NAME} printable characters"
_RECALL_MODES = {v.number for v in apb.RecallMode.DESCRIPTOR.values}


def parse_tools(v: Violations, tools_json: Sequence[str]) -> list[dict[str, Any]]:
    """Each tool's JSON object; a bad one is a violation naming `tools_json[i]`."""
    out = []
    for i, text in enumerate(tools_json):
        tool = _object(v, f"tools_json[{i}]", text, MAX_TOOL_BYTES)
        if tool is not None:
            out.append(tool)
    return out


def _name_ok(name: str) -> bool:
    return len(name) <= MAX_NAME and name.isprintable()


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    x = float(text)
    if not math.isfinite(x):
        raise ValueError(f"{text} is out of a float's range")
    return x


def _object(v: Violations, field: str, text: str, limit: int) -> dict[str, Any] | None:
    if len(text.encode()) > limit:
        v.add(field, f"is over {limit} bytes")
        return None
    try:
        doc = json.loads(text, parse_constant=_no_constant, parse_float=_finite)
    except (ValueError, RecursionError) as e:  # RecursionError: nested too deep
        v.add(field, f"is not JSON we can read: {e}")
        return None
    if not isinstance(doc, dict):
        v.add(field, "is not a JSON object")
        return None
    if depth(doc) > MAX_JSON_DEPTH:
        v.add(field, f"nests deeper than {MAX_JSON_DEPTH} levels")
        return None
    return doc


class AgentServicer(Handler, apb_grpc.AgentServiceServicer):  # type: ignore[misc]
    def __init__(self, settings: Settings, calls: CallRunner, count: TokenCount | None) -> None:
        """`count`: the tokenizer's token count (None: no tokenizer; CompressTools says so)."""
        super().__init__(settings, calls)
        self._max_text = settings.limits.max_text_chars
        self._count = count
        self._loop: AgentLoop | None = None

    def ready(self, loop: AgentLoop) -> None:
        self._loop = loop

    async def Step(self, request: apb.StepRequest, context: Ctx) -> apb.StepResponse:
        tools: list[dict[str, Any]] = []
        params: list[dict[str, Any]] = []
        t = call_tenant(context)
        rec = CallRecord("Step", "", 1)
        return await self._call(
            context,
            rec,
            lambda v: self._check_step(v, request, tools, params),
            lambda d: self._run_step(request, tools, params, d, t, rec),
            batch=False,
            lane=Lane.AGENT,
        )

    async def StepBatch(self, request: apb.StepBatchRequest, context: Ctx) -> apb.StepBatchResponse:
        t = call_tenant(context)
        rec = CallRecord("StepBatch", "", len(request.steps))

        def validate(v: Violations) -> None:
            if not 1 <= len(request.steps) <= MAX_BATCH:
                v.add("steps", f"has {len(request.steps)} steps; 1 to {MAX_BATCH}")

        def work(d: Deadline) -> apb.StepBatchResponse:
            """Each Step's answer or error. When the deadline passes (or is too near for one
            more Step: the answer must reach the client in time), the Steps that ran keep their
            answers (they were charged) and the rest say DEADLINE_EXCEEDED, never run; a
            cancelled call (the client left) stops."""
            out = apb.StepBatchResponse()
            stopped: str | None = None
            slowest = 0.0
            for step in request.steps:
                tools: list[dict[str, Any]] = []
                params: list[dict[str, Any]] = []
                result = out.results.add()
                if stopped is None and d.remaining() < max(ANSWER_MARGIN_S, 1.5 * slowest):
                    # Another Step could run past the deadline: answer with what ran instead.
                    stopped = "the call's deadline was too near for another Step"
                if stopped is not None:
                    result.error.code = "DEADLINE_EXCEEDED"
                    result.error.message = f"not run: {stopped}"
                    continue
                t0 = time.monotonic()
                try:
                    v = Violations()
                    self._check_step(v, step, tools, params)
                    v.raise_if_any()
                    result.response.CopyFrom(self._run_step(step, tools, params, d, t, rec))
                except CallCancelledError:
                    raise  # the whole call stops
                except DeadlineExceededError as e:
                    stopped = str(e)
                    result.error.code = "DEADLINE_EXCEEDED"
                    result.error.message = str(e)
                except Exception as e:  # this step's error, the others go on
                    status = to_status(e, batch=False)
                    result.error.code = code_name(status.code)
                    result.error.message = status.message
                    if isinstance(e, InvalidArgumentError):
                        result.error.violations.extend(
                            f"{x.field}: {x.description}" for x in e.violations
                        )
                slowest = max(slowest, time.monotonic() - t0)
            return out

        return await self._call(
            context,
            rec,
            validate,
            work,
            lane=Lane.AGENT,
            weight=max(1, min(len(request.steps), MAX_BATCH)),
        )

    def _check_step(
        self,
        v: Violations,
        r: apb.StepRequest,
        tools: list[dict[str, Any]],
        params: list[dict[str, Any]],
    ) -> None:
        if not r.task_id or not f.matches(f.MEMORY_ID_RE, r.task_id):
            v.add("task_id", "is required, " + f.MEMORY_ID_RULE)
        if not 1 <= r.round <= MAX_ROUND:
            v.add("round", f"{r.round} is outside 1-{MAX_ROUND}")
        for name, text, limit in (
            ("goal", r.goal, self._max_text),
            ("input", r.input, self._max_text),
            ("observation", r.observation, self._max_text),
            ("previous_action_json", r.previous_action_json, MAX_TEXT),
            ("raw_model_output", r.raw_model_output, MAX_TEXT),
        ):
            if len(text) > limit:
                v.add(name, f"has {len(text)} characters; the maximum is {limit}")
        if r.recall_mode not in _RECALL_MODES:
            v.add("recall_mode", f"{r.recall_mode} is not a RecallMode value")
        if len(r.tools_json) > MAX_TOOLS:
            v.add("tools_json", f"has {len(r.tools_json)} tools; at most {MAX_TOOLS}")
        else:
            tools.extend(parse_tools(v, r.tools_json))
        if r.usage or r.tool_results or r.idempotency_key:
            if not r.idempotency_key:
                v.add("idempotency_key", "is required when usage or tool_results are reported")
            elif not f.matches(f.MEMORY_ID_RE, r.idempotency_key):
                v.add("idempotency_key", f.MEMORY_ID_RULE)
        for name, n in (("usage", len(r.usage)), ("tool_results", len(r.tool_results))):
            if n > MAX_REPORTS:
                v.add(name, f"has {n} entries; at most {MAX_REPORTS}")
        for i, tool in enumerate(tools):
            try:
                compact(tool, i)
            except ToolSchemaError as e:
                v.add(f"tools_json[{i}]", str(e))
        for i, u in enumerate(r.usage):
            if not u.model:
                v.add(f"usage[{i}].model", "is required")
            elif not _name_ok(u.model):
                v.add(f"usage[{i}].model", NAME_RULE)
            if u.input_tokens > MAX_TOKENS or u.output_tokens > MAX_TOKENS:
                v.add(f"usage[{i}]", f"more than {MAX_TOKENS} tokens in one call")
        for i, t in enumerate(r.tool_results):
            if not t.tool:
                v.add(f"tool_results[{i}].tool", "is required")
            elif not _name_ok(t.tool):
                v.add(f"tool_results[{i}].tool", NAME_RULE)
            p = _object(v, f"tool_results[{i}].params_json", t.params_json or "{}", MAX_TOOL_BYTES)
            if len(t.result) > self._max_text:
                v.add(
                    f"tool_results[{i}].result",
                    f"has {len(t.result)} characters; the maximum is {self._max_text}",
                )
            params.append(p or {})

    def _run_step(
        self,
        r: apb.StepRequest,
        tools: list[dict[str, Any]],
        params: list[dict[str, Any]],
        d: Deadline,
        tenant: Tenant,
        rec: CallRecord,
    ) -> apb.StepResponse:
        """Run one Step; the call log names the task's namespace (a StepBatch's, each once)."""
        if self._loop is None:
            if self._count is None:
                raise FailedPreconditionError(
                    "Step needs a tokenizer (encoder.model_dir has no tokenizer.json)",
                    "NO_TOKENIZER",
                )
            raise UnavailableError("pocketd is starting: the agent loop is not ready")
        out = self._loop.step(
            StepIn(
                task_id=visible_task(tenant, r.task_id, self._loop.namespace_of),
                round=r.round,
                goal=r.goal,
                input=r.input,
                input_has_image=r.input_has_image,
                previous_action=r.previous_action_json,
                observation=r.observation,
                observation_has_media=r.observation_has_media,
                usage=tuple(Usage(u.model, u.input_tokens, u.output_tokens) for u in r.usage),
                tool_results=tuple(
                    ToolRun(t.tool, p, t.result)
                    for t, p in zip(r.tool_results, params, strict=True)
                ),
                raw_model_output=r.raw_model_output,
                key=r.idempotency_key,
                tools=tuple(tools) if r.tools_json else None,
                active_recall=None
                if r.recall_mode == apb.RECALL_MODE_UNSPECIFIED
                else r.recall_mode == apb.RECALL_MODE_ACTIVE,
            ),
            d,
        )
        ns = tenant.unscope(out.namespace) or out.namespace
        if ns and ns not in rec.namespace.split(","):
            rec.namespace = f"{rec.namespace},{ns}" if rec.namespace else ns
        return step_pb(out, tenant)

    async def CompressTools(
        self, request: apb.CompressToolsRequest, context: Ctx
    ) -> apb.CompressToolsResponse:
        parsed: list[dict[str, Any]] = []
        t = call_tenant(context)

        def validate(v: Violations) -> None:
            if not 1 <= len(request.tools_json) <= MAX_TOOLS:
                v.add("tools_json", f"has {len(request.tools_json)} tools; 1 to {MAX_TOOLS}")
                return
            parsed.extend(parse_tools(v, request.tools_json))

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
                    tokens_before=self._count(text, part=t.name),
                    tokens_after=self._count(line, part=t.name),
                )
            out.tokens_before = sum(t.tokens_before for t in out.tools)
            out.tokens_after = sum(t.tokens_after for t in out.tools)
            return out

        return await self._call(
            context,
            CallRecord("CompressTools", "", len(request.tools_json)),
            validate,
            work,
            lane=Lane.AGENT,
        )
