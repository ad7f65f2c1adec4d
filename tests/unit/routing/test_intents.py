"""The intents' readout (server/core/routing/intents.py): a ridge regression fitted on the example
questions' vectors reads a query's intent from the directions that tell the intents apart, where
the nearest examples' cosines say otherwise."""

from __future__ import annotations

import numpy as np
import pytest

from server.core.routing.intents import IntentModel

DIM = 64


def unit(v: np.ndarray) -> np.ndarray:
    return (v / np.linalg.norm(v)).astype(np.float32)


def world(seed: int = 7) -> tuple[np.ndarray, list[np.ndarray], dict[str, np.ndarray]]:
    """Two intents with topics of their own: each example is a topic plus (profile) or minus
    (history) one "form" direction, as "what is my X" and "what exactly did I say about X" are."""
    rng = np.random.default_rng(seed)
    form = unit(rng.normal(size=DIM))
    topics = [unit(rng.normal(size=DIM)) for _ in range(16)]
    vectors = {f"p{i}": unit(topics[i] + 0.5 * form) for i in range(8)} | {
        f"h{i}": unit(topics[i] - 0.5 * form) for i in range(8, 16)
    }
    return form, topics, vectors


def model(vectors: dict[str, np.ndarray], intents: tuple[str, ...] = ("p", "h")) -> IntentModel:
    names = {"p": "profile", "h": "history"}
    examples = {names[i]: tuple(n for n in vectors if n[0] == i) for i in intents}
    return IntentModel(lambda texts: np.stack([vectors[t] for t in texts]), examples)


def test_each_example_reads_as_its_own_intent() -> None:
    _, _, vectors = world()
    m = model(vectors)
    for name, v in vectors.items():
        r = m.readout(v)
        assert max(r, key=lambda k: r[k]) == ("profile" if name[0] == "p" else "history")


def test_a_history_topic_asked_in_the_profiles_form_reads_as_profile() -> None:
    form, topics, vectors = world()
    m = model(vectors)
    query = unit(topics[9] + 0.3 * form)  # history's own topic, in the profile's form
    sims = m.similarities(query)
    assert sims["history"] > sims["profile"]  # the nearest examples say history
    r = m.readout(query)
    assert r["profile"] > r["history"]  # the readout reads the form


def test_the_readout_is_centred_and_needs_two_intents() -> None:
    _, topics, vectors = world()
    m = model(vectors)
    r = m.readout(topics[3])
    assert sum(r.values()) == pytest.approx(0.0, abs=1e-9)
    assert model(vectors, ("p",)).readout(topics[3]) == {}  # one intent: nothing to tell apart
    assert model(vectors, ("p",)).similarities(topics[3]) != {}  # its cosines still count


def test_no_vector_or_another_space_reads_nothing() -> None:
    _, _, vectors = world()
    m = model(vectors)
    assert m.readout(None) == {}
    assert m.readout(np.ones(DIM + 1, np.float32)) == {}
    assert IntentModel(None, {"profile": ("p0",)}).readout(vectors["p0"]) == {}
