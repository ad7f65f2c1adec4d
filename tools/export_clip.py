"""Export an open_clip checkpoint's two towers to ONNX as a pocketd image space (torch only here).

    python tools/export_clip.py --arch ViT-B-32 --checkpoint FILE --out DIR
        [--tag TAG] [--config JSON] [--int8] [--floor F] [--ceiling C]

Run by `pocketd models export-clip`, in a venv of its own (open-clip-torch 3.3.0, torch 2.15.0,
onnx, onnxruntime) with HF_HUB_OFFLINE=1: nothing is downloaded, the checkpoint is the user's
file (.bin, .pt or .safetensors). The server runs the result on onnxruntime alone
(`server/adapters/clip_onnx.py`).

What it does:
- builds the model (`--arch`, one of open_clip's configs; `--tag` names the pretrained tag the
  checkpoint was released as, so that its preprocessing and QuickGELU setting apply: OpenAI's
  ViT-B-32 weights are `--tag openai`);
- exports the image tower (float32 [b, 3, s, s] -> [b, dim]) and the text tower (int64
  [b, context] -> [b, dim]), both L2-normalised, opset 17, batch dynamic;
- checks the runtime's side against open_clip's on drawn images of several shapes and texts in
  English, Chinese and emoji: pocketd's preprocessing (`clip_preprocess.py`) against open_clip's
  transform, pocketd's tokenizer (`clip_tokenizer.py`) against open_clip's, and the ONNX towers
  against torch: a max abs difference above 1e-5 fails the export;
- `--int8`: quantises both graphs (onnxruntime's dynamic int8) after the check, and reports how
  far its vectors lie from float32's;
- writes the manifest (preprocessing, context length, the vocabulary copied from the open_clip
  package, each graph's sha256, the floor and ceiling) and reports sizes and timings.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import shutil
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt
import onnxruntime as ort
import open_clip
import torch
from PIL import Image, ImageDraw

ROOT = Path(__file__).resolve().parent.parent
OPSET = 17
TOLERANCE = 1e-5
# The cosines that mean no match and a full match, unless --floor and --ceiling say otherwise:
# CLIP ViT-B-32 puts an image and a fitting caption at about 0.25 to 0.35 and unrelated pairs
# at about 0.1 to 0.2 (its logit scale of 100 turns those small gaps into confident softmaxes).
# Not measured here (no weights ship in a package): measure yours (docs: checking cross-modal
# recall) and pass them.
FLOOR = 0.18
CEILING = 0.32
CHECK_TEXTS = [
    "a photo of a cat",
    "Error E1234: disk quota exceeded",
    "上次那张报错图里的错误码是什么",
    "🙂 ＦＵＬＬ width &amp; café",
]


def runtime_module(name: str) -> ModuleType:
    """One of pocketd's adapters that import only numpy, PIL and the standard library, loaded
    by path (the export venv has no pocketd installed)."""
    path = ROOT / "server" / "adapters" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"pocketd_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


pre = runtime_module("clip_preprocess")
tokenizer = runtime_module("clip_tokenizer")


class ImageTower(torch.nn.Module):
    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.model.encode_image(x, normalize=True)
        return out


class TextTower(torch.nn.Module):
    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, t: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.model.encode_text(t, normalize=True)
        return out


@dataclass(frozen=True)
class Loaded:
    """A model ready to export: its preprocessing (open_clip's dict) and tokenizer."""

    model: torch.nn.Module
    preprocess: dict[str, Any]
    tokenizer: Any  # open_clip's SimpleTokenizer
    name: str


def load(arch: str, checkpoint: Path | None, tag: str = "") -> Loaded:
    """open_clip's model `arch` with the checkpoint's weights (random ones without), in eval
    mode, with the tag's preprocessing and QuickGELU setting."""
    tag_cfg: dict[str, Any] = open_clip.get_pretrained_cfg(arch, tag) if tag else {}
    if tag and not tag_cfg:
        raise SystemExit(f"--tag {tag}: open_clip knows no such tag for {arch}")
    model = open_clip.create_model(
        arch,
        pretrained=str(checkpoint) if checkpoint else None,
        force_quick_gelu=bool(tag_cfg.get("quick_gelu", False)),
        force_preprocess_cfg={k: tag_cfg[k] for k in ("mean", "std", "interpolation",
                                                      "resize_mode") if k in tag_cfg},
    )  # fmt: skip
    model.eval()
    name = f"open_clip {arch}" + (f" ({tag})" if tag else "")
    return Loaded(model, dict(model.visual.preprocess_cfg), open_clip.get_tokenizer(arch), name)


def supported(m: Loaded) -> tuple[int, str, int]:
    """The image size, resize and context length, or SystemExit naming what the runtime lacks."""
    p, tok = m.preprocess, m.tokenizer
    size = p["size"] if isinstance(p["size"], int) else tuple(p["size"])
    if isinstance(size, tuple):
        if len(set(size)) != 1:
            raise SystemExit(f"image size {size}: the runtime takes square images only")
        size = size[0]
    if p.get("resize_mode", "shortest") not in ("shortest", "squash"):
        raise SystemExit(f"resize_mode {p['resize_mode']}: the runtime has shortest and squash")
    if p.get("interpolation", "bicubic") != "bicubic":
        raise SystemExit(f"interpolation {p['interpolation']}: the runtime resizes bicubic")
    plain = (
        isinstance(tok, open_clip.tokenizer.SimpleTokenizer)
        and getattr(tok.clean_fn, "__name__", "") == "_clean_lower"
        and tok.reduction_fn is None
        and tok.vocab_size == 49408
    )
    if not plain:
        raise SystemExit(f"{type(tok).__name__}: the runtime has CLIP's BPE tokenizer only")
    resize = pre.SHORTEST if p.get("resize_mode", "shortest") == "shortest" else pre.SQUASH
    return int(size), resize, int(tok.context_length)


def export_towers(m: Loaded, size: int, context: int, out: Path) -> None:
    """image.onnx and text.onnx in `out`, traced on a batch of two."""
    fast = torch.backends.mha.get_fastpath_enabled()
    try:
        with torch.no_grad(), warnings.catch_warnings():
            # The TorchScript exporter is deprecated in torch 2.9+ but still exact here (the
            # dynamo one is not what was measured); its note about negative indices concerns
            # the text tower's pooling at the end token's position, which is never negative.
            warnings.simplefilter("ignore", DeprecationWarning)
            warnings.filterwarnings("ignore", "Exporting aten::index", UserWarning)
            # The tracer's notes on shape checks it records as constants: the check below runs
            # batches of other sizes than the traced one.
            warnings.simplefilter("ignore", torch.jit.TracerWarning)
            # Inference without grad takes MultiheadAttention's fused fast path, an operator
            # ONNX has no export for: trace the plain one.
            torch.backends.mha.set_fastpath_enabled(False)
            x = torch.randn(2, 3, size, size)
            t = torch.as_tensor(m.tokenizer(CHECK_TEXTS[:2]))
            for tower, arg, graph, inp in (
                (ImageTower(m.model), x, "image.onnx", "image"),
                (TextTower(m.model), t, "text.onnx", "tokens"),
            ):
                torch.onnx.export(
                    tower, (arg,), str(out / graph), input_names=[inp], output_names=["emb"],
                    dynamic_axes={inp: {0: "b"}, "emb": {0: "b"}}, opset_version=OPSET,
                    dynamo=False,
                )  # fmt: skip
    finally:
        torch.backends.mha.set_fastpath_enabled(fast)


def check_images(size: int) -> list[npt.NDArray[np.uint8]]:
    """Drawn images of several shapes: wide, tall, square, small (upscaled), and noise."""
    rng = np.random.default_rng(0)
    out = []
    for w, h in ((640, 480), (300, 900), (size, size), (97, 61)):
        img = Image.new("RGB", (w, h), tuple(int(v) for v in rng.integers(0, 256, 3)))
        d = ImageDraw.Draw(img)
        for _ in range(6):
            x0, y0 = int(rng.integers(0, w)), int(rng.integers(0, h))
            box = (x0, y0, x0 + int(rng.integers(5, w)), y0 + int(rng.integers(5, h)))
            d.rectangle(box, fill=tuple(int(v) for v in rng.integers(0, 256, 3)))
        d.text((w // 4, h // 2), "E1234 退款", fill=(0, 0, 0))
        out.append(np.asarray(img, np.uint8))
    out.append(rng.integers(0, 256, (size + 13, size + 40, 3), dtype=np.uint8))
    return out


@dataclass(frozen=True)
class Check:
    """How far the runtime's side lies from open_clip's."""

    pixels: float  # preprocessing: pocketd's against open_clip's transform (max abs)
    tokens_equal: bool
    image: float  # ONNX against torch, unit vectors (max abs)
    text: float


def check(m: Loaded, out: Path, size: int, resize: str, context: int) -> Check:
    """The export against torch (see the module docstring); SystemExit when it fails."""
    mean, std = m.preprocess["mean"], m.preprocess["std"]
    transform = open_clip.image_transform(
        size, is_train=False, mean=mean, std=std,
        resize_mode="shortest" if resize == pre.SHORTEST else "squash",
    )  # fmt: skip
    images = check_images(size)
    ours = pre.normalised([pre.resized(i, size, resize) for i in images], mean, std)
    theirs = torch.stack([transform(Image.fromarray(i)) for i in images])
    tok = tokenizer.ClipTokenizer(vocabulary(), context)
    our_tokens = tok(CHECK_TEXTS)
    their_tokens = m.tokenizer(CHECK_TEXTS)
    with torch.no_grad():
        ie = m.model.encode_image(theirs, normalize=True).numpy()
        te = m.model.encode_text(their_tokens, normalize=True).numpy()
    si = ort.InferenceSession(str(out / "image.onnx"), providers=["CPUExecutionProvider"])
    st = ort.InferenceSession(str(out / "text.onnx"), providers=["CPUExecutionProvider"])
    got = Check(
        pixels=float(np.abs(ours - theirs.numpy()).max()),
        tokens_equal=bool(np.array_equal(our_tokens, their_tokens.numpy())),
        image=float(np.abs(si.run(None, {"image": ours})[0] - ie).max()),
        text=float(np.abs(st.run(None, {"tokens": our_tokens})[0] - te).max()),
    )
    if not got.tokens_equal or max(got.pixels, got.image, got.text) > TOLERANCE:
        raise SystemExit(f"the export differs from open_clip beyond {TOLERANCE}: {got}")
    return got


def vocabulary() -> Path:
    """The BPE vocabulary that ships in the open_clip package."""
    return Path(open_clip.__file__).parent / "bpe_simple_vocab_16e6.txt.gz"


def quantise(src: Path, out: Path) -> None:
    """Dynamic int8 weights for both graphs (onnxruntime.quantization). Its recommended
    pre-processing (`quant_pre_process`) fails on these graphs (its symbolic shape inference
    asserts on the attention's Reshape), and its warning that it was skipped is expected."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    for graph in ("image.onnx", "text.onnx"):
        quantize_dynamic(src / graph, out / graph, weight_type=QuantType.QInt8)


def vectors_of(out: Path, size: int, resize: str, context: int, m: Loaded) -> npt.NDArray[Any]:
    """The check's images and texts through `out`'s graphs, one unit row each."""
    mean, std = m.preprocess["mean"], m.preprocess["std"]
    x = pre.normalised([pre.resized(i, size, resize) for i in check_images(size)], mean, std)
    t = tokenizer.ClipTokenizer(vocabulary(), context)(CHECK_TEXTS)
    si = ort.InferenceSession(str(out / "image.onnx"), providers=["CPUExecutionProvider"])
    st = ort.InferenceSession(str(out / "text.onnx"), providers=["CPUExecutionProvider"])
    return np.vstack([si.run(None, {"image": x})[0], st.run(None, {"tokens": t})[0]])


def timed(run: Callable[[], object], n: int) -> float:
    """Seconds per call of `run`, the best of `n`."""
    best = float("inf")
    for _ in range(n):
        t0 = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - t0)
    return best


def speeds(out: Path, size: int, context: int) -> tuple[float, float]:
    """Milliseconds per image and per text, one image or text a call, one thread."""
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    cpu = ["CPUExecutionProvider"]
    si = ort.InferenceSession(str(out / "image.onnx"), opts, providers=cpu)
    st = ort.InferenceSession(str(out / "text.onnx"), opts, providers=cpu)
    x = np.zeros((1, 3, size, size), np.float32)
    t = tokenizer.ClipTokenizer(vocabulary(), context)(CHECK_TEXTS[:1])
    return (
        1e3 * timed(lambda: si.run(None, {"image": x}), 3),
        1e3 * timed(lambda: st.run(None, {"tokens": t}), 3),
    )


def digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@dataclass(frozen=True)
class Report:
    check: Check
    sizes: dict[str, int]  # bytes per graph as written
    float32_sizes: dict[str, int]
    int8_min_cosine: float | None  # int8 vectors against float32's, the worst of the check's
    ms_per_image: float
    ms_per_text: float
    space_id: str


def export(
    m: Loaded,
    out: Path,
    int8: bool = False,
    floor: float = FLOOR,
    ceiling: float = CEILING,
    source: dict[str, str] | None = None,
    say: Callable[[str], None] = print,
) -> Report:
    """Exports, checks and writes the model directory `out` (see the module docstring)."""
    size, resize, context = supported(m)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="pocketd-clip-", dir=out) as tmp:
        f32 = Path(tmp)
        t0 = time.monotonic()
        export_towers(m, size, context, f32)
        say(f"exported both towers in {time.monotonic() - t0:.1f} s")
        got = check(m, f32, size, resize, context)
        say(f"checked against open_clip: {got}")
        f32_sizes = {g: (f32 / g).stat().st_size for g in ("image.onnx", "text.onnx")}
        ref = vectors_of(f32, size, resize, context, m)
        worst: float | None = None
        if int8:
            quantise(f32, out)
            q = vectors_of(out, size, resize, context, m)
            cos = np.sum(ref * q, axis=1) / np.linalg.norm(ref, axis=1) / np.linalg.norm(q, axis=1)
            worst = float(cos.min())
            say(f"int8: its vectors lie at cosine >= {worst:.4f} from float32's")
        else:
            for g in ("image.onnx", "text.onnx"):
                shutil.move(str(f32 / g), out / g)
    shutil.copyfile(vocabulary(), out / vocabulary().name)
    sums = {g: digest(out / g) for g in ("image.onnx", "text.onnx")}
    space_id = (
        f"{m.name.removeprefix('open_clip ')}:"
        + hashlib.sha256((sums["image.onnx"] + sums["text.onnx"]).encode()).hexdigest()[:16]
    )
    manifest = {
        "name": m.name + (" int8" if int8 else ""),
        "space_id": space_id,
        "dim": int(ref.shape[1]),
        "image_size": size,
        "mean": [float(v) for v in m.preprocess["mean"]],
        "std": [float(v) for v in m.preprocess["std"]],
        "resize": resize,
        "context_length": context,
        "vocabulary": vocabulary().name,
        "image_input": "image",
        "text_input": "tokens",
        "output": "emb",
        "vector_floor": floor,
        "vector_ceiling": ceiling,
        "sha256": sums,
        "source": {
            **(source or {}),
            "open_clip": open_clip.__version__,
            "torch": torch.__version__,
        },
        "check": asdict(got),
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
    ms_image, ms_text = speeds(out, size, context)
    sizes = {g: (out / g).stat().st_size for g in ("image.onnx", "text.onnx")}
    return Report(got, sizes, f32_sizes, worst, ms_image, ms_text, space_id)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--arch", required=True, help="open_clip's model name, e.g. ViT-B-32")
    ap.add_argument("--checkpoint", type=Path, required=True, help=".bin, .pt or .safetensors")
    ap.add_argument("--out", type=Path, required=True, help="the model directory to write")
    ap.add_argument("--tag", default="", help="the pretrained tag the weights were released as")
    ap.add_argument("--config", type=Path, help="an open_clip model config (JSON) named --arch")
    ap.add_argument("--int8", action="store_true", help="quantise the graphs (dynamic int8)")
    ap.add_argument("--floor", type=float, default=FLOOR, help=f"no-match cosine ({FLOOR})")
    ap.add_argument("--ceiling", type=float, default=CEILING, help=f"full match ({CEILING})")
    ns = ap.parse_args(argv)
    if not ns.checkpoint.is_file():
        print(f"export_clip: {ns.checkpoint} is not a file", file=sys.stderr)
        return 2
    if not -1.0 <= ns.floor < ns.ceiling <= 1.0:
        print("export_clip: need -1 <= --floor < --ceiling <= 1", file=sys.stderr)
        return 2
    torch.set_grad_enabled(False)
    if ns.config:
        open_clip.add_model_config(ns.config)  # registered under the file's stem
    m = load(ns.arch, ns.checkpoint, ns.tag)
    source = {"arch": ns.arch, "checkpoint": ns.checkpoint.name, "tag": ns.tag,
              "checkpoint_sha256": digest(ns.checkpoint)}  # fmt: skip
    r = export(m, ns.out, ns.int8, ns.floor, ns.ceiling, source, lambda s: print(s, flush=True))
    for g, n in r.sizes.items():
        was = f" (float32 {r.float32_sizes[g] / 1e6:.0f} MB)" if ns.int8 else ""
        print(f"{ns.out / g}: {n / 1e6:.0f} MB{was}")
    print(f"{r.ms_per_image:.0f} ms an image, {r.ms_per_text:.0f} ms a text (one thread)")
    print(f"space {r.space_id} written to {ns.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
