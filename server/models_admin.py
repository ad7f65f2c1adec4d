"""`pocketd models train-difficulty`: train the difficulty classifier's learned part on labelled
prompts (the shipped set by default), report its held-out accuracy against the rules alone,
export both heads to ONNX (checked against numpy), and install them in
`<data_dir>/agent/difficulty/`, where the server loads them at start
(`server.adapters.difficulty_models`) for AgentService.Step's tier routing.

The install replaces the folder by a rename; the one it replaces is kept as
`difficulty.previous`.
"""

from __future__ import annotations

import json
import shutil
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
