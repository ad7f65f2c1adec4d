"""The action schema: what parses, every error by field, and loop detection."""

from __future__ import annotations

import pytest

from server.core.agent.action import Action, ActionError, looping, parse

TOOLS = {"search", "calc"}


def test_tool_and_finish_actions_parse() -> None:
    a = parse('{"type":"tool","tool":"search","params":{"q":"tea"},"estimated_cost":2000}', TOOLS)
    assert a == Action("tool", "search", {"q": "tea"}, estimated_cost=2000)
    f = parse('{"type": "finish", "answer": "Done."}', TOOLS)
    assert f.type == "finish" and f.answer == "Done."


@pytest.mark.parametrize(
    ("raw", "path"),
    [
        ("not json", ""),
        ("[1]", ""),
        ('{"type":"tool","tool":"rm"}', "tool"),
        ('{"type":"tool"}', "tool"),
        ('{"type":"tool","tool":"calc","params":[1]}', "params"),
        ('{"type":"finish"}', "answer"),
        ('{"type":"finish","answer":"x","tool":"calc"}', "tool"),
        ('{"type":"think"}', "type"),
        ('{"type":"finish","answer":"x","estimated_cost":-1}', "estimated_cost"),
        ('{"type":"finish","answer":"x","estimated_cost":0.5}', "estimated_cost"),
        ('{"type":"finish","answer":"x","why":"because"}', "why"),
        ('{"type":"finish","answer":"x","answer":"y"}', "answer"),
        ('{"type":"tool","tool":"calc","answer":"y"}', "answer"),
    ],
)
def test_every_schema_error_names_its_field(raw: str, path: str) -> None:
    with pytest.raises(ActionError) as info:
        parse(raw, TOOLS)
    assert info.value.path == path


def test_three_identical_actions_in_a_row_are_a_loop() -> None:
    a = Action("tool", "search", {"q": "tea", "n": 1})
    same = Action("tool", "search", {"n": 1, "q": "tea"})  # the same, in another order
    other = Action("tool", "search", {"q": "coffee"})
    assert looping([a, same, a]) and not looping([a, other, a]) and not looping([a, a])
