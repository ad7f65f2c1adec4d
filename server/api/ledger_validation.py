"""LedgerService requests, checked against the contract before the ledger sees them."""

from __future__ import annotations

from pocketd.v1 import ledger_service_pb2 as lpb
from server.api import fields as f
from server.api.validation import Validator, Violations
from server.core.ledger.ledger import MAX_MICROS
from server.core.settings import Settings

MAX_ROUND = 1_000_000
MAX_TOOLS = 256
_KINDS = {v.number for v in lpb.SpendKind.DESCRIPTOR.values} - {lpb.SPEND_KIND_UNSPECIFIED}
_FAILOVERS = {v.number for v in lpb.FailoverAction.DESCRIPTOR.values}
ID_RULE = f.MEMORY_ID_RULE


class LedgerValidator(Validator):
    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self._ls = settings.ledger

    def _micros(self, v: Violations, field: str, value: int) -> None:
        if value > MAX_MICROS:
            v.add(field, f"{value} is above {MAX_MICROS} micro-units")

    def _id(self, v: Violations, field: str, value: str) -> None:
        if not value:
            v.add(field, "is required")
        elif not f.matches(f.MEMORY_ID_RE, value):
            v.add(field, ID_RULE)

    def open_task(self, v: Violations, req: lpb.OpenTaskRequest) -> None:
        self._id(v, "task_id", req.task_id)
        self.namespace(v, "namespace", req.namespace)
        self._session_id(v, "session_id", req.session_id)
        b = req.budget
        if b.total_micros <= 0:
            v.add("budget.total_micros", "must be above 0")
        self._micros(v, "budget.total_micros", b.total_micros)
        if b.round_micros > b.total_micros:
            v.add("budget.round_micros", f"{b.round_micros} is above the total {b.total_micros}")
        if b.HasField("emergency_ratio") and not 0.0 <= b.emergency_ratio <= 0.9:
            v.add("budget.emergency_ratio", f"{b.emergency_ratio} is outside 0-0.9")
        if b.HasField("warn_at_percent") and not 1 <= b.warn_at_percent <= 100:
            v.add("budget.warn_at_percent", f"{b.warn_at_percent} is outside 1-100")
        if b.failover_action not in _FAILOVERS:
            v.add("budget.failover_action", f"{b.failover_action} is not a FailoverAction value")
        if self._count(v, "budget.tools", len(b.tools), MAX_TOOLS, "tools"):
            for name, t in b.tools.items():
                if not f.matches(f.MEMORY_ID_RE, name):
                    v.add(f"budget.tools[{name[:32]!r}]", f"a tool name {ID_RULE}")
                self._micros(
                    v, f"budget.tools[{name[:32]!r}].cost_per_call_micros", t.cost_per_call_micros
                )

    def reserve(self, v: Violations, req: lpb.ReserveRequest) -> None:
        self._id(v, "task_id", req.task_id)
        self._id(v, "idempotency_key", req.idempotency_key)
        if not 1 <= req.round <= MAX_ROUND:
            v.add("round", f"{req.round} is outside 1-{MAX_ROUND}")
        if req.kind not in _KINDS:
            v.add("kind", f"{req.kind} is not a SpendKind value (and not UNSPECIFIED)")
        if req.kind == lpb.SPEND_KIND_TOOL_CALL:
            if not req.tool:
                v.add("tool", "is required for a tool call")
            elif not f.matches(f.MEMORY_ID_RE, req.tool):
                v.add("tool", ID_RULE)
        elif req.tool:
            v.add("tool", "is only for SPEND_KIND_TOOL_CALL")
        elif req.estimate_micros == 0:
            v.add("estimate_micros", "must be above 0")
        self._micros(v, "estimate_micros", req.estimate_micros)
        if req.ttl_seconds > self._ls.max_reservation_ttl_seconds:
            v.add(
                "ttl_seconds",
                f"{req.ttl_seconds} is above {self._ls.max_reservation_ttl_seconds}",
            )

    def settle(self, v: Violations, req: lpb.CommitRequest | lpb.ReleaseRequest) -> None:
        self._id(v, "task_id", req.task_id)
        self._id(v, "reservation_id", req.reservation_id)
        self._id(v, "idempotency_key", req.idempotency_key)
        if isinstance(req, lpb.CommitRequest):
            self._micros(v, "actual_micros", req.actual_micros)

    def status(self, v: Violations, req: lpb.TaskStatusRequest) -> None:
        self._id(v, "task_id", req.task_id)

    def raise_budget(self, v: Violations, req: lpb.RaiseBudgetRequest) -> None:
        self._id(v, "task_id", req.task_id)
        self._id(v, "idempotency_key", req.idempotency_key)
        if req.add_total_micros <= 0:
            v.add("add_total_micros", "must be above 0")
        self._micros(v, "add_total_micros", req.add_total_micros)

    def close_task(self, v: Violations, req: lpb.CloseTaskRequest) -> None:
        self._id(v, "task_id", req.task_id)
        self._id(v, "idempotency_key", req.idempotency_key)
