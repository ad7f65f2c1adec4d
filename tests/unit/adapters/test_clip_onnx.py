"""The image space on onnxruntime alone, with the tiny model of `../shared/fixtures/tiny-clip/`:
the runtime tokenizer reproduces the fixture's tokens, drawn images and their captions land in
one space, the manifest's hashes refuse a modified graph, and the preprocessing is open_clip's
(resize, centre crop, scaling) on images whose right answer is known."""

from __future__ import annotations

import hashlib
import json
import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from server.adapters.clip_onnx import ClipModelError, OnnxImageSpace
from server.adapters.clip_preprocess import MAX_ASPECT, SHORTEST, normalised, resized
from server.core.settings import ClipSettings
from tests.conftest import load_tool

tiny = load_tool("tiny_clip")
try:
    synth = tiny.synth()
except FileNotFoundError as exc:  # a checkout without ../shared beside it (CI has it)
    pytest.skip(f"the tiny model's fixture is missing: {exc}", allow_module_level=True)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out: Path = tiny.tiny_clip_dir(tmp_path_factory)
    return out


@pytest.fixture(scope="module")
def space(model_dir: Path) -> OnnxImageSpace:
    return OnnxImageSpace(model_dir, ClipSettings(model_dir=str(model_dir)))


def drawn(captions: list[str], seed: int) -> list[Any]:
    out: list[Any] = tiny.draw(captions, random.Random(seed))
    return out


def test_the_runtime_tokenizer_gives_the_fixtures_tokens(space: OnnxImageSpace) -> None:
    expected = np.load(tiny.FIXTURE / "tokens.npy")
    assert np.array_equal(space.tokens(synth.CLASSES), expected)


@pytest.mark.parametrize("seed", [101, 202, 303])
def test_captions_find_their_drawn_images(space: OnnxImageSpace, seed: int) -> None:
    """20 fresh images of 20 captions (seeds the training never drew from): each caption's
    nearest image is its own for at least 18 of them."""
    captions = random.Random(seed).sample(synth.CLASSES, 20)
    images = space.encode_images(drawn(captions, seed))
    texts = space.encode_texts(captions)
    assert images.shape == (20, 64) and images.dtype == np.float32
    assert np.allclose(np.linalg.norm(images, axis=1), 1.0, atol=1e-5)
    assert np.allclose(np.linalg.norm(texts, axis=1), 1.0, atol=1e-5)
    r1 = float(((texts @ images.T).argmax(axis=1) == np.arange(20)).mean())
    assert r1 >= 0.9, r1
    cos = texts @ images.T
    assert np.diag(cos).mean() > space.vector_ceiling - 0.1 > space.vector_floor
    assert np.median(cos[~np.eye(20, dtype=bool)]) < space.vector_floor


def test_batches_give_the_rows_of_single_calls(space: OnnxImageSpace) -> None:
    images = drawn(synth.CLASSES, 7)  # 22: more than one batch of the image tower
    together = space.encode_images(images)
    alone = np.vstack([space.encode_images([i]) for i in images])
    assert np.allclose(together, alone, atol=1e-5)
    assert np.allclose(space.encode_texts(["a red circle", "the digit 3"])[1],
                       space.encode_texts(["the digit 3"])[0], atol=1e-5)  # fmt: skip
    assert space.encode_images([]).shape == (0, 64)


def test_words_outside_the_tiny_vocabulary_are_dropped(space: OnnxImageSpace) -> None:
    plain = space.encode_texts(["a red circle"])
    wordy = space.encode_texts(["a shiny red circle, 闪亮的"])
    assert np.allclose(plain, wordy, atol=1e-6)


def test_the_settings_override_the_manifests_floor_and_ceiling(model_dir: Path) -> None:
    s = OnnxImageSpace(
        model_dir, ClipSettings(model_dir=str(model_dir), space="pics", vector_floor=0.2)
    )
    assert (s.name, s.vector_floor, s.vector_ceiling) == ("pics", 0.2, tiny.CEILING)
    assert s.space_id.startswith("tiny-shapes:")
    with pytest.raises(ClipModelError, match="not below"):
        OnnxImageSpace(model_dir, ClipSettings(model_dir=str(model_dir), vector_floor=0.95))


def test_a_modified_graph_is_refused_by_name(model_dir: Path, tmp_path: Path) -> None:
    copy = shutil.copytree(model_dir, tmp_path / "m")
    data = bytearray((copy / "text.onnx").read_bytes())
    data[len(data) // 2] ^= 0x01  # one bit of a weight
    (copy / "text.onnx").write_bytes(bytes(data))
    with pytest.raises(ClipModelError, match=r"text\.onnx has sha256 .* refusing"):
        OnnxImageSpace(copy, ClipSettings(model_dir=str(copy)))


def test_an_unusable_directory_says_what_is_wrong(model_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(ClipModelError, match="export-clip"):
        OnnxImageSpace(tmp_path, ClipSettings(model_dir=str(tmp_path)))
    copy = shutil.copytree(model_dir, tmp_path / "m")
    manifest = json.loads((copy / "manifest.json").read_text())
    (copy / "manifest.json").write_text(json.dumps({**manifest, "dim": 512}))
    with pytest.raises(ClipModelError, match="512 dimensions"):
        OnnxImageSpace(copy, ClipSettings(model_dir=str(copy)))
    (copy / "manifest.json").write_text(json.dumps({**manifest, "output": "vec"}))
    with pytest.raises(ClipModelError, match="'vec' of 64 dimensions"):
        OnnxImageSpace(copy, ClipSettings(model_dir=str(copy)))
    (copy / manifest["vocabulary"]).write_bytes(b"not gzip")
    (copy / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ClipModelError, match=r"bpe_simple_vocab_16e6\.txt\.gz: Not a gzip"):
        OnnxImageSpace(copy, ClipSettings(model_dir=str(copy)))
    shutil.copyfile(model_dir / manifest["vocabulary"], copy / manifest["vocabulary"])
    (copy / "text.onnx").write_bytes(b"not a graph")
    sums = {**manifest["sha256"], "text.onnx": hashlib.sha256(b"not a graph").hexdigest()}
    (copy / "manifest.json").write_text(json.dumps({**manifest, "sha256": sums}))
    with pytest.raises(ClipModelError, match=r"text\.onnx does not load"):
        OnnxImageSpace(copy, ClipSettings(model_dir=str(copy)))
    del manifest["sha256"]
    (copy / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ClipModelError, match="sha256"):
        OnnxImageSpace(copy, ClipSettings(model_dir=str(copy)))


def stripes(h: int, w: int) -> Any:
    """An image whose outer quarters (along its long side) are red and green, its middle blue."""
    img = np.zeros((h, w, 3), np.uint8)
    img[...] = (0, 0, 255)
    if w >= h:
        img[:, : w // 4] = (255, 0, 0)
        img[:, w - w // 4 :] = (0, 255, 0)
    else:
        img[: h // 4] = (255, 0, 0)
        img[h - h // 4 :] = (0, 255, 0)
    return img


@pytest.mark.parametrize("shape", [(100, 200), (300, 120), (50, 50), (2, 40)])
def test_shortest_side_and_centre_crop_keep_the_middle(shape: tuple[int, int]) -> None:
    out = resized(stripes(*shape), 32, SHORTEST)
    assert out.shape == (32, 32, 3)
    blue = np.all(out == (0, 0, 255), axis=2).mean()
    assert blue > 0.9 or shape == (50, 50), blue  # a square keeps its stripes


def test_a_long_strip_is_cut_before_the_resize() -> None:
    strip = stripes(4, 50_000)  # open_clip would resize it to 224 x 2,800,000
    out = resized(strip, 224, SHORTEST)
    assert out.shape == (224, 224, 3) and np.all(out == (0, 0, 255))
    assert MAX_ASPECT * 4 < 50_000


def test_squash_of_an_image_of_the_size_is_the_image() -> None:
    img = drawn(["a blue square"], 3)[0]
    assert np.array_equal(resized(img, 64, "squash"), img)
    assert resized(stripes(30, 90), 64, "squash").shape == (64, 64, 3)


def test_scaling_is_per_channel_in_channels_first_order() -> None:
    img = np.zeros((2, 3, 3), np.uint8)
    img[..., 0], img[..., 1], img[..., 2] = 255, 0, 51
    x = normalised([img, img], (0.5, 0.0, 0.1), (0.5, 1.0, 0.2))
    assert x.shape == (2, 3, 2, 3) and x.dtype == np.float32
    assert np.allclose(x[:, 0], 1.0) and np.allclose(x[:, 1], 0.0) and np.allclose(x[:, 2], 0.5)


def test_the_recall_recipe_on_pairs_of_files(
    model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """tools/clip_recall.py, the check a user runs on their own pairs before turning CLIP on."""
    rng = random.Random(11)
    lines = []
    for n, caption in enumerate(synth.CLASSES):
        png = tmp_path / f"{n}.png"
        Image.fromarray(tiny.draw([caption], rng)[0]).save(png)
        lines.append(f"{png.name}\t{caption}")
    (tmp_path / "pairs.tsv").write_text("\n".join(lines) + "\n")
    argv = ["--model", str(model_dir), "--pairs", str(tmp_path / "pairs.tsv")]
    assert load_tool("clip_recall").main(argv) == 0
    printed = dict(line.split(": ", 1) for line in capsys.readouterr().out.splitlines())
    assert printed["pairs"] == "22" and float(printed["recall_at_1"]) >= 0.9
    assert float(printed["matched_median"]) > float(printed["unmatched_p90"])
    assert printed["suggested"].startswith("media.clip.vector_floor")
