"""The learned policy's pieces: the numpy MLP learns, its ONNX export agrees with it, the model
store installs and rolls back atomically, and the watcher reloads (or keeps the old model)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from server.adapters.model_store import ModelStore, ModelWatcher, NoModelError, scope_of
from server.adapters.onnx_policy import ModelError, OnnxPocketModel, export
from server.core.routing.mlp import Mlp, TrainSettings, train
from tests.conftest import wait_for

WIDTH = 24


def fitted(seed: int = 0, epochs: int = 30) -> tuple[Mlp, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((3000, WIDTH)).astype(np.float32) * 3 + 1
    y = (x[:, 0] * x[:, 1] + x[:, 2]) > 1.0  # not linear: the hidden layers must work
    return train(x, y, TrainSettings(epochs=epochs, seed=seed)), x, y


def test_the_mlp_learns_a_nonlinear_rule() -> None:
    mlp, x, y = fitted()
    assert ((mlp.forward(x) > 0.5) == y).mean() > 0.9


def test_training_refuses_labels_of_one_kind() -> None:
    x = np.zeros((50, 3), np.float32)
    with pytest.raises(ValueError, match="both kinds"):
        train(x, np.zeros(50, bool), TrainSettings())


def test_the_onnx_export_agrees_with_the_training_model() -> None:
    mlp, x, _ = fitted(seed=1, epochs=5)
    model = OnnxPocketModel(export(mlp, 7, "v1"), 7, WIDTH)
    assert model.version == "v1"
    got, want = model.score(x), mlp.forward(x)
    assert got.shape == want.shape == (len(x),)
    np.testing.assert_allclose(got, want, atol=1e-5)


def test_a_model_of_another_layout_or_width_is_refused() -> None:
    mlp, _, _ = fitted(epochs=1)
    data = export(mlp, 7, "v1")
    with pytest.raises(ModelError, match="layout 7 with 24 inputs"):
        OnnxPocketModel(data, 8, WIDTH)
    with pytest.raises(ModelError, match="retrain"):
        OnnxPocketModel(data, 7, WIDTH + 1)
    with pytest.raises(ModelError, match="onnxruntime can load"):
        OnnxPocketModel(b"not a model", 7, WIDTH)


def test_install_keeps_current_and_previous_and_rollback_swaps_them(tmp_path: Path) -> None:
    store = ModelStore(tmp_path)
    with pytest.raises(NoModelError, match="none is installed"):
        store.rollback(None)
    for v in ("v1", "v2", "v3"):
        store.install(v, v.encode(), {"version": v}, None)
    assert store.pointer(None) == {"current": "v3", "previous": "v2", "namespace": ""}
    scope = tmp_path / scope_of(None)
    assert sorted(p.name for p in scope.iterdir() if p.is_dir()) == ["v2", "v3"]  # v1 pruned
    assert store.rollback(None) == ("v2", "v3")
    assert store.model_bytes(None, "v2") == b"v2"
    assert store.rollback(None) == ("v3", "v2")  # a second rollback undoes the first
    store.install("n1", b"n1", {}, "tenant")
    assert store.pointer("tenant") == {"current": "n1", "previous": None, "namespace": "tenant"}
    with pytest.raises(NoModelError, match="no previous model"):
        store.rollback("tenant")
    assert store.report(None, "v3") == {"version": "v3"}


def test_the_watcher_reloads_a_new_model_and_keeps_the_old_one_for_a_bad_one(
    tmp_path: Path,
) -> None:
    mlp, _, _ = fitted(epochs=1)
    store = ModelStore(tmp_path)
    store.install("v1", export(mlp, 1, "v1"), {}, None)

    def load(data: bytes) -> OnnxPocketModel:
        return OnnxPocketModel(data, 1, WIDTH)

    watcher = ModelWatcher(store, load, 0.05)
    try:
        m = watcher.model("anyone")
        assert m is not None and m.version == "v1"  # the global model serves every namespace
        store.install("t1", export(mlp, 1, "t1"), {}, "tenant")
        wait_for(lambda: (m := watcher.model("tenant")) is not None and m.version == "t1")
        assert watcher.model("other").version == "v1"  # type: ignore[union-attr]
        store.install("v2", b"garbage", {}, None)  # does not load: v1 stays
        scope = tmp_path / scope_of(None)
        wait_for(lambda: json.loads((scope / "CURRENT").read_text())["current"] == "v2")
        watcher.reload()
        assert watcher.model("anyone").version == "v1"  # type: ignore[union-attr]
        store.install("v3", export(mlp, 1, "v3"), {}, None)
        wait_for(lambda: watcher.model("anyone").version == "v3")  # type: ignore[union-attr]
    finally:
        watcher.close()
