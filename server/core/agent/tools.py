"""Compact tool descriptions (seed 000 §3.1): an agent's tool schemas, rewritten to keep four
things, the name, the parameters, when to use the tool, and what it returns, at about a third of
the tokens. Deterministic and local: rules over the JSON schema and the description's sentences,
never a model call.

A schema is the common function form: `{"name", "description", "parameters": {"properties":
{name: {"type", "description", "enum"}}, "required": [...]}}`. The compact form is one line:

    search(query: string, limit?: integer) — Find documents by keyword. Returns matching titles.

- What it does: the description's first sentence that is not about the result, with the usual
  preambles ("This tool allows you to", "Use this function to") cut, a trailing clause after a
  semicolon dropped, and at most `MAX_WHEN_WORDS` words kept.
- When to use it: the first later sentence with a "when", "whenever" or "if" (当, 如果), from
  that word on, as "Use when …", at most `MAX_USE_WORDS` words.
- The "returns" part is the first sentence that says what comes back ("returns", "outputs",
  "gives", "返回"), or nothing.
- A parameter keeps its type, `?` when optional, and up to `MAX_ENUM` enum values; its own
  description is kept only when short (at most `MAX_PARAM_WORDS` words).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

MAX_ENUM = 6
MAX_PARAM_WORDS = 6
MAX_WHEN_WORDS = 20
MAX_USE_WORDS = 14
_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+|\n+")
_PREAMBLE = re.compile(
    r"^(?:this (?:tool|function|api|endpoint) (?:allows you to|lets you|can be used to|is used to|"
    r"will|can|is for)|use this (?:tool|function) (?:to|when)|a tool (?:to|that|for)|"
    r"this (?:tool|function)|call this (?:tool|function) to|用于|这个工具(?:用于|可以)?)\s*",
    re.IGNORECASE,
)
_WHEN = re.compile(r"\b(?:whenever|when|if)\b|当|如果", re.I)
_RETURNS = re.compile(r"\b(?:returns?|outputs?|gives|yields|responds with)\b|返回|输出", re.I)


class ToolSchemaError(ValueError):
    """A schema that is not a tool definition; the message names what is wrong."""


@dataclass(frozen=True)
class Compressed:
    name: str
    text: str
    tokens_before: int
    tokens_after: int


def compress(
    schemas: Sequence[Mapping[str, Any]],
    count_tokens: Callable[[str], int],
    render: Callable[[Mapping[str, Any]], str],
) -> list[Compressed]:
    """Each schema's compact description; `render` is how the agent would have sent the schema
    (its JSON), so the token counts compare like with like."""
    out = []
    for i, s in enumerate(schemas):
        line = compact(s, i)
        out.append(Compressed(str(s["name"]), line, count_tokens(render(s)), count_tokens(line)))
    return out


def compact(schema: Mapping[str, Any], index: int = 0) -> str:
    name = schema.get("name")
    if not isinstance(name, str) or not name:
        raise ToolSchemaError(f"tools[{index}] has no name")
    params = schema.get("parameters", {})
    if not isinstance(params, Mapping):
        raise ToolSchemaError(f"tools[{index}].parameters is not an object")
    props = params.get("properties", {})
    if not isinstance(props, Mapping):
        raise ToolSchemaError(f"tools[{index}].parameters.properties is not an object")
    required = params.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise ToolSchemaError(f"tools[{index}].parameters.required is not a list of names")
    required = set(required)
    args = ", ".join(_param(p, spec, p in required) for p, spec in props.items())
    when, returns = _sentences(str(schema.get("description") or ""))
    line = f"{name}({args})"
    if when:
        line += f" — {when}"
    if returns:
        line += f" {returns}"
    return line


def _param(name: str, spec: Any, required: bool) -> str:
    spec = spec if isinstance(spec, Mapping) else {}
    kind = spec.get("type", "any")
    if isinstance(kind, list):
        kind = "|".join(str(k) for k in kind)
    text = f"{name}{'' if required else '?'}: {kind}"
    enum = spec.get("enum")
    if isinstance(enum, list) and enum:
        shown = "|".join(str(e) for e in enum[:MAX_ENUM])
        text += f" [{shown}{'|…' if len(enum) > MAX_ENUM else ''}]"
    desc = str(spec.get("description") or "").strip().rstrip(".")
    if desc and len(desc.split()) <= MAX_PARAM_WORDS:
        text += f" ({desc})"
    return text


def _sentences(description: str) -> tuple[str, str]:
    """(what it does and when to use it, what it returns), each short or empty."""
    what = use = returns = ""
    for raw in _SENTENCE.split(description.strip()):
        sentence = raw.strip()
        if not sentence:
            continue
        if not returns and _RETURNS.search(sentence):
            returns = _tidy(sentence)
        elif not use and (cue := _WHEN.search(sentence)) is not None and what:
            use = _tidy("Use " + _words(sentence[cue.start() :], MAX_USE_WORDS))
        elif not what:
            what = _tidy(_words(_PREAMBLE.sub("", sentence).split(";")[0], MAX_WHEN_WORDS))
    return " ".join(x for x in (what, use) if x), returns


def _words(text: str, limit: int) -> str:
    words = text.split()
    return " ".join(words[:limit]) + ("…" if len(words) > limit else "")


def _tidy(sentence: str) -> str:
    s = sentence.strip().rstrip(".。")
    if s:
        s = s[0].upper() + s[1:]
    return s + ("." if s and s[-1] not in "…!?！？" else "")
