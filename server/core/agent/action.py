"""The agent's action, parsed and validated (seed 001 §4.2), and loop detection.

The model's output must be one strict JSON object:
    {"type": "tool", "tool": NAME, "params": {...}, "estimated_cost": MICROS}
    {"type": "finish", "answer": TEXT, "estimated_cost": MICROS}
Nothing is repaired: an output that does not parse, or breaks the schema, is an `ActionError`
naming the field, and the round gets one retry (seed 001: "let it regenerate once rather than
parse by force, which often bends the meaning").

Loop detection: the same action (the tool and the canonical JSON of its parameters) repeated
`repeat` times in a row (3) is a loop.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from server.core.agent.jsondepth import MAX_JSON_DEPTH, depth
from server.core.agent.toolcache import ToolArgsError, canonical

MAX_COST = 10**15


@dataclass(frozen=True)
class Action:
    type: str  # "tool" or "finish"
    tool: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    answer: str = ""
    estimated_cost: int = 0

    def signature(self) -> str:
        return f"{self.type}:{self.tool}:{canonical(self.params)}"


class ActionError(ValueError):
    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        super().__init__(f"{path}: {problem}" if path else problem)


def parse(raw: str, tools: Collection[str]) -> Action:
    """The action in `raw`, or ActionError; `tools`: the tools allowed this round."""
    try:
        doc = json.loads(raw, object_pairs_hook=_unique)
    except ActionError:
        raise
    except (ValueError, RecursionError) as e:
        raise ActionError("", f"not JSON: {e}") from e
    if not isinstance(doc, dict):
        raise ActionError("", "must be a JSON object")
    if depth(doc) > MAX_JSON_DEPTH:
        raise ActionError("params", f"nests deeper than {MAX_JSON_DEPTH} levels")
    extra = set(doc) - {"type", "tool", "params", "answer", "estimated_cost"}
    if extra:
        raise ActionError(sorted(extra)[0], "is not a field of an action")
    kind = doc.get("type")
    cost = doc.get("estimated_cost", 0)
    if isinstance(cost, bool) or not isinstance(cost, int) or not 0 <= cost <= MAX_COST:
        raise ActionError("estimated_cost", "must be an integer of micro-units, 0 or more")
    if kind == "finish":
        answer = doc.get("answer")
        if not isinstance(answer, str) or not answer.strip():
            raise ActionError("answer", "is required for a finish, as a non-empty string")
        if "tool" in doc or "params" in doc:
            raise ActionError("tool", "a finish calls no tool")
        return Action("finish", answer=answer, estimated_cost=cost)
    if kind != "tool":
        raise ActionError("type", f"must be 'tool' or 'finish', not {kind!r}")
    tool = doc.get("tool")
    if not isinstance(tool, str) or not tool:
        raise ActionError("tool", "is required for a tool action")
    if "answer" in doc:
        raise ActionError("answer", "a tool action gives no answer")
    if tool not in tools:
        raise ActionError("tool", f"{tool!r} is not allowed this round")
    params = doc.get("params", {})
    if not isinstance(params, dict):
        raise ActionError("params", "must be a JSON object")
    try:
        canonical(params)
    except ToolArgsError as e:
        raise ActionError("params", str(e)) from e
    return Action("tool", tool, params, estimated_cost=cost)


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object, refusing a key given twice (the parser would keep the last silently)."""
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise ActionError(k, "is given twice")
        out[k] = v
    return out


def looping(history: Sequence[Action], repeat: int = 3) -> bool:
    """Whether the last `repeat` actions are one and the same."""
    if repeat < 2 or len(history) < repeat:
        return False
    last = [a.signature() for a in history[-repeat:]]
    return len(set(last)) == 1
