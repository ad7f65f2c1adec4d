"""How deep a parsed JSON document nests, and the most the agent loop accepts.

Python's `json` parses far deeper documents than the code that walks them afterwards can
(`json.dumps` of the canonical form raises RecursionError near 1,000 levels), so every
document a Step or CompressTools takes is refused beyond `MAX_JSON_DEPTH`, measured without
recursion."""

from __future__ import annotations

MAX_JSON_DEPTH = 64


def depth(doc: object) -> int:
    """The nesting depth of arrays and objects (a scalar: 0), counted no further than one past
    `MAX_JSON_DEPTH`."""
    deepest, stack = 0, [(doc, 1)]
    while stack:
        node, d = stack.pop()
        if isinstance(node, dict):
            node = list(node.values())
        if isinstance(node, list):
            deepest = max(deepest, d)
            if d <= MAX_JSON_DEPTH:
                stack.extend((x, d + 1) for x in node)
    return deepest
