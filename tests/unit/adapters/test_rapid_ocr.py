"""OCR with rapidocr: rendered error dialogs read in English and Chinese, offline, lines in reading
order, unsure lines dropped, one read at a time, and rapidocr's per-call logging silenced."""

from __future__ import annotations

import io
import logging
import threading
from collections import Counter
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image

from server.adapters.rapid_ocr import RapidOcr, reading_order, same_row, to_lines
from server.core.media.ports import Ocr, OcrLine
from server.core.settings import OcrSettings
from tests.media_samples import render_screenshot


def pixels(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))


@pytest.fixture(scope="module")
def ocr() -> Iterator[RapidOcr]:
    """One engine for the module, built and first used while any download would fail."""
    from rapidocr.utils.download_file import DownloadFile

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("rapidocr tried to download a model")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(DownloadFile, "run", classmethod(refuse))
        engine = RapidOcr(OcrSettings(threads=1))
        engine.read(np.full((32, 32, 3), 255, dtype=np.uint8))
        yield engine


def test_an_error_code_is_read_exactly(ocr: RapidOcr) -> None:
    png = render_screenshot(
        ["Error E1234: disk quota exceeded", "Please contact your administrator."],
        title="Backup failed",
        seed=1,
    )
    reader: Ocr = ocr
    got = reader.read(pixels(png))
    texts = [ln.text for ln in got.lines]
    assert "Error E1234: disk quota exceeded" in texts
    # Reading order: the title bar, the message, the button.
    assert texts.index("Backup failed") < texts.index("Error E1234: disk quota exceeded")
    assert texts[-1] == "OK"
    assert got.text == "\n".join(texts)
    assert all(
        ln.score >= 0.5 and ln.box[0] < ln.box[2] and ln.box[1] < ln.box[3] for ln in got.lines
    )


def test_a_chinese_line_keeps_its_code_and_most_characters(ocr: RapidOcr) -> None:
    line = "退款被拒绝，订单号 48213"
    got = ocr.read(pixels(render_screenshot([line, "请联系客服"], title="支付 - 错误", seed=2)))
    assert "48213" in got.text
    want = Counter(line.replace(" ", ""))
    read = Counter(got.text.replace(" ", ""))
    assert sum((want & read).values()) >= 0.8 * sum(want.values()), got.text


def test_an_image_without_text_reads_empty_and_logs_nothing(
    ocr: RapidOcr, capfd: pytest.CaptureFixture[str]
) -> None:
    got = ocr.read(np.full((120, 200, 3), 240, dtype=np.uint8))
    assert got.text == "" and got.lines == ()
    out, err = capfd.readouterr()
    assert out == "" and err == "", "rapidocr printed on a call"
    assert logging.getLogger("RapidOCR").getEffectiveLevel() >= logging.ERROR


class Recorder:
    """Stands in for rapidocr's engine: records what it is given and whether two calls overlap."""

    def __init__(self) -> None:
        self.inside = 0
        self.overlapped = False
        self.seen: list[np.ndarray] = []
        self.guard = threading.Lock()

    def __call__(self, img: np.ndarray) -> Any:
        with self.guard:
            self.inside += 1
            self.overlapped |= self.inside > 1
        self.seen.append(img)
        threading.Event().wait(0.002)  # let another thread try to enter
        with self.guard:
            self.inside -= 1
        boxes = np.array(
            [[[10, 40], [90, 40], [90, 60], [10, 60]], [[10, 5], [90, 5], [90, 25], [10, 25]]]
        )
        return type(
            "Result", (), {"boxes": boxes, "txts": ("second", "first"), "scores": (0.9, 0.95)}
        )


def test_reads_pass_bgr_and_run_one_at_a_time(
    ocr: RapidOcr, monkeypatch: pytest.MonkeyPatch
) -> None:
    rec = Recorder()
    monkeypatch.setattr(ocr, "_engine", rec)
    red = np.zeros((4, 4, 3), dtype=np.uint8)
    red[..., 0] = 255
    results: list[str] = []
    threads = [
        threading.Thread(target=lambda: results.append(ocr.read(red).text)) for _ in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not rec.overlapped
    assert results == ["first\nsecond"] * 8
    assert all(img[0, 0].tolist() == [0, 0, 255] for img in rec.seen), "rapidocr takes BGR"


def test_unsure_and_blank_lines_are_dropped_and_text_kept_as_read() -> None:
    quads = np.array([[[0, 0], [10, 0], [10, 5], [0, 5]]] * 3, dtype=np.float32)
    lines = to_lines(quads, ("  E1234 ", "   ", "ｆｕｌｌ"), (0.9, 0.99, 0.49), 0.5)
    assert [ln.text for ln in lines] == ["E1234"]
    assert lines[0].box == (0.0, 0.0, 10.0, 5.0)
    assert to_lines(quads, ("Ａ１", "b", "c"), (0.5, 0.9, 0.9), 0.5)[0].text == "Ａ１"
    assert to_lines(None, None, None, 0.5) == []


def line(text: str, left: float, top: float, width: float = 50, height: float = 20) -> OcrLine:
    return OcrLine(text=text, score=0.9, box=(left, top, left + width, top + height))


def test_a_row_is_read_left_to_right_before_the_next_row() -> None:
    label, value = line("Amount:", 10, 100), line("¥368.00", 200, 104)  # same row, 4 px lower
    title, below = line("Order", 10, 10), line("Paid", 10, 140)
    assert [ln.text for ln in reading_order([below, value, title, label])] == [
        "Order",
        "Amount:",
        "¥368.00",
        "Paid",
    ]
    assert not same_row(line("a", 0, 0), line("b", 100, 11))  # overlaps by 9 of 20: two rows


def lines_of(heights: st.SearchStrategy[float]) -> st.SearchStrategy[list[OcrLine]]:
    """Up to 12 lines; their tops on a coarse grid, so that lines of one row are common."""
    box = st.builds(
        line,
        st.text(min_size=1, max_size=3),
        st.integers(0, 40).map(lambda k: 5.0 * k),
        st.integers(0, 40).map(lambda k: 6.0 * k),
        st.integers(1, 200).map(float),
        heights,
    )
    return st.lists(box, max_size=12)


@given(lines_of(st.integers(1, 200).map(float)), st.randoms())
def test_reading_order_is_a_permutation_whatever_the_order_found(
    lines: list[OcrLine], rnd: Any
) -> None:
    ordered = reading_order(lines)
    assert Counter(ordered) == Counter(lines)
    shuffled = list(lines)
    rnd.shuffle(shuffled)
    assert reading_order(shuffled) == ordered


@given(lines_of(st.integers(16, 24).map(float)))
def test_text_of_one_size_reads_top_to_bottom_and_left_to_right(lines: list[OcrLine]) -> None:
    """For lines of one text size (heights within half of each other, a screenshot's), no line
    comes after one it lies wholly above, and of two lines at one height the left one comes
    first."""
    ordered = reading_order(lines)
    for i, a in enumerate(ordered):
        for b in ordered[i + 1 :]:
            assert not b.box[3] <= a.box[1], ("above, yet after", a, b)
            if (a.box[1], a.box[3]) == (b.box[1], b.box[3]):
                assert a.box[0] <= b.box[0], ("one row, right before left", a, b)
