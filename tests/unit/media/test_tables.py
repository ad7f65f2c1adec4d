"""Tables linearised into "column: value" rows (server/core/media/tables.py): quoting, ragged
rows, Chinese headers and cells, the caps, Markdown escapes, and a round trip through the csv
module's writer for any cells."""

from __future__ import annotations

import csv
import io
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from server.core.media.ports import MediaRejected
from server.core.media.sniff import sniff
from server.core.media.tables import MAX_COLUMN_CHARS, Table, linearise
from server.core.settings import TableLimits

LIMITS = TableLimits()
CSV, TSV, MD = "text/csv", "text/tab-separated-values", "text/markdown"


def test_csv_quoting_keeps_commas_quotes_and_newlines_in_their_cell() -> None:
    text = 'name,note,amount\n"Smith, J","said ""refund""\nthen left",1200\nLi,,7\n'
    t = linearise(text, CSV, LIMITS)
    assert t == Table(
        'name: Smith, J; note: said "refund" then left; amount: 1200\nname: Li; amount: 7',
        ("name", "note", "amount"),
        rows=2,
        kept=2,
    )


def test_ragged_rows_pad_short_ones_and_name_the_extra_columns() -> None:
    text = "a,b,c\n1\n1,2,3,4,5\n,,\n"
    t = linearise(text, CSV, LIMITS)
    assert t.columns == ("a", "b", "c", "column 4", "column 5")
    assert t.text == "a: 1\na: 1; b: 2; c: 3; column 4: 4; column 5: 5"
    assert (t.rows, t.kept) == (2, 2)  # the empty row is no row


def test_chinese_headers_and_cells() -> None:
    text = "\ufeff订单号,金额,状态\nORD-48213,¥1200,退款被拒\nORD-48214,¥35,已完成\n"
    t = linearise(text, CSV, LIMITS)
    assert t.columns == ("订单号", "金额", "状态")
    assert t.text.splitlines()[0] == "订单号: ORD-48213; 金额: ¥1200; 状态: 退款被拒"


def test_tsv_has_no_quoting() -> None:
    text = 'name\tquote\nAda\t"It works" she said\n'
    assert linearise(text, TSV, LIMITS).text == 'name: Ada; quote: "It works" she said'


def test_markdown_escapes_alignment_and_outer_pipes() -> None:
    text = (
        "| Command | Meaning | Exit |\n"
        "|:--------|:-------:|-----:|\n"
        "| `a \\| b` | pipe a into b | 0 |\n"
        "plain | cells without outer pipes | 1\n"
    )
    assert sniff(text.encode()).mime == MD
    t = linearise(text, MD, LIMITS)
    assert t.columns == ("Command", "Meaning", "Exit")
    assert t.text.splitlines() == [
        "Command: `a | b`; Meaning: pipe a into b; Exit: 0",
        "Command: plain; Meaning: cells without outer pipes; Exit: 1",
    ]


def test_header_names_are_cleaned_numbered_and_made_unique() -> None:
    long = "a very long column name " * 5
    text = f"  first\t  name ,,{long},first name\nx,y,z,w\n"
    t = linearise(text, CSV, LIMITS)
    assert t.columns[0] == "first name"  # whitespace collapsed, stripped
    assert t.columns[1] == "column 2"
    assert len(t.columns[2]) <= MAX_COLUMN_CHARS and long.startswith(t.columns[2])
    assert t.columns[3] == "first name (2)"
    assert t.text == f"first name: x; column 2: y; {t.columns[2]}: z; first name (2): w"


def test_rows_beyond_the_cap_are_counted_in_english() -> None:
    text = "id,v\n" + "".join(f"{i},{i * i}\n" for i in range(10))
    t = linearise(text, CSV, TableLimits(max_rows=4))
    lines = t.text.splitlines()
    assert lines[:4] == ["id: 0; v: 0", "id: 1; v: 1", "id: 2; v: 4", "id: 3; v: 9"]
    assert lines[4] == "… and 6 more rows"
    assert (t.rows, t.kept) == (10, 4)
    one = linearise("id\n1\n2\n", CSV, TableLimits(max_rows=1))
    assert one.text == "id: 1\n… and 1 more row"


def test_columns_beyond_the_cap_are_dropped() -> None:
    text = "a,b,c,d\n1,2,3,4\n,,,only in d\n"
    t = linearise(text, CSV, TableLimits(max_columns=2))
    assert t.columns == ("a", "b")
    assert t.text == "a: 1; b: 2"  # the second row had nothing in the kept columns
    assert (t.rows, t.kept) == (1, 1)


@pytest.mark.parametrize(
    ("text", "mime"),
    [("a,b\n", CSV), ("a,b\n,\n\n", CSV), ("| a | b |\n|---|---|\n", MD), ("", TSV)],
)
def test_a_table_without_a_data_row_is_refused(text: str, mime: str) -> None:
    with pytest.raises(MediaRejected) as e:
        linearise(text, mime, LIMITS)
    assert (e.value.reason, e.value.detected) == ("empty table", mime)


def test_a_field_beyond_the_csv_modules_limit_is_a_malformed_table() -> None:
    text = 'a,b\n"' + "x" * (csv.field_size_limit() + 1) + '",1\n'
    with pytest.raises(MediaRejected) as e:
        linearise(text, CSV, LIMITS)
    assert e.value.reason.startswith("malformed table")


def test_only_table_types_are_linearised() -> None:
    with pytest.raises(ValueError, match="not a table type"):
        linearise("a,b\n1,2\n", "text/plain", LIMITS)


_CELL = st.text(alphabet=st.sampled_from('ab 错误,"\n\t|;:1'), max_size=8)


@given(
    st.lists(
        st.text(alphabet="xyz名", min_size=1, max_size=4), min_size=1, max_size=5, unique=True
    ),
    st.lists(st.lists(_CELL, min_size=0, max_size=6), max_size=12),
    st.integers(1, 8),
    st.integers(1, 6),
)
def test_any_csv_written_by_the_csv_module_is_linearised_cell_by_cell(
    header: list[str], rows: list[list[str]], max_rows: int, max_columns: int
) -> None:
    buf = io.StringIO()
    csv.writer(buf).writerows([header, *rows])
    limits = TableLimits(max_rows=max_rows, max_columns=max_columns)

    def clean(cell: str) -> str:
        return re.sub(r"\s+", " ", cell).strip()

    present = [r for r in [header, *rows] if any(c.strip() for c in r)]  # an empty row is none
    width = min(max(len(r) for r in present), max_columns)
    columns = [*header, *(f"column {i + 1}" for i in range(len(header), width))][:width]
    expected = [
        "; ".join(f"{c}: {clean(v)}" for c, v in zip(columns, row, strict=False) if clean(v))
        for row in rows
    ]
    expected = [line for line in expected if line]
    if not expected:
        with pytest.raises(MediaRejected):
            linearise(buf.getvalue(), CSV, limits)
        return
    t = linearise(buf.getvalue(), CSV, limits)
    assert t.columns == tuple(columns)
    assert (t.rows, t.kept) == (len(expected), min(len(expected), max_rows))
    lines = t.text.split("\n")
    assert lines[: t.kept] == expected[:max_rows]
    assert len(lines) == t.kept + (t.rows > t.kept)
