"""The learned policy's model (seed 003 §3.2: a few dense layers over the route features),
trained in numpy: the server's environment has no torch, and training runs there.

The model maps a pocket's input row (`inputs`) to the probability that the pocket is needed:
standardise, then dense layers with ReLU, then a sigmoid. Training minimises binary cross-entropy,
with the positives weighted by √(negatives / positives) (a missed pocket costs recall, a wasted
one only cost), by Adam on mini-batches, and keeps the weights of the epoch with the lowest loss
on a validation slice (early stopping).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

F32 = npt.NDArray[np.float32]
# (epoch, epochs, training loss, validation loss)
Progress = Callable[[int, int, float, float], None]


@dataclass(frozen=True)
class Mlp:
    mean: F32  # (inputs,)
    scale: F32  # (inputs,): the standard deviation, 1 where it is 0
    weights: tuple[F32, ...]  # (in, out) per layer
    biases: tuple[F32, ...]  # (out,) per layer

    @property
    def inputs(self) -> int:
        return int(self.mean.shape[0])

    def forward(self, x: F32) -> F32:
        """Each row's probability, shape (rows,)."""
        h = (np.asarray(x, np.float32) - self.mean) / self.scale
        last = len(self.weights) - 1
        for i, (w, b) in enumerate(zip(self.weights, self.biases, strict=True)):
            h = h @ w + b
            if i < last:
                h = np.maximum(h, 0.0)
        out: F32 = (1.0 / (1.0 + np.exp(-h[:, 0]))).astype(np.float32)
        return out


@dataclass(frozen=True)
class TrainSettings:
    hidden: tuple[int, ...] = (32, 16)
    epochs: int = 80
    batch: int = 256
    learning_rate: float = 3e-3
    l2: float = 1e-4
    validation_share: float = 0.1
    patience: int = 12  # epochs without a better validation loss before stopping
    seed: int = 0


def train(
    x: F32,
    y: npt.NDArray[np.bool_],
    s: TrainSettings,
    progress: Progress | None = None,
    groups: npt.NDArray[np.integer] | None = None,
) -> Mlp:
    """Fit an `Mlp` to rows `x` with labels `y` (at least one of each class). `groups`: each
    row's group; the validation slice takes whole groups (None: each row its own)."""
    if len(x) != len(y) or len(x) < 2:
        raise ValueError(f"{len(x)} rows and {len(y)} labels: need as many, and at least 2")
    pos = int(np.count_nonzero(y))
    if pos == 0 or pos == len(y):
        raise ValueError(f"{pos} needed pockets in {len(y)} rows: need both kinds of label")
    rng = np.random.default_rng(s.seed)
    x = np.asarray(x, np.float32)
    t = y.astype(np.float32)
    g = np.arange(len(x)) if groups is None else np.asarray(groups)
    names = rng.permutation(np.unique(g))
    n_valid = max(1, int(len(names) * s.validation_share)) if len(names) >= 20 else 0
    in_valid = np.isin(g, names[:n_valid])
    valid, fit = np.flatnonzero(in_valid), rng.permutation(np.flatnonzero(~in_valid))
    mean = x[fit].mean(axis=0)
    std = x[fit].std(axis=0)
    scale = np.where(std > 1e-6, std, 1.0).astype(np.float32)
    z = (x - mean) / scale
    sizes = (x.shape[1], *s.hidden, 1)
    ws = [
        (rng.standard_normal((a, b)) * math.sqrt(2.0 / a)).astype(np.float32)
        for a, b in itertools.pairwise(sizes)
    ]
    bs = [np.zeros(b, np.float32) for b in sizes[1:]]
    pos_fit = max(float(t[fit].sum()), 1.0)
    pos_weight = math.sqrt(max(len(fit) - pos_fit, 1.0) / pos_fit)
    adam = _Adam([*ws, *bs], s.learning_rate)
    best = (math.inf, [w.copy() for w in ws], [b.copy() for b in bs])
    stale = 0
    for epoch in range(1, s.epochs + 1):
        rng.shuffle(fit)
        for start in range(0, len(fit), s.batch):
            idx = fit[start : start + s.batch]
            grads = _gradients(z[idx], t[idx], ws, bs, pos_weight, s.l2)
            adam.step(grads)
        train_loss = _loss(z[fit], t[fit], ws, bs, pos_weight)
        valid_loss = _loss(z[valid], t[valid], ws, bs, pos_weight) if n_valid else train_loss
        if not math.isfinite(train_loss) or not math.isfinite(valid_loss):
            raise ValueError(f"training diverged at epoch {epoch} (a loss is not a number)")
        if progress is not None:
            progress(epoch, s.epochs, train_loss, valid_loss)
        if valid_loss < best[0] - 1e-5:
            best, stale = (valid_loss, [w.copy() for w in ws], [b.copy() for b in bs]), 0
        else:
            stale += 1
            if stale >= s.patience:
                break
    return Mlp(mean.astype(np.float32), scale, tuple(best[1]), tuple(best[2]))


def _layers(z: F32, ws: list[F32], bs: list[F32]) -> tuple[list[F32], F32]:
    """Each layer's input, and the output logits."""
    acts = [z]
    h = z
    for i, (w, b) in enumerate(zip(ws, bs, strict=True)):
        h = h @ w + b
        if i < len(ws) - 1:
            h = np.maximum(h, 0.0)
            acts.append(h)
    return acts, h[:, 0]


def _loss(z: F32, t: F32, ws: list[F32], bs: list[F32], pos_weight: float) -> float:
    if len(z) == 0:
        return 0.0
    _, logit = _layers(z, ws, bs)
    # log(1 + e^-x) and log(1 + e^x), stably
    loss = pos_weight * t * np.logaddexp(0.0, -logit) + (1 - t) * np.logaddexp(0.0, logit)
    return float(loss.mean())


def _gradients(
    z: F32, t: F32, ws: list[F32], bs: list[F32], pos_weight: float, l2: float
) -> list[F32]:
    acts, logit = _layers(z, ws, bs)
    p = 1.0 / (1.0 + np.exp(-logit))
    # d loss / d logit of the weighted cross-entropy
    g = ((pos_weight * t + 1 - t) * p - pos_weight * t) / len(z)
    delta = g[:, None].astype(np.float32)
    gw: list[F32] = [np.empty(0, np.float32)] * len(ws)
    gb: list[F32] = [np.empty(0, np.float32)] * len(bs)
    for i in range(len(ws) - 1, -1, -1):
        gw[i] = acts[i].T @ delta + l2 * ws[i]
        gb[i] = delta.sum(axis=0)
        if i > 0:
            delta = (delta @ ws[i].T) * (acts[i] > 0)
    return [*gw, *gb]


class _Adam:
    """Adam over a list of arrays, updated in place."""

    def __init__(self, params: list[F32], lr: float) -> None:
        self._p = params
        self._m = [np.zeros_like(p) for p in params]
        self._v = [np.zeros_like(p) for p in params]
        self._lr = lr
        self._t = 0

    def step(self, grads: list[F32]) -> None:
        self._t += 1
        b1, b2 = 0.9, 0.999
        c1, c2 = 1 - b1**self._t, 1 - b2**self._t
        for p, g, m, v in zip(self._p, grads, self._m, self._v, strict=True):
            m *= b1
            m += (1 - b1) * g
            v *= b2
            v += (1 - b2) * g * g
            p -= self._lr * (m / c1) / (np.sqrt(v / c2) + 1e-8)
