"""The tests' image space: a model directory for the tiny CLIP-style model in
`../shared/fixtures/tiny-clip/` (see its README: 22 captions of drawn shapes and digits, 64-d).

    python tools/tiny_clip.py --out DIR [--measure N]

`build` copies the two graphs and the reduced vocabulary's ids, and writes the manifest the
fixture implies: 64 x 64 images fed as they are ("squash" is a no-op on the drawn 64 x 64
images), `eval_ort.py`'s mean and std, a context of 16 tokens. `--measure N` draws N fresh images
per caption with the fixture's `synth.py` and prints `tools/clip_recall.py`'s figures (recall,
and the cosines of matched and unmatched pairs), which the manifest's floor and ceiling come
from. Tests call `tiny_clip_dir(tmp_path_factory)`.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import importlib.util
import json
import random
import shutil
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT.parent / "shared" / "fixtures" / "tiny-clip"
VOCABULARY = ROOT / "models" / "clip-bpe" / "bpe_simple_vocab_16e6.txt.gz"
# Measured with `--measure 20` (440 images, seed 0; seed 7 within 0.02): unmatched pairs'
# cosines average -0.03 but spread wide (90th percentile 0.42, 99th 0.67: "a red square" is half
# right about a red circle), matched ones average 0.87 (1st percentile 0.70, median 0.88). The
# floor is the unmatched 90th percentile, so nine unmatched pairs in ten score 0 and count as no
# vector hit, and the ceiling the matched median, so half the matched pairs score 1 and the worst
# in a hundred still score about 0.6.
FLOOR = 0.42
CEILING = 0.88


@functools.cache
def synth(fixture: Path = FIXTURE) -> ModuleType:
    """The fixture's `synth.py` (its captions, `CLASSES`, and `render(caption, rng)`)."""
    spec = importlib.util.spec_from_file_location("tiny_clip_synth", fixture / "synth.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def draw(captions: Sequence[str], rng: random.Random) -> list[npt.NDArray[np.uint8]]:
    """Fresh images of `captions`, as RGB pixels, drawn by the fixture's `synth.render` (which
    passes floats to `randint`, deprecated since Python 3.10: the warning is silenced here)."""
    render = synth().render
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "non-integer arguments to randrange", DeprecationWarning)
        return [np.asarray(render(c, rng), np.uint8) for c in captions]


def build(fixture_dir: Path, vocab: Path, out: Path) -> Path:
    """Writes the model directory `out` (created if missing) and returns it."""
    out.mkdir(parents=True, exist_ok=True)
    digests: dict[str, str] = {}
    for name in ("image.onnx", "text.onnx", "vocab_ids.npy"):
        shutil.copyfile(fixture_dir / name, out / name)
        digests[name] = hashlib.sha256((out / name).read_bytes()).hexdigest()
    shutil.copyfile(vocab, out / vocab.name)
    manifest: dict[str, Any] = {
        "name": "tiny-shapes (tests only: 22 captions of drawn shapes and digits)",
        "space_id": "tiny-shapes:" + digests["image.onnx"][:8] + digests["text.onnx"][:8],
        "dim": 64,
        "image_size": 64,
        "mean": [0.481, 0.458, 0.408],
        "std": [0.269, 0.261, 0.276],
        "resize": "squash",
        "context_length": 16,
        "vocabulary": vocab.name,
        "vocab_ids": "vocab_ids.npy",
        "image_input": "image",
        "text_input": "tokens",
        "output": "emb",
        "vector_floor": FLOOR,
        "vector_ceiling": CEILING,
        "sha256": {k: v for k, v in digests.items() if k.endswith(".onnx")},
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return out


_BUILT: dict[str, Path] = {}


def tiny_clip_dir(tmp_path_factory: Any) -> Path:
    """The tiny model's directory, built once per pytest session (`tmp_path_factory`: pytest's
    fixture of that name). Needs `make models` (the BPE vocabulary)."""
    key = str(tmp_path_factory.getbasetemp())
    if key not in _BUILT:
        if not VOCABULARY.is_file():
            raise FileNotFoundError(f"{VOCABULARY} is missing: run `make models`")
        _BUILT[key] = build(FIXTURE, VOCABULARY, tmp_path_factory.mktemp("tiny-clip"))
    return _BUILT[key]


def measure(model_dir: Path, per_caption: int, seed: int = 0) -> dict[str, float]:
    """`tools/clip_recall.py`'s figures over `per_caption` fresh images of each caption."""
    from server.adapters.clip_onnx import OnnxImageSpace
    from server.core.settings import ClipSettings

    spec = importlib.util.spec_from_file_location("clip_recall", ROOT / "tools/clip_recall.py")
    assert spec is not None and spec.loader is not None
    clip_recall = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(clip_recall)
    texts = [c for c in synth().CLASSES for _ in range(per_caption)]
    space = OnnxImageSpace(model_dir, ClipSettings(model_dir=str(model_dir)))
    out: dict[str, float] = clip_recall.recall(space, draw(texts, random.Random(seed)), texts)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--measure", type=int, default=0, help="fresh images per caption")
    ns = ap.parse_args(argv)
    out = build(FIXTURE, VOCABULARY, ns.out)
    print(f"wrote {out}")
    if ns.measure:
        for k, v in measure(out, ns.measure).items():
            print(f"{k}: {v:.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
