"""The installed difficulty models (`pocketd models train-difficulty` writes them): two ONNX
heads in `<data_dir>/agent/difficulty/`, loaded with the built-in encoder that feeds them."""

from __future__ import annotations

from pathlib import Path

from server.adapters.onnx_encoder import OnnxTextEncoder
from server.adapters.onnx_policy import OnnxPocketModel
from server.core.agent.difficulty import LAYOUT, LearnedDifficulty
from server.core.settings import Settings

HEADS = ("at_least_medium", "complex")


def difficulty_dir(settings: Settings) -> Path:
    return Path(settings.server.data_dir) / "agent" / "difficulty"


def load_difficulty(
    settings: Settings, encoder: OnnxTextEncoder | None
) -> LearnedDifficulty | None:
    """The installed learned classifier, or None (none installed, or no encoder to feed it)."""
    where = difficulty_dir(settings)
    if encoder is None or not (where / f"{HEADS[0]}.onnx").is_file():
        return None
    width = encoder.dim + 4
    a, b = (OnnxPocketModel((where / f"{h}.onnx").read_bytes(), LAYOUT, width) for h in HEADS)
    return LearnedDifficulty(encoder.encode, a.score, b.score)
