"""The tools a Step lists: the task's tools (compacted once, when a Step brings them), less an
optional one from degrade level 3 and one at its call cap; search_memory in active recall."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from server.core.agent.step_io import SEARCH_MEMORY
from server.core.agent.tools import ToolSchemaError, compact
from server.core.errors import FieldViolation, InvalidArgumentError
from server.core.ledger.model import Status, ToolBudget


def compacted(schemas: Sequence[dict[str, Any]]) -> list[tuple[str, str]]:
    """(name, compact description) of each tool; INVALID_ARGUMENT naming a bad schema."""
    out = []
    for i, schema in enumerate(schemas):
        try:
            out.append((str(schema.get("name", "")), compact(schema, i)))
        except ToolSchemaError as e:
            raise InvalidArgumentError([FieldViolation(f"tools_json[{i}]", str(e))]) from e
    return out


def allowed(
    tools: Sequence[tuple[str, str]],
    tool_budgets: Mapping[str, ToolBudget],
    status: Status,
    active_recall: bool,
) -> tuple[list[tuple[str, str]], set[str]]:
    """The tools listed, and the names an action may call (search_memory in active recall)."""
    capped = {x.limit[5:] for x in status.limits if x.limit.startswith("tool:") and not x.remaining}
    listed = []
    for name, line in tools:
        tb = tool_budgets.get(name)
        if name in capped or (status.level >= 3 and tb is not None and tb.optional):
            continue
        listed.append((name, line))
    names = {n for n, _ in listed} | ({SEARCH_MEMORY} if active_recall else set())
    return listed, names
