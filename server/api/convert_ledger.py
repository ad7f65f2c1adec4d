"""LedgerService messages to and from the ledger's domain."""

from __future__ import annotations

from pocketd.v1 import ledger_service_pb2 as lpb
from server.core.ledger.model import (
    Bill,
    Budget,
    Failover,
    KindBill,
    Reservation,
    Status,
    ToolBudget,
)
from server.core.settings import LedgerSettings
from server.core.tenancy import Tenant


def budget(b: lpb.TaskBudget, s: LedgerSettings) -> Budget:
    failover = Failover(b.failover_action) if b.failover_action else Failover.SOFT_STOP
    return Budget(
        total_micros=b.total_micros,
        round_micros=b.round_micros,
        max_rounds=b.max_rounds,
        emergency_ratio=round(b.emergency_ratio, 6)
        if b.HasField("emergency_ratio")
        else s.emergency_ratio,
        warn_at_percent=b.warn_at_percent if b.HasField("warn_at_percent") else s.warn_at_percent,
        failover=failover,
        tools={
            name: ToolBudget(
                t.max_calls, t.cost_per_call_micros, t.cache_ttl_seconds, t.idempotent, t.optional
            )
            for name, t in sorted(b.tools.items())
        },
    )


def status_pb(s: Status, tenant: Tenant) -> lpb.TaskStatus:
    return lpb.TaskStatus(
        task_id=tenant.unscope(s.task_id) or "",
        state=s.state,
        round=s.round,
        limits=[
            lpb.LimitState(
                limit=x.limit,
                limit_value=x.value,
                spent=x.spent,
                held=x.held,
                remaining=x.remaining,
            )
            for x in s.limits
        ],
        degrade_level=s.level,
        failover_action=int(s.failover),  # type: ignore[arg-type]
        warnings=s.warnings,
        stop_reason=s.stop_reason,
        spent_micros=s.spent,
        held_micros=s.held,
    )


def reservation_pb(r: Reservation, tenant: Tenant) -> lpb.Reservation:
    return lpb.Reservation(
        reservation_id=r.reservation_id,
        amount_micros=r.amount,
        expires_at=r.expires_at,
        status=status_pb(r.status, tenant),
    )


def _kind_bill(k: KindBill) -> lpb.KindBill:
    return lpb.KindBill(kind=int(k.kind), spent_micros=k.spent, commits=k.commits)  # type: ignore[arg-type]


def bill_pb(b: Bill, tenant: Tenant) -> lpb.TaskBill:
    return lpb.TaskBill(
        status=status_pb(b.status, tenant),
        by_kind=[_kind_bill(k) for k in b.by_kind],
        by_tool={t: _kind_bill(k) for t, k in b.by_tool.items()},
    )
