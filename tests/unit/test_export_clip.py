"""`pocketd models export-clip` and tools/export_clip.py.

The command's plumbing runs everywhere: the export venv is reused when it holds the pins, and
the tool runs in it offline with the user's arguments. The export itself runs where torch and
open-clip-torch are installed (the `torch` marker: left out of `make test`; `pytest -m torch`
in an environment with the project's and the export venv's packages): a randomly initialised
small open_clip model (no download) is exported, and the server's side (`OnnxImageSpace`: its
preprocessing, tokenizer and ONNX towers) gives torch's vectors within 1e-5; the runtime
tokenizer gives open_clip's ids, and its pattern open_clip's pieces on every code point."""

from __future__ import annotations

import json
import random
import sys
import unicodedata
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from server.adapters.clip_onnx import OnnxImageSpace
from server.adapters.clip_tokenizer import ClipTokenizer, pattern
from server.core.settings import ClipSettings
from server.models_admin import EXPORT_TOOL, export_clip_main
from tests.conftest import ROOT, load_tool

TOLERANCE = 1e-5
# A small CLIP with the full token table (the tiny fixture's shape, 64-d, 49,408 tokens).
CONFIG = {
    "embed_dim": 64,
    "vision_cfg": {"image_size": 64, "layers": 2, "width": 96, "patch_size": 8, "head_width": 32},
    "text_cfg": {"context_length": 24, "vocab_size": 49408, "width": 64, "heads": 2, "layers": 2},
}
TEXTS = [
    "a photo of a cat",
    "Error E1234: disk quota exceeded",
    "上次那张报错图里的错误码是什么",
    "退款被拒 🙂 ＦＵＬＬ width",
    " ".join(["long"] * 40),  # beyond the context: cut, the end token kept
]


@pytest.fixture(scope="module")
def oc() -> Any:
    """open_clip, or the module skipped (imported here, not at collection: `make test`
    deselects the marker without a skip line)."""
    pytest.importorskip("torch")
    return pytest.importorskip("open_clip")


@pytest.fixture(scope="module")
def ec(oc: Any) -> ModuleType:
    return load_tool("export_clip")


@pytest.fixture(scope="module")
def model(ec: ModuleType, oc: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    path = tmp_path_factory.mktemp("cfg") / "tiny-random.json"
    path.write_text(json.dumps(CONFIG))
    oc.add_model_config(path)
    ec.torch.manual_seed(0)
    return ec.load("tiny-random", None)


def images() -> list[Any]:
    rng = np.random.default_rng(3)
    return [rng.integers(0, 256, (h, w, 3), dtype=np.uint8) for h, w in
            ((480, 640), (900, 300), (64, 64), (61, 97), (20, 300))]  # fmt: skip


def torch_vectors(ec: ModuleType, m: Any, pixels: list[Any], texts: list[str]) -> tuple[Any, Any]:
    from PIL import Image

    torch, p = ec.torch, m.preprocess
    transform = ec.open_clip.image_transform(p["size"], False, mean=p["mean"], std=p["std"])
    with torch.no_grad():
        x = torch.stack([transform(Image.fromarray(i)) for i in pixels])
        ie = m.model.encode_image(x, normalize=True).numpy()
        te = m.model.encode_text(m.tokenizer(texts), normalize=True).numpy()
    return ie, te


@pytest.mark.torch
def test_the_exported_space_gives_torchs_vectors(
    ec: ModuleType, model: Any, tmp_path: Path
) -> None:
    report = ec.export(model, tmp_path / "m", say=lambda _: None)
    assert report.check.tokens_equal and report.check.pixels == 0.0
    assert max(report.check.image, report.check.text) <= TOLERANCE
    space = OnnxImageSpace(tmp_path / "m", ClipSettings(model_dir=str(tmp_path / "m")))
    assert space.dim == 64 and space.space_id.startswith("tiny-random:")
    ie, te = torch_vectors(ec, model, images(), TEXTS)
    assert np.abs(space.encode_images(images()) - ie).max() <= TOLERANCE
    assert np.abs(space.encode_texts(TEXTS) - te).max() <= TOLERANCE


@pytest.mark.torch
def test_int8_stays_near_float32(ec: ModuleType, model: Any, tmp_path: Path) -> None:
    report = ec.export(model, tmp_path / "q", int8=True, say=lambda _: None)
    assert report.int8_min_cosine is not None and report.int8_min_cosine > 0.99
    assert sum(report.sizes.values()) < sum(report.float32_sizes.values())
    space = OnnxImageSpace(tmp_path / "q", ClipSettings(model_dir=str(tmp_path / "q")))
    ie, te = torch_vectors(ec, model, images(), TEXTS)
    assert np.sum(space.encode_images(images()) * ie, axis=1).min() > 0.99
    assert np.sum(space.encode_texts(TEXTS) * te, axis=1).min() > 0.99


@pytest.mark.torch
def test_the_runtime_tokenizer_gives_open_clips_ids(ec: ModuleType, oc: Any) -> None:
    theirs = oc.tokenizer.SimpleTokenizer()
    ours = ClipTokenizer(ec.vocabulary())
    cases = json.loads((ROOT / "tests/unit/adapters/clip_tokens.json").read_text())["cases"]
    rng = random.Random(5)
    blocks = [(0x20, 0x7E), (0xA0, 0x24F), (0x370, 0x4FF), (0x4E00, 0x4FFF), (0x3040, 0x30FF),
              (0xAC00, 0xAC80), (0x1F300, 0x1F64F), (0xFF00, 0xFFEF), (0x900, 0x97F)]  # fmt: skip
    fuzz = ["".join(chr(rng.randint(*rng.choice(blocks))) for _ in range(rng.randint(0, 25)))
            for _ in range(500)]  # fmt: skip
    texts = [c["text"] for c in cases] + fuzz
    differ = [t for t in texts if ours.encode(t) != theirs.encode(t)]
    # ftfy's mojibake repair (left out here) may read a few random Latin-1 runs as UTF-8
    assert len(differ) <= len(fuzz) // 100, differ[:5]


@pytest.mark.torch
def test_the_pattern_splits_every_code_point_as_open_clips(oc: Any) -> None:
    regex: Any = pytest.importorskip("regex")  # open_clip's own dependency
    theirs = oc.tokenizer.SimpleTokenizer().pat
    ours = pattern()
    bad = []
    for cp in range(0x110000):
        c = chr(cp)
        if unicodedata.category(c) in ("Cs", "Cn") or c.isspace():
            continue  # surrogates; unassigned in this Python's tables; gone after the clean-up
        for s in (c, f"a{c}b", f"1{c}'s"):
            s = s.lower()
            if regex.findall(theirs, s) != ours.findall(s.replace("\u0345", " ")):
                bad.append(hex(cp))
                break
    assert not bad, bad[:20]


def fake_venv(root: Path, probe_ok: bool) -> Path:
    """A venv whose python records its arguments and HF_HUB_OFFLINE, and passes the pins' probe
    when `probe_ok`."""
    (root / "bin").mkdir(parents=True)
    python = root / "bin" / "python"
    python.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys\n"
        "if sys.argv[1] == '-c':\n"
        f"    sys.exit(0 if {probe_ok} else 1)\n"
        "with open(os.path.join(os.path.dirname(__file__), 'calls'), 'a') as f:\n"
        "    f.write(json.dumps([sys.argv[1:], os.environ.get('HF_HUB_OFFLINE')]) + '\\n')\n"
        "sys.exit(3)\n"
    )
    python.chmod(0o755)
    return root


def test_export_clip_runs_the_tool_in_its_venv_offline(tmp_path: Path) -> None:
    venv = fake_venv(tmp_path / "venv", probe_ok=True)
    checkpoint = tmp_path / "w.safetensors"
    checkpoint.write_bytes(b"weights")
    rc = export_clip_main("ViT-B-32", checkpoint, tmp_path / "out", True, venv, "openai")
    assert rc == 3, "the tool's exit status"
    [(argv, offline)] = [json.loads(x) for x in (venv / "bin" / "calls").read_text().splitlines()]
    assert argv == [str(EXPORT_TOOL), "--arch", "ViT-B-32", "--checkpoint", str(checkpoint),
                    "--out", str(tmp_path / "out"), "--tag", "openai", "--int8"]  # fmt: skip
    assert offline == "1"
    assert export_clip_main("ViT-B-32", tmp_path / "nope.bin", tmp_path, False, venv) == 2
