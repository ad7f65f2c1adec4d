"""`pocketd models train-difficulty`: train the difficulty classifier's learned part on labelled
prompts (the shipped set by default), report its held-out accuracy against the rules alone,
export both heads to ONNX (checked against numpy), and install them in
`<data_dir>/agent/difficulty/`, where the server loads them at start
(`server.adapters.difficulty_models`) for AgentService.Step's tier routing.

The install replaces the folder by a rename; the one it replaces is kept as
`difficulty.previous`.

`pocketd models export-clip`: an open_clip checkpoint's two towers to ONNX, as an image space's
model directory (`clip.model_dir`), by `tools/export_clip.py` in a venv of its own that holds
torch (made once; never the server's: the server runs the towers on onnxruntime alone).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from server.adapters.difficulty_models import HEADS, difficulty_dir
from server.adapters.onnx_encoder import OnnxTextEncoder
from server.adapters.onnx_policy import OnnxPocketModel, export
from server.config import model_dir
from server.core.agent.difficulty import (
    LAYOUT,
    LearnedDifficulty,
    accuracy,
    fit,
    held_out,
    load,
    rows,
)
from server.core.agent.tiers import TierSettings, classify
from server.core.routing.mlp import TrainSettings
from server.core.settings import Settings

DEFAULT_DATA = Path(__file__).resolve().parent / "prompts" / "difficulty.jsonl"


@dataclass(frozen=True)
class Trained:
    accuracy: float  # held out, the learned classifier (rules and model)
    rules_accuracy: float  # held out, the rules alone
    train: int
    held_out: int


def train_difficulty(
    settings: Settings, data: Path, share: float, s: TrainSettings, log: Callable[[str], None]
) -> Trained:
    examples = load(data)
    test = [e for e in examples if held_out(e.template, share)]
    train_set = [e for e in examples if not held_out(e.template, share)]
    log(f"{len(examples)} prompts in {data}: {len(train_set)} to train, {len(test)} held out")
    if not test or not train_set:
        raise ValueError(f"{len(train_set)} training and {len(test)} held-out prompts: need both")
    encoder = OnnxTextEncoder(
        model_dir(settings), settings.encoder.threads, settings.encoder.batch_size, 256
    )
    t0 = time.monotonic()
    heads = fit(train_set, encoder.encode, s)
    log(f"trained two heads in {time.monotonic() - t0:.1f} s")
    x = rows([e.text for e in test], encoder.encode)
    version = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    models = [export(m, LAYOUT, version) for m in (heads.at_least_medium, heads.complex)]
    scorers = [OnnxPocketModel(m, LAYOUT, x.shape[1]) for m in models]
    for scorer, mlp in zip(scorers, (heads.at_least_medium, heads.complex), strict=True):
        gap = float(np.abs(scorer.score(x) - mlp.forward(x)).max()) if len(x) else 0.0
        if gap > 1e-4:
            raise RuntimeError(f"the exported head differs from the trained one by {gap:.2e}")
    learned = LearnedDifficulty(encoder.encode, scorers[0].score, scorers[1].score)
    tiers = TierSettings(routes={})
    by_model = [learned.probabilities(e.text) for e in test]
    rules_only = [classify(e.text, False, None, tiers).tier for e in test]
    with_model = [classify(e.text, False, learned, tiers).tier for e in test]
    out = Trained(
        accuracy=sum(1 for e, t in zip(test, with_model, strict=True) if t == e.tier) / len(test),
        rules_accuracy=sum(1 for e, t in zip(test, rules_only, strict=True) if t == e.tier)
        / len(test),
        train=len(train_set),
        held_out=len(test),
    )
    log(f"held out: the model alone {accuracy(test, by_model):.3f}")
    target = difficulty_dir(settings)
    tmp = target.with_name("difficulty.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for h, m in zip(HEADS, models, strict=True):
        (tmp / f"{h}.onnx").write_bytes(m)
    (tmp / "report.json").write_text(json.dumps({"version": version, **vars(out)}, indent=2))
    if target.exists():
        old = target.with_name("difficulty.previous")
        shutil.rmtree(old, ignore_errors=True)
        target.rename(old)
    tmp.rename(target)
    log(f"installed in {target} (the server loads it at start)")
    return out


def train_difficulty_main(settings: Settings, data: Path | None, share: float, epochs: int) -> int:
    def say(msg: str) -> None:
        print(f"pocketd models train-difficulty: {msg}", file=sys.stderr, flush=True)

    path = data or DEFAULT_DATA
    try:
        t = train_difficulty(settings, path, share, TrainSettings(epochs=epochs), say)
    except (OSError, ValueError) as e:
        print(f"pocketd: {e}", file=sys.stderr)
        return 2
    print(
        f"held-out accuracy ({t.held_out} prompts, {t.train} trained on): rules and model "
        f"{t.accuracy:.3f}, rules alone {t.rules_accuracy:.3f}"
    )
    return 0


# The export venv's packages: open_clip and the torch it was checked with (STACK.md), and the
# ONNX packages the export writes, checks and quantises with.
EXPORT_PINS = ("open-clip-torch==3.3.0", "torch==2.15.0", "onnx==1.23.2", "onnxruntime==1.32.0")
EXPORT_TOOL = Path(__file__).resolve().parent.parent / "tools" / "export_clip.py"
_PROBE = (
    "import importlib.metadata as m, sys; "
    "sys.exit(any(m.version(p.split('==')[0]) != p.split('==')[1] for p in sys.argv[1:]))"
)


def export_venv(venv: Path, say: Callable[[str], None]) -> Path:
    """The export venv's python: made and filled with `EXPORT_PINS` unless it holds them."""
    python = venv / "bin" / "python"
    if python.is_file():
        probe = subprocess.run([str(python), "-c", _PROBE, *EXPORT_PINS], capture_output=True)
        if probe.returncode == 0:
            return python
    say(f"making {venv} with {', '.join(EXPORT_PINS)} (once: a 3 GB download, about 7 minutes)")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--upgrade", "pip"], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", *EXPORT_PINS], check=True)
    return python


def export_clip_main(
    arch: str, checkpoint: Path, out: Path, int8: bool, venv: Path, tag: str = ""
) -> int:
    """Runs `tools/export_clip.py` in the export venv, offline (HF_HUB_OFFLINE=1: a pretrained
    tag never downloads), and returns its exit status."""

    def say(msg: str) -> None:
        print(f"pocketd models export-clip: {msg}", file=sys.stderr, flush=True)

    if not checkpoint.is_file():
        print(f"pocketd: --checkpoint {checkpoint} is not a file", file=sys.stderr)
        return 2
    if not EXPORT_TOOL.is_file():
        print(
            f"pocketd: {EXPORT_TOOL} is missing (export-clip runs from a checkout)", file=sys.stderr
        )
        return 2
    try:
        python = export_venv(venv, say)
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"pocketd: could not make the export venv {venv}: {e}", file=sys.stderr)
        return 2
    cmd = [str(python), str(EXPORT_TOOL), "--arch", arch, "--checkpoint", str(checkpoint)]
    cmd += ["--out", str(out), *(["--tag", tag] if tag else []), *(["--int8"] if int8 else [])]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    return subprocess.run(cmd, env=env).returncode
