"""`bench loadtest` says which data it measures on and keys its seeded data set's cache on it
(issue 28: a missing MemoryBank silently switched to generated texts, and their cached seed was
reused by a later run on MemoryBank)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from bench import loadtest


def _memorybank(root: Path, text: str) -> Path:
    """A MemoryBank-shaped directory with one user, one day, one exchange, and one question."""
    for lang in ("cn", "en"):
        d = root / lang
        d.mkdir(parents=True)
        history = {
            "user0": {
                "name": "Ann",
                "history": {"2023-05-02": [{"query": text, "response": "Noted."}]},
            }
        }
        (d / f"memory_bank_{lang}.json").write_text(json.dumps(history))
        (d / f"probing_questions_{lang}.jsonl").write_text(json.dumps({"Ann": ["What?"]}) + "\n")
    return root


def test_a_missing_memorybank_is_an_error_unless_generated_texts_are_asked_for(
    tmp_path: Path,
) -> None:
    with pytest.raises(SystemExit, match="--allow-generated"):
        loadtest.corpus(tmp_path / "nowhere")
    made = loadtest.corpus(tmp_path / "nowhere", allow_generated=True)
    assert made.key.startswith("generated-") and made.source.startswith("GENERATED")
    assert made.turns and made.questions


def test_the_cache_is_keyed_on_the_texts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a = loadtest.corpus(_memorybank(tmp_path / "a", "I like green tea."))
    b = loadtest.corpus(_memorybank(tmp_path / "b", "I like black coffee."))
    generated = loadtest.corpus(tmp_path / "none", allow_generated=True)
    assert a.key.startswith("memorybank-") and "MemoryBank" in a.source
    assert len({a.key, b.key, generated.key}) == 3
    assert loadtest.corpus(_memorybank(tmp_path / "c", "I like green tea.")).key == a.key
    monkeypatch.setattr(loadtest, "OUT", tmp_path / "out")
    monkeypatch.setattr(loadtest, "ROOT", tmp_path)
    args = argparse.Namespace(size=10, namespaces=2, reseed=False)
    paths = set()
    for texts in (a, generated):
        cached = tmp_path / "out" / f"loadtest-data-10-ns2-{texts.key}-v{loadtest.SEED_VERSION}"
        cached.mkdir(parents=True)
        (cached / "loadtest-seed.json").write_text(json.dumps({"texts_key": texts.key}))
        path, seeded = loadtest.data_set(args, texts, tmp_path / "unused.yaml")
        assert path == cached and seeded["texts_key"] == texts.key
        paths.add(path)
    assert len(paths) == 2
