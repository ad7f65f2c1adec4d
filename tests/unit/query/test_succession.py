"""The order of a slot's values (server/core/query/succession.py), over fake columns and a fake
store whose vectors and texts the test chooses: the newer value of a slot takes the older's place
when it is relevant enough, an older memory yields once (to its closest newer neighbour), two
statements that both hold are no slot, and a question about the past is left as it is."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from server.core.memory.model import Kind, Record
from server.core.query.succession import BELOW, Succession
from server.core.settings import SupersedeSettings

F32 = npt.NDArray[np.float32]
DEFAULTS = SupersedeSettings()


def _unit(v: list[float]) -> F32:
    a = np.asarray(v, dtype=np.float32)
    return a / np.linalg.norm(a)


def _at_cosine(base: F32, other: F32, cos: float) -> F32:
    """A unit vector at cosine `cos` to `base`, in the plane of `base` and `other`."""
    o = other - (other @ base) * base
    o /= np.linalg.norm(o)
    return (cos * base + np.sqrt(1 - cos**2) * o).astype(np.float32)


class FakeStore:
    def __init__(self, vectors: dict[int, F32], texts: dict[int, str]) -> None:
        self.vectors, self.texts = vectors, texts

    def get_vectors(self, keys: list[int]) -> dict[int, F32]:
        return {k: self.vectors[k] for k in keys if k in self.vectors}

    def get(self, keys: list[int]) -> dict[int, Record]:
        return {
            k: Record(memory_id=f"m{k}", namespace="ns", kind=Kind.FACT, text=self.texts[k], key=k)
            for k in keys
            if k in self.texts
        }


def succession(
    born: list[float],
    vectors: list[F32],
    texts: list[str] | None = None,
    kinds: list[Kind] | None = None,
    sup: SupersedeSettings = DEFAULTS,
) -> Succession:
    n = len(born)
    cols = SimpleNamespace(
        kind=np.array([int(k) for k in (kinds or [Kind.FACT] * n)], dtype=np.int8),
        obsolete=np.zeros(n, np.bool_),
        created=np.array(born, dtype=np.float64),
    )
    store = FakeStore(
        dict(enumerate(vectors)),
        dict(enumerate(texts or [f"statement {chr(97 + k)}" for k in range(n)])),
    )
    src: Any = SimpleNamespace(
        settings=None, columns=cols, hot=None, vectors=None, keywords=None, store=store, costs=None
    )
    return Succession(src, sup)


def adjust(s: Succession, final: list[float], asks_past: bool = False) -> F32:
    run: Any = SimpleNamespace(
        asks_past=asks_past, q=SimpleNamespace(include_obsolete=False), vectors={}
    )
    keys = np.arange(len(final), dtype=np.int64)
    return s.adjust(run, keys, np.asarray(final, dtype=np.float32))


def order(scores: F32) -> list[int]:
    return np.argsort(-scores, kind="stable").tolist()


E = [_unit([1, 0, 0, 0]), _unit([0, 1, 0, 0]), _unit([0, 0, 1, 0]), _unit([0, 0, 0, 1])]


def test_the_newer_value_takes_the_older_place() -> None:
    """0: the old value (best match), 1: an unrelated memory, 2: the new value, said later, close
    to the old one (cosine 0.5 ≥ slot_cosine) and a third as relevant (≥ older_factor)."""
    vecs = [E[0], E[1], _at_cosine(E[0], E[2], 0.5)]
    out = adjust(succession([1.0, 2.0, 3.0], vecs), [0.9, 0.6, 0.3])
    assert order(out) == [2, 0, 1]
    assert out[2] == pytest.approx(0.9) and out[0] == pytest.approx(0.9 * BELOW)


@pytest.mark.parametrize(
    ("cos", "score", "born_new"),
    [
        (0.3, 0.3, 3.0),  # not close enough to be one slot
        (0.5, 0.1, 3.0),  # close, but too little relevant (0.1 < 0.2 of 0.9)
        (0.5, 0.3, 0.5),  # close, but said before the old one
    ],
)
def test_no_slot_no_change(cos: float, score: float, born_new: float) -> None:
    vecs = [E[0], E[1], _at_cosine(E[0], E[2], cos)]
    final = [0.9, 0.6, score]
    out = adjust(succession([1.0, 2.0, born_new], vecs), final)
    assert out.tolist() == pytest.approx(final)


def test_an_older_memory_yields_once_to_its_closest_newer_neighbour() -> None:
    """1 and 2 are both later and both close to 0; 2 is the closer: it takes 0's place, and 0
    stays above 1 (it does not yield again)."""
    n1 = _at_cosine(E[0], E[1], 0.42)
    n2 = _at_cosine(E[0], E[2], 0.85)
    assert float(n1 @ n2) < DEFAULTS.slot_cosine  # 1 and 2 are no slot of their own
    out = adjust(succession([1.0, 2.0, 3.0], [E[0], n1, n2]), [0.9, 0.5, 0.4])
    assert order(out) == [2, 0, 1]
    assert out[1] == pytest.approx(0.5)


def test_two_statements_that_both_hold_are_no_slot() -> None:
    vecs = [E[0], _at_cosine(E[0], E[1], 0.8)]
    texts = ["My son Leo plays soccer on Saturdays", "My son Noah plays chess on Saturdays"]
    out = adjust(succession([1.0, 2.0], vecs, texts), [0.9, 0.5])
    assert order(out) == [0, 1]
    same_child = ["Leo plays soccer on Saturdays", "Leo plays chess on Saturdays now"]
    assert order(adjust(succession([1.0, 2.0], vecs, same_child), [0.9, 0.5])) == [1, 0]


def test_kinds_apart_and_questions_about_the_past_are_left_alone() -> None:
    vecs = [E[0], _at_cosine(E[0], E[1], 0.8)]
    kinds = [Kind.FACT, Kind.PREFERENCE]
    assert order(adjust(succession([1.0, 2.0], vecs, kinds=kinds), [0.9, 0.5])) == [0, 1]
    assert order(adjust(succession([1.0, 2.0], vecs), [0.9, 0.5], asks_past=True)) == [0, 1]
    off = msgspec.structs.replace(DEFAULTS, enabled=False)
    assert order(adjust(succession([1.0, 2.0], vecs, sup=off), [0.9, 0.5])) == [0, 1]


@pytest.mark.parametrize(
    "kinds",
    [(Kind.SUMMARY, Kind.FACT), (Kind.SUMMARY, Kind.PREFERENCE), (Kind.FACT, Kind.SUMMARY)],
)
def test_a_summary_shares_a_slot_with_the_facts_it_restates(kinds: tuple[Kind, Kind]) -> None:
    """A session's summary line said the old value; a later fact (or a later summary of a later
    fact) says the new one: the newer takes the summary's place, as between two facts."""
    vecs = [E[0], _at_cosine(E[0], E[1], 0.8)]
    assert order(adjust(succession([1.0, 2.0], vecs, kinds=list(kinds)), [0.9, 0.5])) == [1, 0]


@settings(max_examples=200, deadline=None)
@given(
    n=st.integers(2, 12),
    seed=st.integers(0, 2**31),
    spread=st.floats(0.1, 1.5),
)
def test_scores_only_move_between_memories(n: int, seed: int, spread: float) -> None:
    """Every adjusted score is an input score, or one just below it; the best score is kept."""
    rng = np.random.default_rng(seed)
    centre = _unit(rng.normal(size=8).tolist())
    vecs = [_unit((centre + spread * rng.normal(size=8)).tolist()) for _ in range(n)]
    final = rng.uniform(0.01, 1.0, size=n).astype(np.float32)
    born = rng.permutation(n).astype(float).tolist()
    out = adjust(succession(born, vecs), final.tolist())
    allowed = np.concatenate([final, final * BELOW, final * BELOW * BELOW])
    for x in out.tolist():
        assert np.isclose(allowed, x, rtol=1e-6).any()
    assert out.max() == pytest.approx(final.max())
