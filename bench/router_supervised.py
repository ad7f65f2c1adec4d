"""A generic supervised store router for `bench router`: what an engineer with the tune half's
labelled questions and an afternoon would fit, with no pocketd code and no pocketd features.

Each question is hashed word and character n-grams of its text (`grams`: Latin words and word
pairs, each word's character trigrams, and Chinese characters and character pairs) into `DIM`
buckets, a binary bag whose rows have unit length. One logistic regression per store (the
label: the store is in the question's gold set), with scikit-learn's loss (the summed log
loss plus the squared weights over 2C; the bias is not penalised), fitted exactly (Newton's
method). A question searches every store whose probability is at least the threshold; no store
when none is (small talk needs none). The threshold is chosen on the tune half
with the regularisation C (`CS`; scikit-learn's default is 1) by cross-validation over whole
templates (`choose`): the pair whose held-out plans reach the target coverage at the lowest
store cost.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise

import numpy as np
import numpy.typing as npt

from bench.routing_world import STORES, Question, cheapest_reaching, coverage_and_cost

DIM = 1 << 20
NEWTON_STEPS = 50
CS = (1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0)  # the regularisation grid (C = 1/penalty)
THRESHOLDS = tuple(float(f"{t:.3g}") for t in np.geomspace(0.002, 0.9, 48))
_LATIN = re.compile(r"[a-z0-9']+")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]+")

Matrix = npt.NDArray[np.float64]


def grams(text: str) -> set[str]:
    """The question's word and character n-grams: Latin words, word pairs and each word's
    character trigrams (with its edges marked); Chinese characters and character pairs."""
    low = text.lower()
    words = _LATIN.findall(low)
    out = {f"w:{w}" for w in words} | {f"w2:{a} {b}" for a, b in pairwise(words)}
    for w in words:
        padded = f"<{w}>"
        out |= {f"c3:{padded[i : i + 3]}" for i in range(len(padded) - 2)}
    for run in _CJK.findall(low):
        out |= {f"z:{ch}" for ch in run} | {f"z2:{run[i : i + 2]}" for i in range(len(run) - 1)}
    return out


def bucket(gram: str) -> int:
    """A gram's bucket: a stable hash (Python's own `hash` of a str changes between runs)."""
    return int.from_bytes(hashlib.blake2b(gram.encode(), digest_size=8).digest(), "little") % DIM


@lru_cache(maxsize=65536)
def hashed(text: str) -> frozenset[int]:
    return frozenset(bucket(g) for g in grams(text))


class StoreClassifier:
    """One logistic regression per store over hashed n-grams."""

    def __init__(
        self, texts: Sequence[str], labels: Sequence[Sequence[str]], c: float = 1.0
    ) -> None:
        rows = [hashed(t) for t in texts]
        # Only the buckets the training texts fill can get a weight: the others stay 0.
        self._columns = {b: i for i, b in enumerate(sorted(set().union(*rows)))}
        x = self._matrix(rows)
        y = np.array([[s in set(gold) for s in STORES] for gold in labels], dtype=np.float64)
        self._w, self._b = _fit(x, y, c)

    def _matrix(self, rows: Sequence[frozenset[int]]) -> Matrix:
        x = np.zeros((len(rows), len(self._columns)))
        for i, row in enumerate(rows):
            cols = [self._columns[b] for b in row if b in self._columns]
            if cols:
                x[i, cols] = 1.0 / np.sqrt(len(row))  # the unit row of the whole bag
        return x

    def probabilities(self, texts: Sequence[str]) -> Matrix:
        """(len(texts), len(STORES)): each store's probability of being needed."""
        x = self._matrix([hashed(t) for t in texts])
        return _sigmoid(x @ self._w + self._b)


def _sigmoid(z: Matrix) -> Matrix:
    out: Matrix = 1.0 / (1.0 + np.exp(-z))
    return out


def _fit(x: Matrix, y: Matrix, c: float) -> tuple[Matrix, Matrix]:
    """Minimise sum(log loss) + |w|² / (2c) for each column of `y` (the bias unpenalised), exactly:
    the optimal w lies in the span of the rows of `x`, so the fit runs by Newton's method on the
    rows' coordinates in that span (at most one per question) and maps the weights back."""
    s, u = np.linalg.eigh(x @ x.T)
    keep = s > 1e-9 * max(float(s.max()), 1.0)
    z = np.hstack([u[:, keep] * np.sqrt(s[keep]), np.ones((len(x), 1))])  # z zᵀ = x xᵀ (+ 1)
    penalty = np.r_[np.full(int(keep.sum()), 1.0 / c), 1e-9]
    v = np.stack([_newton(z, y[:, j], penalty) for j in range(y.shape[1])], axis=1)
    w = x.T @ (u[:, keep] / np.sqrt(s[keep])) @ v[:-1]  # x w = z[:, :-1] v[:-1], |w| = |v[:-1]|
    return w, v[-1]


def _newton(z: Matrix, y: npt.NDArray[np.float64], penalty: Matrix) -> Matrix:
    theta = np.zeros(z.shape[1])
    for _ in range(NEWTON_STEPS):
        p = _sigmoid(z @ theta)
        grad = z.T @ (p - y) + penalty * theta
        hess = (z.T * (p * (1.0 - p))) @ z + np.diag(penalty)
        step = np.linalg.solve(hess, grad)
        theta -= step
        if float(np.abs(step).max()) < 1e-9:
            break
    return theta


def chosen(probabilities: Matrix, threshold: float) -> list[set[str]]:
    """Each question's stores: those at or above `threshold`."""
    return [
        {s for s, p in zip(STORES, row, strict=True) if p >= threshold} for row in probabilities
    ]


def held_out_probabilities(tune: Sequence[Question], folds: int, c: float = 1.0) -> Matrix:
    """Each tune question's probabilities from a fit that never saw its template."""
    templates = sorted({q.template for q in tune})
    order = np.random.default_rng(0).permutation(len(templates))
    fold = {templates[i]: j % folds for j, i in enumerate(order)}
    out = np.zeros((len(tune), len(STORES)))
    for f in range(folds):
        train = [q for q in tune if fold[q.template] != f]
        held = [i for i, q in enumerate(tune) if fold[q.template] == f]
        model = StoreClassifier([q.text for q in train], [q.stores for q in train], c)
        out[held] = model.probabilities([tune[i].text for i in held])
    return out


@dataclass(frozen=True)
class Choice:
    c: float
    threshold: float
    coverage: float  # held out, on the tune half
    store_cost: float


def choose(tune: Sequence[Question], target: float, folds: int = 5) -> Choice:
    """The regularisation and threshold whose held-out plans (`folds` folds of whole templates
    of `tune`) reach `target` coverage at the lowest store cost; when none does, the one that
    covers most."""
    options = []
    for c in CS:
        probs = held_out_probabilities(tune, folds, c)
        for t in THRESHOLDS:
            cov, cost = coverage_and_cost(tune, chosen(probs, t))
            options.append((cov, cost, Choice(c, t, cov, cost)))
    return cheapest_reaching(options, target)
