"""The built-in text encoder: all-MiniLM-L6-v2 as ONNX (exported by `make models`), run by
onnxruntime with the `tokenizers` library. No torch at run time.

The graph already does mean pooling and L2 normalisation, so each output row is a unit vector.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

from server.core.memory.model import Vector


class ModelMissingError(Exception):
    """The model directory lacks a file; the message says how to build it."""


class OnnxTextEncoder:
    """`TextEncoder` over an exported MiniLM directory.

    The directory holds model.onnx, tokenizer.json and manifest.json (see tools/export_minilm.py).
    """

    def __init__(
        self,
        model_dir: Path,
        threads: int,
        batch_size: int,
        max_tokens: int,
        serialize: bool = True,
    ) -> None:
        """`serialize`: one batch at a time (the queries' session: batches from concurrent
        callers would only fight for the cores). The writes' session runs each caller's batch
        on its own thread (`threads` 1), which its caller's niceness then ranks below the
        queries'; the write pool bounds how many run at once."""
        for name in ("model.onnx", "tokenizer.json", "manifest.json"):
            if not (model_dir / name).exists():
                raise ModelMissingError(
                    f"{model_dir / name} is missing: run `make models` to export the built-in "
                    "encoder, or set encoder.text: none and send vectors"
                )
        manifest = json.loads((model_dir / "manifest.json").read_text())
        self.dim: int = int(manifest["dim"])
        self._batch = batch_size
        self._tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self._tok.enable_truncation(max_length=max_tokens)
        self._tok.enable_padding(pad_id=0, pad_token="[PAD]")
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        self._session = ort.InferenceSession(
            str(model_dir / "model.onnx"), sess_options=opts, providers=["CPUExecutionProvider"]
        )
        self._lock: threading.Lock | contextlib.nullcontext[None] = (
            threading.Lock() if serialize else contextlib.nullcontext()
        )

    def encode(self, texts: Sequence[str]) -> Vector:
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(texts), self._batch):
            chunk = list(texts[start : start + self._batch])
            enc = self._tok.encode_batch(chunk)
            feeds = {
                "input_ids": np.array([e.ids for e in enc], dtype=np.int64),
                "attention_mask": np.array([e.attention_mask for e in enc], dtype=np.int64),
                "token_type_ids": np.array([e.type_ids for e in enc], dtype=np.int64),
            }
            with self._lock:
                out[start : start + len(chunk)] = self._session.run(None, feeds)[0]
        return out
