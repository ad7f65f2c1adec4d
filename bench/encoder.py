"""The encoder every in-process dense baseline uses: the server's default text encoder.

Every dense use in the benches goes through `bench_encoder()`, so that a change of the server's
default model changes them all at once.
"""

from __future__ import annotations

from bench.server_proc import ROOT
from server.core.memory.ports import TextEncoder


def bench_encoder() -> TextEncoder:
    """The server's default encoder (`encoder.text`), with 2 threads, batches of 32."""
    from server.adapters.onnx_encoder import OnnxTextEncoder
    from server.core.settings import EncoderSettings

    name = EncoderSettings().text
    return OnnxTextEncoder(ROOT / "models" / name, threads=2, batch_size=32, max_tokens=256)
