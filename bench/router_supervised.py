"""A generic supervised store router for `bench router`: what an engineer with the tune half's
labelled questions and an afternoon would fit, with no pocketd code and no pocketd features.

Each question is hashed word and character n-grams of its text (`grams`: Latin words and word
pairs, each word's character trigrams, and Chinese characters and character pairs) into `DIM`
buckets, a binary bag whose rows have unit length. One logistic regression per store (the
label: the store is in the question's gold set), with scikit-learn's loss (the summed log
loss plus the squared weights over 2C; the bias is not penalised), fitted exactly (Newton's
method). A question searches every store whose probability is at least the threshold; no store
when none is (small talk needs none). The regularisation C (`CS`, 1 to 1e8 in half decades;
scikit-learn's default is 1) and the threshold (`THRESHOLDS`, 1e-9 to 0.9, log-spaced) are
chosen together on the tune half alone, by cross-validation over whole templates (`choose`):
the pair whose held-out plans reach the target coverage at the lowest store cost. No report
set is read for it.

The tune half's questions are separable in the hashed space, so as C grows the fit tends to
the hard-margin one: its probabilities shrink towards 0 and 1 and the threshold that keeps the
coverage falls with them (about 1e-3 at C = 1e3, 1e-5 at 1e6). The grids reach far enough that
the held-out store cost has flattened before their edges; `Choice.by_c` keeps each C's best
pair, so the run shows it.
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
# The regularisation grid (C = 1/penalty) and the thresholds, both log-spaced.
CS = tuple(float(f"{c:.3g}") for c in np.geomspace(1.0, 1e8, 17))
THRESHOLDS = tuple(float(f"{t:.3g}") for t in np.geomspace(1e-9, 0.9, 109))
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
        self._fits = _Fits(texts, labels)
        self._columns = self._fits.columns
        self._w, self._b = self._fits.weights(c)

    def probabilities(self, texts: Sequence[str]) -> Matrix:
        """(len(texts), len(STORES)): each store's probability of being needed."""
        x = _matrix(self._columns, [hashed(t) for t in texts])
        return _sigmoid(x @ self._w + self._b)


def _matrix(columns: dict[int, int], rows: Sequence[frozenset[int]]) -> Matrix:
    x = np.zeros((len(rows), len(columns)))
    for i, row in enumerate(rows):
        cols = [columns[b] for b in row if b in columns]
        if cols:
            x[i, cols] = 1.0 / np.sqrt(len(row))  # the unit row of the whole bag
    return x


def _sigmoid(z: Matrix) -> Matrix:
    out: Matrix = 1.0 / (1.0 + np.exp(-z))
    return out


class _Fits:
    """The fits of one training set for any C: minimise sum(log loss) + |w|² / (2C) for each
    store (the bias unpenalised), exactly. The optimal w lies in the span of the rows of `x`, so
    the fit runs by Newton's method on the rows' coordinates in that span (at most one per
    question) and maps the weights back; the span does not depend on C and is computed once."""

    def __init__(self, texts: Sequence[str], labels: Sequence[Sequence[str]]) -> None:
        rows = [hashed(t) for t in texts]
        # Only the buckets the training texts fill can get a weight: the others stay 0.
        self.columns = {b: i for i, b in enumerate(sorted(set().union(*rows)))}
        self._x = _matrix(self.columns, rows)
        self._y = np.array([[s in set(gold) for s in STORES] for gold in labels], dtype=np.float64)
        s, u = np.linalg.eigh(self._x @ self._x.T)
        keep = s > 1e-9 * max(float(s.max()), 1.0)
        self._rank = int(keep.sum())
        self._back = u[:, keep] / np.sqrt(s[keep])
        # z zᵀ = x xᵀ (+ 1 for the bias)
        self._z = np.hstack([u[:, keep] * np.sqrt(s[keep]), np.ones((len(rows), 1))])

    def weights(self, c: float) -> tuple[Matrix, Matrix]:
        penalty = np.r_[np.full(self._rank, 1.0 / c), 1e-9]
        v = np.stack(
            [_newton(self._z, self._y[:, j], penalty) for j in range(self._y.shape[1])], axis=1
        )
        w = self._x.T @ self._back @ v[:-1]  # x w = z[:, :-1] v[:-1], |w| = |v[:-1]|
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


def held_out_probabilities(
    tune: Sequence[Question], folds: int, cs: Sequence[float] = (1.0,)
) -> dict[float, Matrix]:
    """For each C of `cs`, each tune question's probabilities from a fit that never saw its
    template."""
    templates = sorted({q.template for q in tune})
    order = np.random.default_rng(0).permutation(len(templates))
    fold = {templates[i]: j % folds for j, i in enumerate(order)}
    out = {c: np.zeros((len(tune), len(STORES))) for c in cs}
    for f in range(folds):
        train = [q for q in tune if fold[q.template] != f]
        held = [i for i, q in enumerate(tune) if fold[q.template] == f]
        fits = _Fits([q.text for q in train], [q.stores for q in train])
        x = _matrix(fits.columns, [hashed(tune[i].text) for i in held])
        for c in cs:
            w, b = fits.weights(c)
            out[c][held] = _sigmoid(x @ w + b)
    return out


@dataclass(frozen=True)
class Choice:
    c: float
    threshold: float
    coverage: float  # held out, on the tune half
    store_cost: float
    # Each C's best (C, threshold, coverage, store cost) under the same rule: where the held-out
    # store cost flattens, and whether the chosen pair sits at an edge of the grids.
    by_c: tuple[tuple[float, float, float, float], ...] = ()


def choose(
    tune: Sequence[Question],
    target: float,
    folds: int = 5,
    cs: Sequence[float] = CS,
    thresholds: Sequence[float] = THRESHOLDS,
) -> Choice:
    """The regularisation and threshold whose held-out plans (`folds` folds of whole templates
    of `tune`) reach `target` coverage at the lowest store cost; when none does, the one that
    covers most.

    On the full bench's tune half (325 questions, 17 C × 5 folds × 4 stores of small Newton
    solves) this takes about 8 s with one BLAS thread, but about 60 s on a loaded 2-core machine
    with OpenBLAS's default threads, which contend on solves this small. The threads are left as
    they are: limiting them for the process would touch pocketd's timings in the same run, and
    threadpoolctl (to limit them inside the fit only) is not installed."""
    options = []
    by_c = []
    for c, probs in held_out_probabilities(tune, folds, cs).items():
        mine = []
        for t in thresholds:
            cov, cost = coverage_and_cost(tune, chosen(probs, t))
            mine.append((cov, cost, (c, t, cov, cost)))
        by_c.append(cheapest_reaching(mine, target))
        options += mine
    return Choice(*cheapest_reaching(options, target), by_c=tuple(by_c))
