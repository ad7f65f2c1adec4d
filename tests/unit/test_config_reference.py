"""The configuration reference reads each key's meaning from the comment above it, and fails
on a key without one (so docs/config.md cannot fall behind the settings)."""

from __future__ import annotations

from types import ModuleType
from typing import Annotated

import msgspec
import pytest
from msgspec import Meta

from tests.conftest import ROOT
from tests.conftest import load_tool as load


def load_tool() -> ModuleType:
    return load("config_reference")


class Example(msgspec.Struct, frozen=True):
    """A section."""

    # The first key's meaning,
    # on two lines.
    first: Annotated[int, Meta(ge=1, le=9)] = 3
    # The weights `low` and `high` together.
    low: float = 0.1
    high: float = 0.9
    unnamed: str = ""

    cues: tuple[str, ...] = (
        "a",
        "b",
    )
    # After a multi-line default, a comment still belongs to its own key.
    after: bool = True


def test_each_key_gets_the_comment_above_it_or_a_shared_one_that_names_it() -> None:
    tool = load_tool()
    got = tool.field_comments(Example)
    assert got["first"] == "The first key's meaning, on two lines."
    assert got["low"] == got["high"] == "The weights `low` and `high` together."
    assert "unnamed" not in got and "cues" not in got
    assert got["after"].startswith("After a multi-line default")


def test_types_ranges_and_long_defaults_are_written_as_a_reader_would() -> None:
    tool = load_tool()
    info = msgspec.inspect.type_info(Example)
    first = next(f for f in info.fields if f.name == "first")
    assert tool.kind_of(first.type) == "1 ≤ int ≤ 9"
    long = tuple(f"cue number {i}" for i in range(40))
    shown = tool.show_default(long)
    assert shown.endswith("(40 entries)") and shown.startswith('`["cue number 0"')


def test_the_committed_reference_is_fresh_and_every_key_has_a_meaning() -> None:
    tool = load_tool()
    text = tool.render()  # raises MissingMeaningError naming any key without a meaning
    assert (ROOT / "docs" / "config.md").read_text(encoding="utf-8") == text
    assert "`metrics_listen`" in text and "`POCKETD__SERVER__METRICS_LISTEN`" in text
    with pytest.raises(tool.MissingMeaningError, match=r"x\.unnamed, x\.cues"):
        tool.require_meanings(tool.walk(Example, "x", Example())[1])
