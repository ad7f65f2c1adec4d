"""Generate the configuration reference (docs/config.md) from the settings schema.

The schema is `server.core.settings`: each key's type, range and default come from msgspec's
view of the structs, and its meaning from the comment lines just above the field (or, for a
nested section, the section's docstring). A key without a meaning fails the run, so the
reference cannot silently fall behind the code. `make config-ref` writes the file; `make check`
runs `--check`, which fails when the committed file differs from a fresh one.
"""

from __future__ import annotations

import argparse
import inspect
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
from msgspec import inspect as mi

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from server.config import ENV_PREFIX  # noqa: E402
from server.core.settings import Settings  # noqa: E402

OUT = ROOT / "docs" / "config.md"
# A default longer than this is shown by its first entries and its count.
MAX_DEFAULT_CHARS = 90
_FIELD_RE = re.compile(r"^    (\w+): ")
_COMMENT_RE = re.compile(r"^    # ?(.*)$")

HEADER = """# Configuration reference

Generated from `server/core/settings.py` by `make config-ref` (`python tools/config_reference.py`);
`make check` fails when this file is stale. Do not edit it by hand: change the comment above the
field instead.

Each key can be set in the YAML file (`pocketd serve --config FILE`, nested as the dotted name
says), as an environment variable (the dotted name upper-cased, `.` as `__`, prefixed
`POCKETD__`; values are parsed as YAML, so numbers, booleans and lists work), or, for
`server.listen` and `server.data_dir`, by a flag. Later layers win: defaults < file <
environment < flags. An unknown key or a value out of its range stops start-up (exit 2) naming
the key. `config/pocketd.example.yaml` is a commented example.
"""


class MissingMeaningError(Exception):
    """A key has no meaning written above it."""


@dataclass(frozen=True)
class Key:
    name: str
    default: str
    kind: str
    meaning: str


def field_comments(cls: type) -> dict[str, str]:
    """The comment block written just above each field of `cls`, joined into one paragraph.
    A comment also applies to the fields right after its own that it names (`complex_rounds`
    and `escalate_round` under one comment), and to no other."""
    out: dict[str, str] = {}
    block: list[str] = []
    shared = ""
    for line in inspect.getsource(cls).splitlines():
        comment = _COMMENT_RE.match(line)
        if comment:
            block.append(comment.group(1).strip())
            continue
        field = _FIELD_RE.match(line)
        if field:
            name = field.group(1)
            if block:  # its own comment
                shared = " ".join(block)
                out[name] = shared
                block = []
            elif shared and re.search(rf"\b{name}\b", shared):
                out[name] = shared
            continue
        if not line.strip() or re.match(r"^    [^\s)\]}]", line):
            block, shared = [], ""  # a blank line, a docstring, a method: the run ends
    return out


def _number(x: float | int) -> str:
    if isinstance(x, float) and x.is_integer() and abs(x) < 1e15:
        return f"{x:.1f}"
    if isinstance(x, int) and abs(x) >= 10_000:
        return f"{x:,}".replace(",", "_")
    return repr(x)


def kind_of(t: mi.Type) -> str:
    """The type and the range a value must lie in, as a reader would write them."""
    if isinstance(t, mi.UnionType):
        parts = [kind_of(x) for x in t.types if not isinstance(x, mi.NoneType)]
        unset = any(isinstance(x, mi.NoneType) for x in t.types)
        return " or ".join(parts) + (" (unset: null)" if unset else "")
    if isinstance(t, (mi.IntType, mi.FloatType)):
        name = "int" if isinstance(t, mi.IntType) else "float"
        lo = (
            f"{_number(t.ge)} ≤ "
            if t.ge is not None
            else f"{_number(t.gt)} < "
            if t.gt is not None
            else ""
        )
        hi = (
            f" ≤ {_number(t.le)}"
            if t.le is not None
            else f" < {_number(t.lt)}"
            if t.lt is not None
            else ""
        )
        return f"{lo}{name}{hi}"
    if isinstance(t, mi.LiteralType):
        return " \\| ".join(json.dumps(v) for v in t.values)
    if isinstance(t, mi.StrType):
        return "string"
    if isinstance(t, mi.BoolType):
        return "bool"
    if isinstance(t, (mi.ListType, mi.VarTupleType)):
        return f"list of {kind_of(t.item_type)}"
    if isinstance(t, mi.DictType):
        return f"map of {kind_of(t.key_type)} → {kind_of(t.value_type)}"
    if isinstance(t, mi.StructType):
        return t.cls.__name__
    return type(t).__name__.removesuffix("Type").lower()


def show_default(value: Any) -> str:
    """The default as YAML flow would write it, shortened when long."""
    plain = msgspec.to_builtins(value)
    text = json.dumps(plain, ensure_ascii=False)
    if len(text) <= MAX_DEFAULT_CHARS:
        return f"`{text}`"
    if isinstance(plain, (list, tuple)):
        head: list[Any] = []
        for item in plain:
            if len(json.dumps([*head, item], ensure_ascii=False)) > MAX_DEFAULT_CHARS - 20:
                break
            head.append(item)
        shown = json.dumps(head, ensure_ascii=False)[:-1]
        return f"`{shown}, …]` ({len(plain)} entries)"
    if isinstance(plain, dict):
        return f"{len(plain)} entries: {', '.join(f'`{k}`' for k in plain)}"
    return f"`{text[: MAX_DEFAULT_CHARS - 1]}…`"


def walk(cls: type, prefix: str, defaults: Any) -> tuple[list[tuple[str, str]], list[Key]]:
    """Every section (dotted name, docstring) and every key under `cls`."""
    sections: list[tuple[str, str]] = [(prefix, inspect.getdoc(cls) or "")]
    keys: list[Key] = []
    comments = field_comments(cls)
    info = mi.type_info(cls)
    assert isinstance(info, mi.StructType)
    for f in info.fields:
        name = f"{prefix}.{f.name}" if prefix else f.name
        value = getattr(defaults, f.name)
        if (
            isinstance(f.type, mi.StructType)
            and isinstance(value, msgspec.Struct)
            and f.name not in comments
        ):
            more_sections, more_keys = walk(f.type.cls, name, value)
            sections += more_sections
            keys += more_keys
            continue
        meaning = comments.get(f.name, "")
        if not meaning and isinstance(f.type, mi.StructType):
            meaning = inspect.getdoc(f.type.cls) or ""
        if not meaning and isinstance(f.type, (mi.DictType, mi.VarTupleType, mi.ListType)):
            item = f.type.value_type if isinstance(f.type, mi.DictType) else f.type.item_type
            if isinstance(item, mi.StructType):
                meaning = inspect.getdoc(item.cls) or ""
        keys.append(Key(name, show_default(value), kind_of(f.type), meaning))
        keys += item_keys(f.type, name)
    return sections, keys


def item_keys(t: mi.Type, name: str) -> list[Key]:
    """The fields of a struct written as one value (`agent.default_price.input_per_1k_micros`),
    or of each entry of a list or map of structs (`auth.tokens[].tenant`,
    `agent.routes.<name>.model`), each with its own meaning."""
    if isinstance(t, mi.StructType):  # a section written as one value, with its own comment
        cls, prefix = t.cls, name
    elif isinstance(t, (mi.VarTupleType, mi.ListType)) and isinstance(t.item_type, mi.StructType):
        cls, prefix = t.item_type.cls, f"{name}[]"
    elif isinstance(t, mi.DictType) and isinstance(t.value_type, mi.StructType):
        cls, prefix = t.value_type.cls, f"{name}.<name>"
    else:
        return []
    comments = field_comments(cls)
    info = mi.type_info(cls)
    assert isinstance(info, mi.StructType)
    return [
        Key(
            f"{prefix}.{f.name}",
            "required" if f.required else show_default(f.default),
            kind_of(f.type),
            comments.get(f.name, ""),
        )
        for f in info.fields
    ]


def require_meanings(keys: list[Key]) -> None:
    """Raise `MissingMeaningError` naming every key without a meaning."""
    if missing := [k.name for k in keys if not k.meaning]:
        raise MissingMeaningError(
            "no meaning written above " + ", ".join(missing) + " in server/core/settings.py"
        )


def render() -> str:
    sections, keys = walk(Settings, "", Settings())
    require_meanings(keys)
    out = [HEADER]
    docs = dict(sections)
    for section in sorted({_section(k) for k in keys}, key=_order(keys)):
        out.append(f"\n## `{section}`\n")
        if docs.get(section):
            out.append(" ".join(docs[section].split()) + "\n")
        out.append("| key | default | type and range | meaning |")
        out.append("| --- | --- | --- | --- |")
        for k in keys:
            if _section(k) != section:
                continue
            meaning = k.meaning.replace("|", "\\|")
            if "[]" not in k.name and "<name>" not in k.name:
                meaning += f" (`{ENV_PREFIX}{k.name.upper().replace('.', '__')}`)"
            out.append(
                f"| `{k.name.removeprefix(section + '.')}` | {k.default} | {k.kind} | {meaning} |"
            )
    return "\n".join(out) + "\n"


def _section(k: Key) -> str:
    """The dotted section a key is listed under (an entry's field under its list's or map's)."""
    return re.split(r"\[\]|\.<name>", k.name)[0].rsplit(".", 1)[0]


def _order(keys: list[Key]) -> Any:
    first: dict[str, int] = {}
    for i, k in enumerate(keys):
        first.setdefault(_section(k), i)
    return first.__getitem__


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail if docs/config.md is stale")
    ns = parser.parse_args()
    try:
        text = render()
    except MissingMeaningError as exc:
        print(f"config reference: {exc}", file=sys.stderr)
        return 1
    if ns.check:
        if not OUT.exists() or OUT.read_text(encoding="utf-8") != text:
            print("docs/config.md is stale: run `make config-ref`", file=sys.stderr)
            return 1
        print("docs/config.md is fresh")
        return 0
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)} ({text.count(chr(10))} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
