"""What a user's input says (issue 32): a standing preference, a fact about the user, a correction
of something said before, or none of these, read by a small model over the text encoder's vector.

Every input the user gives a Step is kept (its session's hot memory, as an episode); what this
reads decides only its kind: a preference joins the user's profile (kind preference), a fact is
kept as one (kind fact), a correction as the kind it corrects (the one of preference and fact the
model finds likelier), so the writer's supersession finds the older value of the same slot. No
word list decides: "Please use the warranty this time" shares its words with a preference and is
none.

The model (`SaidHead`) is a multinomial logistic regression on two things an input has: the
encoder's unit vector (its meaning, scaled by `VECTOR_SCALE`) and its words and word pairs
(Chinese characters and their pairs), hashed into `BUCKETS` buckets and normalised
(`GRAM_WEIGHT`): the vector alone reads "I'd prefer a refund" and "I'd prefer email from now on"
alike, the words alone miss every new phrasing; fitted together on the labelled set, each
corrects the other (held out: 0.77 accuracy with the vector alone, 0.86 with both). Per label,
the least probability at which it is believed (`floors`: on the probabilities of five heads
each fitted without one fifth of the examples, the least at which what those heads call a
preference is one at least 95 % of the time on the fifth they did not see; the shipped head,
fitted on every example, uses them, which is an estimate, not a guarantee);
below its floor an input reads as `OTHER`. The vector is the one the Step's Recall encoded for
the input (the engine's query cache), so reading costs a hash of its words and one product.
`fit` trains it (`pocketd models train-said`); the head for the built-in encoder ships with
pocketd.
"""

from __future__ import annotations

import enum
import itertools
import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt


class Said(enum.Enum):
    PREFERENCE = "preference"
    FACT = "fact"
    CORRECTION = "correction"
    OTHER = "other"


LABELS = (Said.PREFERENCE, Said.FACT, Said.CORRECTION, Said.OTHER)
Matrix = npt.NDArray[np.float32]
BUCKETS = 4096
VECTOR_SCALE = 8.0
GRAM_WEIGHT = 8.0
CORRECTS_PREFERENCE = 0.2
_TOKEN = re.compile(r"[a-z0-9']+|[\u3400-\u9fff]")


def grams(text: str) -> set[str]:
    """The words (Latin letters and digits; each Chinese character) and adjacent pairs."""
    toks = _TOKEN.findall(text.lower())
    return {*toks, *(f"{a} {b}" for a, b in itertools.pairwise(toks))}


def features(texts: Sequence[str], vectors: Matrix) -> Matrix:
    """Each text's row: its vector × `VECTOR_SCALE`, then its hashed grams (a unit row ×
    `GRAM_WEIGHT`)."""
    hashed = np.zeros((len(texts), BUCKETS), dtype=np.float32)
    for i, t in enumerate(texts):
        for g in grams(t):
            hashed[i, zlib.crc32(g.encode()) % BUCKETS] = 1.0
        n = float(np.linalg.norm(hashed[i]))
        if n:
            hashed[i] *= GRAM_WEIGHT / n
    v = np.asarray(vectors, dtype=np.float32).reshape(len(texts), -1)
    out: Matrix = np.hstack([v * VECTOR_SCALE, hashed])
    return out


@dataclass(frozen=True)
class Reading:
    said: Said
    p: float  # the probability of `said` (of the likeliest label, for OTHER by floor)
    probs: tuple[float, ...]  # by `LABELS`

    @property
    def likeliest(self) -> Said:
        """The likeliest label, whatever its floor."""
        return LABELS[max(range(len(LABELS)), key=lambda i: self.probs[i])]

    def kept_as_preference(self) -> bool:
        """A correction keeps the kind it corrects: a preference's when the head reads a
        preference in it at least `CORRECTS_PREFERENCE` and more than a fact, else a fact's."""
        if self.said == Said.CORRECTION:
            return self.probs[0] >= max(self.probs[1], CORRECTS_PREFERENCE)
        return self.said == Said.PREFERENCE


@dataclass(frozen=True)
class SaidHead:
    weights: Matrix  # (dim + BUCKETS, len(LABELS)): the vector's rows, then the grams'

    bias: Matrix  # (len(LABELS),)
    floors: Matrix  # (len(LABELS),): the least probability a label is believed at
    space: str  # the encoder space it was fitted in

    def __post_init__(self) -> None:
        n = len(LABELS)
        if self.weights.ndim != 2 or self.weights.shape[1] != n:
            raise ValueError(f"a said head has {n} weight columns, not {self.weights.shape}")
        if self.bias.shape != (n,) or self.floors.shape != (n,):
            raise ValueError(f"a said head has {n} biases and floors")

    @property
    def dim(self) -> int:
        """The encoder's dimension."""
        return int(self.weights.shape[0]) - BUCKETS

    def probabilities(self, rows: Matrix) -> Matrix:
        """Per `features` row, the probability of each label."""
        z = rows @ self.weights + self.bias
        z -= z.max(axis=1, keepdims=True)
        e = np.exp(z)
        out: Matrix = (e / e.sum(axis=1, keepdims=True)).astype(np.float32)
        return out

    def read(self, text: str, vector: Sequence[float] | Matrix) -> Reading:
        """What `text`, whose vector is `vector`, says."""
        probs = self.probabilities(features([text], np.asarray(vector, dtype=np.float32)))[0]
        best = int(probs.argmax())
        said = believed(probs[None, :], self.floors)[0]
        return Reading(said, float(probs[best]), tuple(float(p) for p in probs))


def believed(probs: Matrix, floors: Matrix) -> list[Said]:
    """Per row of probabilities (by `LABELS`), the likeliest label if it reaches its floor,
    else OTHER."""
    best = probs.argmax(axis=1)
    return [
        LABELS[int(b)] if probs[i, int(b)] >= floors[int(b)] else Said.OTHER
        for i, b in enumerate(best)
    ]


def precision_recall(
    said: Sequence[Said], truth: Sequence[Said], label: Said
) -> tuple[float | None, float]:
    """Of what was read as `label`, the share that is (None when nothing was); of what is,
    the share read so."""
    called = [t for s, t in zip(said, truth, strict=True) if s == label]
    real = [s for s, t in zip(said, truth, strict=True) if t == label]
    precision = sum(t == label for t in called) / len(called) if called else None
    return precision, sum(s == label for s in real) / len(real) if real else 0.0


@dataclass(frozen=True)
class FitSettings:
    l2: float = 1e-4
    steps: int = 1500
    rate: float = 0.5


def fit(rows: Matrix, labels: Sequence[Said], space: str, s: FitSettings | None = None) -> SaidHead:
    """A multinomial logistic regression on `features` rows by full-batch gradient descent
    (deterministic), with every floor 0 (`floors_for` finds them). Classes are weighted to count
    alike."""
    s = s or FitSettings()
    x = np.asarray(rows, dtype=np.float64)
    y = np.array([LABELS.index(lab) for lab in labels])
    n, d = x.shape
    k = len(LABELS)
    onehot = np.eye(k)[y]
    counts = onehot.sum(axis=0)
    weight = (n / (k * np.maximum(counts, 1)))[y][:, None]
    w, b = np.zeros((d, k)), np.zeros(k)
    for _ in range(s.steps):
        z = x @ w + b
        z -= z.max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        g = (p - onehot) * weight / n
        w -= s.rate * (x.T @ g + s.l2 * w)
        b -= s.rate * g.sum(axis=0)
    zeros = np.zeros(k, dtype=np.float32)
    return SaidHead(w.astype(np.float32), b.astype(np.float32), zeros, space)


def floors_for(probs: Matrix, labels: Sequence[Said], precision: float = 0.95) -> Matrix:
    """Per label (but OTHER), the least floor at which what a head calls that label is that
    label at least `precision` of the time, given its probabilities on examples it was not
    fitted on (`probs`, by `LABELS`); a label it never reaches that precision for gets a floor
    of 1 (never believed)."""
    best = probs.argmax(axis=1)
    truth = np.array([LABELS.index(lab) for lab in labels])
    floors = np.zeros(len(LABELS), dtype=np.float32)
    for i, lab in enumerate(LABELS):
        if lab == Said.OTHER:
            continue
        called = np.nonzero(best == i)[0]
        floors[i] = 1.0
        for f in sorted({float(probs[j, i]) for j in called}):
            at = called[probs[called, i] >= f]
            if len(at) and float((truth[at] == i).mean()) >= precision:
                floors[i] = f
                break
    return floors


def with_floors(head: SaidHead, floors: Matrix) -> SaidHead:
    return SaidHead(head.weights, head.bias, np.asarray(floors, dtype=np.float32), head.space)
