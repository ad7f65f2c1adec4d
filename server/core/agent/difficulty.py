"""The learned part of the difficulty classifier: an MLP over the built-in encoder's vector and
the rules' cues, trained in numpy (`pocketd models train-difficulty`) on the shipped labelled
prompts (`server/prompts/difficulty.jsonl`, English and Chinese).

Three tiers are ordered (simple < medium < complex), so the model is two binary heads of the
router's `Mlp`: P(at least medium) and P(complex). Their probabilities combine into
P(simple) = 1 − a, P(complex) = min(b, a), P(medium) = a − P(complex), which always add up to 1.
The held-out split is by template, so no held-out prompt is a slot variant of a training one.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from server.core.agent.tiers import _COMPLEX, _SIMPLE, _STEPS
from server.core.routing.mlp import Mlp, TrainSettings, train

LAYOUT = 1001  # the input layout of a difficulty model (another family than the router's)
F32 = npt.NDArray[np.float32]
Encode = Callable[[list[str]], F32]
Score = Callable[[F32], F32]


def cues(text: str) -> list[float]:
    return [
        float(bool(_SIMPLE.search(text))),
        float(bool(_COMPLEX.search(text))),
        float(bool(_STEPS.search(text))),
        min(len(text), 2000) / 2000.0,
    ]


def rows(texts: Sequence[str], encode: Encode) -> F32:
    vecs = np.asarray(encode(list(texts)), np.float32)
    extra = np.array([cues(t) for t in texts], np.float32)
    return np.concatenate([vecs, extra], axis=1)


@dataclass(frozen=True)
class Example:
    text: str
    tier: str
    template: str


def load(path: Path) -> list[Example]:
    out = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
            out.append(Example(d["text"], d["tier"], d.get("template", f"line-{n}")))
        except (ValueError, KeyError) as e:
            raise ValueError(f"{path}:{n}: not a labelled prompt ({e})") from e
        if out[-1].tier not in ("simple", "medium", "complex"):
            raise ValueError(f"{path}:{n}: tier {out[-1].tier!r} is not simple/medium/complex")
    return out


def held_out(template: str, share: float) -> bool:
    h = int.from_bytes(hashlib.blake2b(template.encode(), digest_size=8).digest(), "big")
    return h / 2**64 < share


@dataclass(frozen=True)
class Heads:
    at_least_medium: Mlp
    complex: Mlp


def fit(examples: Sequence[Example], encode: Encode, s: TrainSettings) -> Heads:
    x = rows([e.text for e in examples], encode)
    rank = np.array([("simple", "medium", "complex").index(e.tier) for e in examples])
    ids = {t: i for i, t in enumerate(sorted({e.template for e in examples}))}
    groups = np.array([ids[e.template] for e in examples])
    return Heads(train(x, rank >= 1, s, None, groups), train(x, rank >= 2, s, None, groups))


def combine(a: F32, b: F32) -> list[dict[str, float]]:
    out = []
    for pa, pb in zip(a.tolist(), b.tolist(), strict=True):
        pc = min(pb, pa)
        out.append({"simple": 1.0 - pa, "medium": pa - pc, "complex": pc})
    return out


def accuracy(examples: Sequence[Example], probabilities: list[dict[str, float]]) -> float:
    if not examples:
        return 0.0
    right = sum(
        1
        for e, p in zip(examples, probabilities, strict=True)
        if max(p, key=lambda t: p[t]) == e.tier
    )
    return right / len(examples)


class LearnedDifficulty:
    """A `DifficultyModel` over two scorers (the exported heads) and the encoder."""

    def __init__(self, encode: Encode, at_least_medium: Score, complex_: Score) -> None:
        self._encode = encode
        self._a = at_least_medium
        self._b = complex_

    def probabilities(self, text: str) -> dict[str, float]:
        x = rows([text], self._encode)
        return combine(self._a(x), self._b(x))[0]
