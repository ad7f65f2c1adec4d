"""Reading the text in an image: rapidocr 3.x on onnxruntime, Chinese and English.

The three models (PP-OCRv6 small detection and recognition, the mobile angle classifier) ship in
rapidocr's wheel. rapidocr would download a model it cannot find (from modelscope.cn); each model
path is named here, pointing at the wheel's own files, so it never looks for one and a missing
file is an error at the first read, not a download. The recogniser is the default ("ch"), whose
dictionary holds 15,565 Chinese symbols and the Latin ones: one model reads both scripts.

The angle classifier turns a text line read upside down; screenshots have none, and on rendered
dialogs it changed no line while adding its own pass per line, so it is off (`use_cls`).

rapidocr takes numpy images as BGR (OpenCV's order): our RGB pixels are reversed before the call.
Its sessions are built on the first call and it keeps per-call state on the engine, so one lock
guards the engine and calls run one at a time (the media queue's workers share it).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from server.core.media.ports import OcrLine, OcrText, Pixels
from server.core.settings import OcrSettings

# The wheel's model files (rapidocr 3.10.0), relative to the package.
DET_MODEL = "models/PP-OCRv6_det_small.onnx"
REC_MODEL = "models/PP-OCRv6_rec_small.onnx"
CLS_MODEL = "models/ch_ppocr_mobile_v2.0_cls_mobile.onnx"


class OcrModelMissingError(Exception):
    """rapidocr's wheel lacks a model file (another version, or a trimmed install)."""


def same_row(a: OcrLine, b: OcrLine) -> bool:
    """Two lines are one row when their boxes overlap vertically by more than half the shorter
    one's height (a label and its value, side by side)."""
    overlap = min(a.box[3], b.box[3]) - max(a.box[1], b.box[1])
    shorter = min(a.box[3] - a.box[1], b.box[3] - b.box[1])
    return overlap > 0.5 * shorter


def reading_order(lines: Iterable[OcrLine]) -> list[OcrLine]:
    """Lines top to bottom, then left to right within a row. A row is seeded by its topmost line
    and takes each later line that overlaps that seed by more than half (`same_row`); rows keep
    the order of their seeds. The input's order does not matter."""
    by_top = sorted(
        lines, key=lambda ln: (ln.box[1], ln.box[0], ln.box[3], ln.box[2], ln.text, ln.score)
    )
    rows: list[list[OcrLine]] = []
    for line in by_top:
        for row in rows:
            if same_row(row[0], line):
                row.append(line)
                break
        else:
            rows.append([line])
    return [ln for row in rows for ln in sorted(row, key=lambda ln: (ln.box[0], ln.box[1]))]


def to_lines(boxes: Any, texts: Any, scores: Any, min_score: float) -> list[OcrLine]:
    """rapidocr's parallel results (quadrilaterals N×4×2, texts, scores) as lines: each box the
    quadrilateral's bounds, the text stripped of surrounding blanks and otherwise as read, lines
    below `min_score` or empty left out."""
    if boxes is None or texts is None or scores is None:
        return []
    out = []
    for quad, text, score in zip(np.asarray(boxes, dtype=np.float64), texts, scores, strict=True):
        kept = str(text).strip()
        if kept and float(score) >= min_score:
            xs, ys = quad[:, 0], quad[:, 1]
            box = (float(xs.min()), float(ys.min()), float(xs.max()), float(ys.max()))
            out.append(OcrLine(text=kept, score=float(score), box=box))
    return out


def quiet_rapidocr() -> None:
    """rapidocr logs at INFO on every call (and warns on every image without text) through its
    own coloured handler on stderr. Our logs keep one line per call: its logger is left at ERROR
    and passed to ours, in our format."""
    log = logging.getLogger("RapidOCR")
    log.setLevel(logging.ERROR)
    for handler in list(log.handlers):
        log.removeHandler(handler)
    log.propagate = True


class RapidOcr:
    """`Ocr` over rapidocr, loaded once (its sessions on the first read), one read at a time."""

    def __init__(self, settings: OcrSettings) -> None:
        # Imported here: rapidocr pulls in OpenCV and omegaconf (about a second), which a server
        # with OCR off never needs.
        import rapidocr

        root = Path(rapidocr.__file__).resolve().parent
        paths = {name: root / rel for name, rel in (("Det", DET_MODEL), ("Rec", REC_MODEL))}
        for path in paths.values():
            if not path.is_file():
                raise OcrModelMissingError(
                    f"{path} is missing: rapidocr's wheel ships its models; reinstall"
                    " rapidocr==3.10.0"
                )
        # rapidocr ignores a thread count above the machine's cores (and onnxruntime would then
        # take them all): more than the cores is the cores.
        threads = min(settings.threads, os.cpu_count() or 1)
        params: dict[str, Any] = {
            "Global.log_level": "error",
            "Global.use_cls": False,
            # Our own filter (`to_lines`) drops the unsure lines, in one place.
            "Global.text_score": 0.0,
            "Det.model_path": str(paths["Det"]),
            "Rec.model_path": str(paths["Rec"]),
            # Never used (use_cls off), but named so that nothing would fetch it either.
            "Cls.model_path": str(root / CLS_MODEL),
            "EngineConfig.onnxruntime.intra_op_num_threads": threads,
            "EngineConfig.onnxruntime.inter_op_num_threads": 1,
        }
        self._min_score = settings.min_score
        self._lock = threading.Lock()
        self._engine = rapidocr.RapidOCR(params=params)
        quiet_rapidocr()

    def read(self, image: Pixels) -> OcrText:
        """The image's text lines in reading order (see `reading_order`), those below
        `min_score` left out; `text` is the lines joined by newlines."""
        bgr = np.ascontiguousarray(image[:, :, ::-1])
        with self._lock:
            result = self._engine(bgr)
        found = to_lines(
            getattr(result, "boxes", None),
            getattr(result, "txts", None),
            getattr(result, "scores", None),
            self._min_score,
        )
        lines = tuple(reading_order(found))
        return OcrText(text="\n".join(ln.text for ln in lines), lines=lines)
