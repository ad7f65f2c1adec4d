"""The Step's first phase: what the agent reports, priced. Each model call's usage at its
model's price (`agent.prices`), each tool call at its budget's price, recorded as one request
under the Step's idempotency key, so a retried Step never books them twice (pocketd's own work,
a Recall run again, is charged each time it runs). Once charged, the results of the tools the
task declares idempotent are cached."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from server.core.agent.step_io import OWN_KEY, StepIn
from server.core.agent.toolcache import ToolCache, canonical
from server.core.errors import FieldViolation, InvalidArgumentError
from server.core.ledger.model import Charge, SpendKind, ToolBudget
from server.core.settings import AgentSettings


@dataclass(frozen=True)
class Reports:
    charges: list[Charge]
    whole: tuple[str, object] | None  # (key, request): the reports as one request


def reported(
    r: StepIn, s: AgentSettings, tool_budgets: Mapping[str, ToolBudget], warnings: list[str]
) -> Reports:
    """The Step's reports as charges; a model without a price is charged the default one (said
    in `warnings`). INVALID_ARGUMENT for reports without the Step's idempotency key."""
    charges: list[Charge] = []
    for u in r.usage:
        price = s.prices.get(u.model)
        if price is None:
            price = s.default_price
            warnings.append(f"model {u.model!r} has no price in agent.prices: default used")
        for kind, tokens, per_1k in (
            (SpendKind.MODEL_INPUT_TOKENS, u.input_tokens, price.input_per_1k_micros),
            (SpendKind.MODEL_OUTPUT_TOKENS, u.output_tokens, price.output_per_1k_micros),
        ):
            if tokens:
                amount = -(-tokens * per_1k // 1000)
                charges.append(Charge(kind, amount, "", "", keyed=False))
    for t in r.tool_results:
        tb = tool_budgets.get(t.tool)
        call_price = 0 if tb is None else tb.cost_per_call_micros
        charges.append(Charge(SpendKind.TOOL_CALL, call_price, t.tool, "", keyed=False))
    # The reports are one request under the Step's key: a retry books none of them again.
    if not charges:
        return Reports(charges, None)
    if not r.key:
        raise InvalidArgumentError(
            [FieldViolation("idempotency_key", "is required with usage or tool_results")]
        )
    reports = (
        tuple((u.model, u.input_tokens, u.output_tokens) for u in r.usage),
        tuple((t.tool, canonical(t.params)) for t in r.tool_results),
    )
    return Reports(charges, (f"{OWN_KEY}step:{r.round}:{r.key}", ("step", r.round, reports)))


def cache_results(
    cache: ToolCache, ns: str, r: StepIn, tool_budgets: Mapping[str, ToolBudget]
) -> None:
    """Charged: the results of the tools that have a budget go to the cache (which keeps those
    of idempotent tools)."""
    for t in r.tool_results:
        tb = tool_budgets.get(t.tool)
        if tb is not None:
            cache.put(ns, t.tool, t.params, t.result, tb.cache_ttl_seconds, tb.idempotent)
