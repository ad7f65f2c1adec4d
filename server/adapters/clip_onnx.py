"""An image space on onnxruntime: a CLIP-style model's two towers, exported to ONNX (`pocketd
models export-clip`, or `tools/tiny_clip.py` for the tests' tiny model), put images and texts in
one vector space. No torch at run time: the preprocessing is open_clip's, written with PIL and
numpy (`clip_preprocess`), and the tokenizer is `clip_tokenizer`.

A model directory holds `image.onnx`, `text.onnx`, the BPE vocabulary and `manifest.json`
(`ClipManifest`), which says how to feed the towers: the image size, mean and std, the resize
("shortest-side bicubic + centre crop", open_clip's default, or "squash"), the context length,
the graphs' input and output names, the cosines that mean no match and a full match, and each
graph's sha256, checked at load (a mismatch refuses to start, naming the file). `space_id` names
the model and its weights: vectors of two space ids cannot be compared.

A model trained on a reduced vocabulary (the tiny test model knows 23 of CLIP's 49,408 tokens)
lists the open_clip ids it keeps in `vocab_ids` (a .npy file; row i of its token table is the
i-th id). Words outside it are dropped from a text before it is framed: the tower never saw them,
so they carry nothing it could use.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import msgspec
import numpy as np
import numpy.typing as npt
import onnxruntime as ort

from server.adapters.clip_preprocess import normalised, resized
from server.adapters.clip_tokenizer import ClipTokenizer
from server.core.media.ports import Pixels
from server.core.memory.model import Vector, units
from server.core.settings import ClipSettings

IMAGE_BATCH = 16  # images per run of the image tower (a ViT-B-32 batch is 9.6 MB of input)
TEXT_BATCH = 64


class ClipModelError(Exception):
    """The model directory lacks a file, its manifest is unusable, or a graph's sha256 differs
    from the manifest's: the message names the file and says what to do."""


class ClipManifest(msgspec.Struct, frozen=True):
    """`manifest.json` of an exported image space (see the module docstring)."""

    name: str
    space_id: str  # the model and its weights: vectors of one space id compare
    dim: int
    image_size: int
    mean: tuple[float, float, float]
    std: tuple[float, float, float]
    resize: Literal["shortest-side bicubic + centre crop", "squash"]
    context_length: int
    vocabulary: str  # the BPE vocabulary: a file name in the directory, or a path
    image_input: str
    text_input: str
    output: str
    vector_floor: float
    vector_ceiling: float
    sha256: dict[str, str]  # file name -> hex digest, for image.onnx and text.onnx
    vocab_ids: str | None = None  # a reduced vocabulary (.npy of open_clip ids), or none

    @classmethod
    def read(cls, model_dir: Path) -> ClipManifest:
        path = model_dir / "manifest.json"
        if not path.is_file():
            raise ClipModelError(
                f"{path} is missing: export a model with `pocketd models export-clip`"
            )
        try:
            m = msgspec.json.decode(path.read_bytes(), type=cls)
        except msgspec.DecodeError as exc:
            raise ClipModelError(f"{path} is not an image space's manifest: {exc}") from exc
        if m.dim < 1 or m.image_size < 1 or m.context_length < 2 or min(m.std) <= 0:
            raise ClipModelError(f"{path}: dim, image_size, context_length or std out of range")
        for graph in ("image.onnx", "text.onnx"):
            if graph not in m.sha256:
                raise ClipModelError(f"{path} has no sha256 for {graph}")
        return m


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def reduced(path: Path, tok: ClipTokenizer) -> dict[int, int]:
    """A reduced vocabulary's map, open_clip id -> row (see the module docstring)."""
    try:
        ids = np.load(path)
    except (ValueError, OSError) as exc:
        raise ClipModelError(f"{path} (the manifest's vocab_ids): {exc}") from exc
    keep = {int(v): row for row, v in enumerate(ids.reshape(-1).tolist())}
    if tok.start not in keep or tok.end not in keep:
        raise ClipModelError(f"{path} lacks the start or end token's id")
    return keep


def session(path: Path, opts: ort.SessionOptions, name: str, m: ClipManifest) -> Any:
    """An onnxruntime session of one tower, checked against the manifest's input, output and
    dimension."""
    try:
        s = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime's errors derive from Exception alone
        raise ClipModelError(f"{path} does not load in onnxruntime: {exc}") from exc
    inputs = [i.name for i in s.get_inputs()]
    outputs = {o.name: o.shape for o in s.get_outputs()}
    dim = outputs[m.output][-1] if m.output in outputs else None
    if name not in inputs or not (dim == m.dim or isinstance(dim, str)):  # str: a symbolic size
        raise ClipModelError(
            f"{path} takes {inputs} and gives {outputs}: the manifest says {name!r} and"
            f" {m.output!r} of {m.dim} dimensions"
        )
    return s


class OnnxImageSpace:
    """`ImageSpace` over an exported model directory (see the module docstring)."""

    def __init__(self, model_dir: Path, settings: ClipSettings) -> None:
        self.manifest = m = ClipManifest.read(model_dir)
        for graph in ("image.onnx", "text.onnx"):
            path = model_dir / graph
            if not path.is_file():
                raise ClipModelError(f"{path} is missing: export the model again")
            got = file_sha256(path)
            if got != m.sha256[graph]:
                raise ClipModelError(
                    f"{path} has sha256 {got}, the manifest says {m.sha256[graph]}:"
                    " refusing to load a modified model (export it again)"
                )
        vocabulary = model_dir / m.vocabulary  # an absolute path stays itself
        if not vocabulary.is_file():
            raise ClipModelError(f"{vocabulary} (the manifest's vocabulary) is missing")
        self.name: str = settings.space
        self.space_id: str = m.space_id
        self.dim: int = m.dim
        self.vector_floor: float = (
            m.vector_floor if settings.vector_floor is None else settings.vector_floor
        )
        self.vector_ceiling: float = (
            m.vector_ceiling if settings.vector_ceiling is None else settings.vector_ceiling
        )
        if not self.vector_floor < self.vector_ceiling:
            raise ClipModelError(
                f"vector_floor {self.vector_floor} is not below vector_ceiling"
                f" {self.vector_ceiling} (clip settings or {model_dir / 'manifest.json'})"
            )
        try:
            self._tok = ClipTokenizer(vocabulary, m.context_length)
        except (ValueError, OSError) as exc:
            raise ClipModelError(f"{vocabulary}: {exc}") from exc
        self._keep = None if m.vocab_ids is None else reduced(model_dir / m.vocab_ids, self._tok)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = settings.threads
        opts.inter_op_num_threads = 1
        self._image = session(model_dir / "image.onnx", opts, m.image_input, m)
        self._text = session(model_dir / "text.onnx", opts, m.text_input, m)

    def tokens(self, texts: Sequence[str]) -> npt.NDArray[np.int64]:
        """The text tower's input for `texts` (the reduced vocabulary applied)."""
        return self._tok(texts, keep=self._keep)

    def pixels(self, images: Sequence[Pixels]) -> npt.NDArray[np.float32]:
        """The image tower's input for `images`."""
        m = self.manifest
        return normalised([resized(i, m.image_size, m.resize) for i in images], m.mean, m.std)

    def encode_images(self, images: Sequence[Pixels]) -> Vector:
        out = np.zeros((len(images), self.dim), np.float32)
        for i in range(0, len(images), IMAGE_BATCH):
            x = self.pixels(images[i : i + IMAGE_BATCH])
            got = self._image.run([self.manifest.output], {self.manifest.image_input: x})[0]
            out[i : i + len(x)] = got
        return units(out)

    def encode_texts(self, texts: Sequence[str]) -> Vector:
        out = np.zeros((len(texts), self.dim), np.float32)
        for i in range(0, len(texts), TEXT_BATCH):
            t = self.tokens(texts[i : i + TEXT_BATCH])
            got = self._text.run([self.manifest.output], {self.manifest.text_input: t})[0]
            out[i : i + len(t)] = got
        return units(out)
