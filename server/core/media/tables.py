"""Tables as text a memory can hold: CSV, TSV and Markdown pipe tables linearised into one
"column: value; column: value" line per row, so that the keyword channel and the text encoder
see each value beside its column's name, and the column names become the memory's tags.

The first row is the header (an empty header cell is "column N", a repeated name gets " (2)").
A row wider than the header adds "column N" columns; a shorter one has empty cells. Empty values
are left out of a row's line, and a row with nothing in its kept columns is not a row. After
`max_rows` rows, one line counts the rest: "… and N more rows", in English whatever the table's
language (a fixed form that the agent and the tests read; it is not the table's content).
Columns past `max_columns` are dropped, their cells with them.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from dataclasses import dataclass

from server.core.media.ports import MediaRejected
from server.core.settings import TableLimits

# A column name's length as a tag.
MAX_COLUMN_CHARS = 64
_SPACE = re.compile(r"\s+")
_PIPE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?\s*$")
_UNESCAPED_PIPE = re.compile(r"(?<!\\)\|")


@dataclass(frozen=True)
class Table:
    """A linearised table: its text (one line per kept row, then the count of the rest), its
    columns (cleaned, for tags), its data rows and how many of them the text holds."""

    text: str
    columns: tuple[str, ...]
    rows: int
    kept: int


def delimited_rows(text: str, delimiter: str) -> Iterator[list[str]]:
    """CSV rows (quoted fields, embedded delimiters and newlines) or, with a tab, TSV rows (not
    quoted, as the format has no quoting: a cell may begin with a quote mark)."""
    if delimiter == "\t":
        return csv.reader(io.StringIO(text), delimiter="\t", quoting=csv.QUOTE_NONE)
    return csv.reader(io.StringIO(text), delimiter=delimiter)


def pipe_cells(line: str) -> list[str]:
    """A Markdown pipe table row's cells: split on unescaped pipes (an escaped \\| is a pipe in
    the cell), the outer pipes dropped."""
    s = line.strip()
    if s.startswith("|"):
        s = s[1:]
    if s.endswith("|") and not s.endswith("\\|"):
        s = s[:-1]
    return [c.replace("\\|", "|") for c in _UNESCAPED_PIPE.split(s)]


def is_pipe_separator(line: str) -> bool:
    """The row under a pipe table's header: dashes between pipes, with alignment colons."""
    return "|" in line and _PIPE_SEPARATOR.match(line) is not None


def clean(cell: str) -> str:
    """A cell on one line: whitespace (an embedded newline too) collapsed and stripped."""
    return _SPACE.sub(" ", cell).strip()


def _rows(text: str, mime: str) -> list[list[str]]:
    if mime == "text/csv":
        return list(delimited_rows(text, ","))
    if mime == "text/tab-separated-values":
        return list(delimited_rows(text, "\t"))
    if mime == "text/markdown":
        lines = [line for line in text.splitlines() if line.strip()]
        if len(lines) > 1 and is_pipe_separator(lines[1]):
            del lines[1]
        return [pipe_cells(line) for line in lines]
    raise ValueError(f"not a table type: {mime}")


def _named(names: list[str]) -> tuple[str, ...]:
    """Column names as tags: cleaned, at most `MAX_COLUMN_CHARS`, "column N" for an empty one,
    " (2)", " (3)" … for a repeated one."""
    out: list[str] = []
    for i, raw in enumerate(names):
        base = clean(raw)[:MAX_COLUMN_CHARS].rstrip() or f"column {i + 1}"
        name, n = base, 1
        while name in out:
            n += 1
            suffix = f" ({n})"
            name = base[: MAX_COLUMN_CHARS - len(suffix)].rstrip() + suffix
        out.append(name)
    return tuple(out)


def linearise(text: str, mime: str, limits: TableLimits) -> Table:
    """The table in `text` (of `mime`: text/csv, text/tab-separated-values or text/markdown, as
    sniffed) as "column: value" lines. Raises `MediaRejected` when it has no data row or does
    not parse."""
    try:
        rows = [r for r in _rows(text.removeprefix("\ufeff"), mime) if any(c.strip() for c in r)]
    except csv.Error as e:
        raise MediaRejected(f"malformed table ({e})", mime) from None
    if not rows:
        raise MediaRejected("empty table", mime)
    width = min(max(len(r) for r in rows), limits.max_columns)
    header = rows[0][:width]
    columns = _named(header + [""] * (width - len(header)))
    lines: list[str] = []
    count = 0
    for row in rows[1:]:
        if not any(v.strip() for v in row[:width]):
            continue  # nothing in the kept columns: no row
        count += 1
        if len(lines) < limits.max_rows:  # past the cap, rows are only counted
            cells = zip(columns, map(clean, row), strict=False)
            lines.append("; ".join(f"{c}: {v}" for c, v in cells if v))
    if not count:
        raise MediaRejected("empty table", mime)
    if count > len(lines):
        more = count - len(lines)
        lines.append(f"… and {more} more row{'s' if more > 1 else ''}")
    return Table("\n".join(lines), columns, count, min(count, limits.max_rows))
