"""The built-in text encoders, run by onnxruntime. No torch at run time.

A model directory holds `model.onnx` and `manifest.json`, which says what the model is:
- `inputs: "strings"` (the default encoder, USE-multilingual-v3 from `make models`): the graph
  takes raw strings (its SentencePiece op comes from onnxruntime-extensions) and does its own
  tokenisation; texts are cut to `max_chars` characters (the model does not truncate, and 5,000
  Chinese characters took 184 ms);
- `inputs: "tokens"` (all-MiniLM-L6-v2 from `make models-minilm`): the directory also holds
  `tokenizer.json` (the `tokenizers` library), and the graph does mean pooling and L2
  normalisation.

Both give unit rows. The manifest also names the vector space (`space`: vectors of two spaces
cannot be compared, and a data directory remembers the space it was written in) and the
thresholds that depend on the encoder's cosine spread (`EncoderThresholds`).
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

from server.core.memory.model import Vector
from server.core.settings import EncoderThresholds


class ModelMissingError(Exception):
    """The model directory lacks a file or the manifest is unusable; the message says how to
    build it."""


@dataclass(frozen=True)
class EncoderManifest:
    name: str
    space: str
    dim: int
    inputs: str  # "strings" or "tokens"
    thresholds: EncoderThresholds

    @classmethod
    def read(cls, model_dir: Path) -> EncoderManifest:
        path = model_dir / "manifest.json"
        if not path.is_file():
            raise ModelMissingError(f"{path} is missing: run `make models`")
        try:
            m: dict[str, Any] = json.loads(path.read_text())
            t = m["thresholds"]
            return cls(
                name=str(m["name"]),
                space=str(m.get("space", m["name"])),
                dim=int(m["dim"]),
                inputs=str(m.get("inputs", "tokens")),
                thresholds=EncoderThresholds(
                    vector_floor=float(t["vector_floor"]),
                    vector_ceiling=float(t.get("vector_ceiling", 1.0)),
                    dedup_cosine=float(t["dedup_cosine"]),
                ),
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise ModelMissingError(
                f"{path} is not a current manifest ({exc!r}): rebuild the model with `make models`"
            ) from exc


class OnnxTextEncoder:
    """`TextEncoder` over a model directory (see the module docstring)."""

    def __init__(
        self,
        model_dir: Path,
        threads: int,
        batch_size: int,
        max_tokens: int,
        serialize: bool = True,
        max_chars: int = 2048,
    ) -> None:
        """`serialize`: one batch at a time (the queries' session: batches from concurrent
        callers would only fight for the cores). The writes' session runs each caller's batch
        on its own thread (`threads` 1), at its caller's priority (a bulk write's niced thread
        ranks below the queries'); the write pools bound how many run at once."""
        onnx = model_dir / "model.onnx"
        if not onnx.is_file():
            raise ModelMissingError(
                f"{onnx} is missing: run `make models` to build the built-in encoder, or set"
                " encoder.text: none and send vectors"
            )
        self.manifest = EncoderManifest.read(model_dir)
        self.dim: int = self.manifest.dim
        self.space: str = self.manifest.space
        self._batch = batch_size
        self._max_chars = max_chars
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        self._tok: Tokenizer | None = None
        if self.manifest.inputs == "strings":
            try:
                import onnxruntime_extensions
            except ImportError as exc:  # pragma: no cover - a dependency of the package
                raise ModelMissingError(
                    f"{model_dir} needs onnxruntime-extensions (pip install the project again)"
                ) from exc
            opts.register_custom_ops_library(onnxruntime_extensions.get_library_path())
        elif self.manifest.inputs == "tokens":
            tok = model_dir / "tokenizer.json"
            if not tok.is_file():
                raise ModelMissingError(f"{tok} is missing: run `make models-minilm`")
            self._tok = Tokenizer.from_file(str(tok))
            self._tok.enable_truncation(max_length=max_tokens)
            self._tok.enable_padding(pad_id=0, pad_token="[PAD]")
        else:
            raise ModelMissingError(f"{model_dir}: unknown inputs {self.manifest.inputs!r}")
        self._session = ort.InferenceSession(
            str(onnx), sess_options=opts, providers=["CPUExecutionProvider"]
        )
        self._input = self._session.get_inputs()[0].name
        self._lock: threading.Lock | contextlib.nullcontext[None] = (
            threading.Lock() if serialize else contextlib.nullcontext()
        )
        self._queued = 0  # texts in `encode` calls that have not returned
        self._count_lock = threading.Lock()

    def queued(self) -> int:
        """Texts waiting for the session or being encoded (the metrics' encoder queue)."""
        return self._queued

    def _feeds(self, chunk: list[str]) -> dict[str, Any]:
        if self._tok is None:
            cut = self._max_chars
            return {self._input: np.array([t[:cut] for t in chunk], dtype=object)}
        enc = self._tok.encode_batch(chunk)
        return {
            "input_ids": np.array([e.ids for e in enc], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in enc], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids for e in enc], dtype=np.int64),
        }

    def encode(self, texts: Sequence[str]) -> Vector:
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        with self._count_lock:
            self._queued += len(texts)
        try:
            for start in range(0, len(texts), self._batch):
                chunk = list(texts[start : start + self._batch])
                feeds = self._feeds(chunk)
                with self._lock:
                    rows = self._session.run(None, feeds)[0]
                out[start : start + len(chunk)] = rows
        finally:
            with self._count_lock:
                self._queued -= len(texts)
        if self._tok is None:  # the quantised graph's rows are unit to about 1e-7: make it so
            out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out
