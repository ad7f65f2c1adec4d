"""Compact tool descriptions: what is kept (name, parameters, when, returns), what is dropped,
the token counts from the real tokenizer, and schemas that are not tools."""

from __future__ import annotations

import json

import pytest

from server.adapters.token_counter import TokenCounter
from server.core.agent.tools import ToolSchemaError, compact, compress
from tests.conftest import TOKENIZER

SEARCH = {
    "name": "search_tickets",
    "description": (
        "This tool allows you to search the support ticket database for tickets that match a "
        "free-text query, optionally restricted to a status; it is slow, so prefer the cache "
        "when you can. It can be used whenever the customer refers to an earlier problem, an "
        "order number or a previous conversation with the support team. Returns a list of "
        "matching tickets with their id, title, status and last update time, newest first. "
        "Note that archived tickets older than two years are not searched."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "description": "The free-text query to search for in titles and bodies of tickets",
            },
            "status": {"type": "string", "enum": ["open", "pending", "closed"]},
            "limit": {"type": "integer", "description": "Maximum results"},
        },
        "required": ["query"],
    },
}


def test_a_verbose_schema_keeps_its_name_parameters_use_and_result() -> None:
    line = compact(SEARCH)
    assert line.startswith(
        "search_tickets(query: string, status?: string [open|pending|closed],"
        " limit?: integer (Maximum results))"
    )
    assert "— Search the support ticket database" in line
    assert "Use whenever the customer refers to an earlier problem" in line
    assert "Returns a list of matching tickets" in line
    assert "prefer the cache" not in line and "archived" not in line
    assert "This tool allows you to" not in line


def test_tokens_are_counted_by_the_real_tokenizer_and_fall_by_half_or_more() -> None:
    counter = TokenCounter(TOKENIZER)
    (c,) = compress([SEARCH], counter.count, json.dumps)
    assert c.tokens_before == counter.count(json.dumps(SEARCH)) > 150
    assert c.tokens_after <= c.tokens_before / 2
    assert counter.count("hello world") == 2  # no [CLS] / [SEP]


def test_a_schema_that_is_not_a_tool_is_refused_by_position() -> None:
    with pytest.raises(ToolSchemaError, match=r"tools\[0\] has no name"):
        compact({"description": "x"})
    with pytest.raises(ToolSchemaError, match=r"tools\[3\].parameters is not an object"):
        compact({"name": "x", "parameters": []}, 3)
    with pytest.raises(ToolSchemaError, match="required is not a list"):
        compact({"name": "x", "parameters": {"required": 5}})
