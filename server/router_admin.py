"""`pocketd router train` and `pocketd router rollback`: the learned policy's life cycle, run
beside (or without) a server on the same data directory.

train: read the decision log's explored decisions, split them, train the MLP in numpy, report the
held-out coverage, exact match, waste and cost of `full`, `heuristic`, `learned` and `hybrid`,
export the model to ONNX, check that onnxruntime's output agrees with numpy's, and install it
(the server reloads it within `router.reload_interval_s`). rollback: make the previous model
current again.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from server.adapters.decision_log import read_log
from server.adapters.model_store import ModelStore, NoModelError, new_version, scope_of
from server.adapters.onnx_policy import OnnxPocketModel, export
from server.core.memory.costs import CostModel
from server.core.routing.inputs import LAYOUT, input_width
from server.core.routing.mlp import TrainSettings
from server.core.routing.training import Metrics, evaluate, examples, fit
from server.core.settings import Settings

MIN_EXAMPLES = 20
PARITY = 1e-4  # the largest difference allowed between onnxruntime's and numpy's probability


class TrainError(Exception):
    """Training cannot go on; the message says why and what to do."""


def models_root(data_dir: Path) -> Path:
    return data_dir / "router" / "models"


def train_model(
    settings: Settings,
    namespace: str | None,
    holdout: float,
    train_settings: TrainSettings,
    install: bool,
    say: Callable[[str], None],
) -> tuple[str, list[Metrics]]:
    """Train, report and (with `install`) install; returns the version and the held-out
    metrics."""
    data_dir = Path(settings.server.data_dir)
    log_root = data_dir / "router"
    if not log_root.is_dir():
        raise TrainError(f"no decision log in {log_root}: run the server with a routed policy")
    r, m = settings.router, settings.memory
    width = input_width(r.prefix_dim)
    say(f"reading the decision log in {log_root}")
    found, skipped = examples(read_log(log_root), width, namespace, holdout)
    train_set = [e for e in found if not e.held_out]
    test_set = [e for e in found if e.held_out]
    say(
        f"{len(found)} explored decisions ({len(train_set)} to train, {len(test_set)} held out)"
        + (f"; {skipped} without input rows of this layout passed over" if skipped else "")
    )
    if len(train_set) < MIN_EXAMPLES or not test_set:
        raise TrainError(
            f"{len(train_set)} training and {len(test_set)} held-out decisions; at least"
            f" {MIN_EXAMPLES} and 1 are needed. Explored decisions come from routed Recalls"
            f" (router.policy, or a Recall's route_policy, not full) at router.explore_share"
            f" ({r.explore_share}): send more traffic, or raise explore_share for a while"
        )
    labels = np.concatenate([e.needed for e in train_set])
    if labels.all() or not labels.any():
        raise TrainError("every candidate pocket has the same label: nothing to learn yet")
    t0 = time.monotonic()

    def progress(epoch: int, epochs: int, loss: float, valid: float) -> None:
        if epoch == 1 or epoch % 10 == 0 or epoch == epochs:
            say(f"epoch {epoch}/{epochs}: loss {loss:.4f}, validation {valid:.4f}")

    try:
        mlp = fit(train_set, train_settings, progress)
    except ValueError as e:
        raise TrainError(str(e)) from e
    say(f"trained on {len(labels)} pocket rows in {time.monotonic() - t0:.1f} s")
    version = new_version()
    data = export(mlp, LAYOUT, version)
    onnx_model = OnnxPocketModel(data, LAYOUT, width)
    sample = np.concatenate([e.rows for e in test_set])
    gap = float(np.abs(onnx_model.score(sample) - mlp.forward(sample)).max())
    if gap > PARITY:
        raise TrainError(f"the exported model differs from the trained one by {gap:.2e}")
    costs = CostModel.from_settings(m)
    metrics = evaluate(
        test_set, onnx_model.score, r.min_confidence, m.hybrid_search.candidates_per_channel, costs
    )
    if install:
        report = {
            "version": version,
            "namespace": namespace or "",
            "layout": LAYOUT,
            "inputs": width,
            "trained_rows": len(labels),
            "train_decisions": len(train_set),
            "held_out_decisions": len(test_set),
            "held_out": [vars(x) for x in metrics],
        }
        store = ModelStore(models_root(data_dir))
        store.install(version, data, report, namespace)
        say(f"installed {version} in {store.root / scope_of(namespace)}")
    return version, metrics


def table(metrics: list[Metrics]) -> str:
    rows = [f"{'policy':<10} {'coverage':>9} {'exact':>7} {'waste':>7} {'cost':>7}"]
    rows += [
        f"{x.policy:<10} {x.coverage:>9.3f} {x.exact_match:>7.3f} {x.waste:>7.3f}"
        f" {x.cost_share:>7.3f}"
        for x in metrics
    ]
    return "\n".join(rows)


def train_main(
    settings: Settings, namespace: str | None, holdout: float, epochs: int, seed: int, dry: bool
) -> int:
    def say(msg: str) -> None:
        print(f"pocketd router train: {msg}", file=sys.stderr, flush=True)

    try:
        _, metrics = train_model(
            settings, namespace, holdout, TrainSettings(epochs=epochs, seed=seed), not dry, say
        )
    except TrainError as e:
        print(f"pocketd: {e}", file=sys.stderr)
        return 2
    print(f"held out ({metrics[0].decisions} decisions):")
    print(table(metrics))
    return 0


def rollback_main(data_dir: Path, namespace: str | None) -> int:
    try:
        now, was = ModelStore(models_root(data_dir)).rollback(namespace)
    except NoModelError as e:
        print(f"pocketd: {e}", file=sys.stderr)
        return 2
    print(f"rolled back: {now} is current again (was {was}; a second rollback undoes this)")
    return 0
