"""The Step's first phase: what the agent reports, priced. Each model call's usage at its
model's price (`agent.prices`), each tool call at its budget's price (by the ledger, in the
Step's opening transaction), recorded as one request
under the Step's idempotency key, so a retried Step never books them twice (pocketd's own work,
a Recall run again, is charged each time it runs). Once charged, the results of the tools the
task declares idempotent are cached."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from server.core.agent.allowed import compacted
from server.core.agent.step_io import OWN_KEY, StepIn
from server.core.agent.toolcache import ToolCache, canonical
from server.core.errors import (
    FailedPreconditionError,
    FieldViolation,
    InvalidArgumentError,
    Location,
)
from server.core.ledger.model import Charge, SpendKind, ToolBudget
from server.core.settings import AgentSettings


@dataclass(frozen=True)
class Reports:
    charges: list[Charge]  # the model calls' usage, priced
    tools: list[str]  # the tool calls, one name each: the ledger prices them at the task's price
    whole: tuple[str, object] | None  # (key, request): the reports as one request
    warnings: list[str]

    def check(self, r: StepIn) -> None:
        """INVALID_ARGUMENT for reports without the Step's idempotency key."""
        if (self.charges or self.tools) and not r.key:
            raise InvalidArgumentError(
                [FieldViolation("idempotency_key", "is required with usage or tool_results")]
            )


def reported(r: StepIn, s: AgentSettings) -> Reports:
    """The Step's reports as charges; a model without a price is charged the default one (said
    in the warnings)."""
    charges: list[Charge] = []
    warnings: list[str] = []
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
    tools = [t.tool for t in r.tool_results]
    # The reports are one request under the Step's key: a retry books none of them again.
    whole = None
    if (charges or tools) and r.key:
        reports = (
            tuple((u.model, u.input_tokens, u.output_tokens) for u in r.usage),
            tuple((t.tool, canonical(t.params)) for t in r.tool_results),
        )
        whole = (f"{OWN_KEY}step:{r.round}:{r.key}", ("step", r.round, reports))
    return Reports(charges, tools, whole, warnings)


def cache_results(
    cache: ToolCache, ns: str, r: StepIn, tool_budgets: Mapping[str, ToolBudget]
) -> None:
    """Charged: the results of the tools that have a budget go to the cache (which keeps those
    of idempotent tools)."""
    for t in r.tool_results:
        tb = tool_budgets.get(t.tool)
        if tb is not None:
            cache.put(ns, t.tool, t.params, t.result, tb.cache_ttl_seconds, tb.idempotent)


@dataclass
class Admission:
    """A Step's own checks, before anything is booked: a task's first Step needs its goal (in
    its opening transaction, once the ledger found the task open), then the tools' schemas
    (`tools`: compacted) and the reports' idempotency key."""

    r: StepIn
    reports: Reports
    first: bool
    tools: list[tuple[str, str]] | None = None

    def __call__(self) -> None:
        r = self.r
        if self.first and not r.goal:
            raise FailedPreconditionError(
                f"the first Step of task {r.task_id!r} needs its goal",
                "GOAL_REQUIRED",
                Location("goal"),
            )
        if r.tools is not None:
            self.tools = compacted(r.tools)
        self.reports.check(r)
