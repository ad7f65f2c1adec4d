"""The difficulty classifier's learned part: the shipped prompt set, training by template, the
ONNX heads installed by `pocketd models train-difficulty` and loaded back, and probabilities
that add up."""

from __future__ import annotations

from pathlib import Path

import pytest

from server.adapters.difficulty_models import difficulty_dir, load_difficulty
from server.adapters.onnx_encoder import OnnxTextEncoder
from server.cli import main
from server.core.agent.difficulty import combine, held_out, load
from server.models_admin import DEFAULT_DATA
from tests.conftest import MODEL_DIR, make_settings


def test_the_shipped_set_has_both_languages_and_every_tier() -> None:
    rows = load(DEFAULT_DATA)
    assert len(rows) >= 300
    assert {r.tier for r in rows} == {"simple", "medium", "complex"}
    assert any("\u4e00" <= r.text[0] <= "\u9fff" or "订单" in r.text for r in rows)
    templates = {r.template for r in rows}
    split = {t for t in templates if held_out(t, 0.25)}
    assert 0 < len(split) < len(templates)  # whole templates on one side


def test_combined_probabilities_add_up_and_stay_ordered() -> None:
    import numpy as np

    for p in combine(np.array([0.9, 0.2, 0.5], np.float32), np.array([0.95, 0.6, 0.1], np.float32)):
        assert sum(p.values()) == pytest.approx(1.0)
        assert min(p.values()) >= 0


def test_train_installs_heads_the_server_loads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["models", "train-difficulty", "--data-dir", str(tmp_path), "--epochs", "30"])
    assert code == 0
    out = capsys.readouterr()
    assert "held-out accuracy" in out.out and "rules alone" in out.out
    settings = make_settings(tmp_path)
    assert (difficulty_dir(settings) / "report.json").is_file()
    enc = OnnxTextEncoder(MODEL_DIR, 1, 8, 64)
    learned = load_difficulty(settings, enc)
    assert learned is not None
    p = learned.probabilities("Compare the two contracts and write a risk memo")
    assert sum(p.values()) == pytest.approx(1.0, abs=1e-5)
    again = main(["models", "train-difficulty", "--data-dir", str(tmp_path), "--epochs", "5"])
    assert again == 0 and difficulty_dir(settings).with_name("difficulty.previous").is_dir()
    assert load_difficulty(settings, None) is None  # no encoder: the rules alone
