"""The intents' readout (server/core/routing/intents.py): a ridge regression fitted on the example
questions' vectors reads a query's intent from the directions that tell the intents apart, where
the cosines to the nearest examples tie."""

from __future__ import annotations

import numpy as np
import pytest

from server.core.routing.intents import IntentModel

DIM = 64
RNG = np.random.default_rng(7)


def unit(v: np.ndarray) -> np.ndarray:
    return (v / np.linalg.norm(v)).astype(np.float32)


# Two intents whose examples share their topics: each example is a topic plus (profile) or minus
# (history) one "form" direction, as "what is my X" and "what exactly did I say about X" are.
FORM = unit(RNG.normal(size=DIM))
TOPICS = [unit(RNG.normal(size=DIM)) for _ in range(8)]
VECTORS = {f"p{i}": unit(t + 0.4 * FORM) for i, t in enumerate(TOPICS)} | {
    f"h{i}": unit(t - 0.4 * FORM) for i, t in enumerate(TOPICS)
}
EXAMPLES = {
    "profile": tuple(f"p{i}" for i in range(8)),
    "history": tuple(f"h{i}" for i in range(8)),
}


def model() -> IntentModel:
    return IntentModel(lambda texts: np.stack([VECTORS[t] for t in texts]), EXAMPLES)


def test_each_example_reads_as_its_own_intent() -> None:
    m = model()
    for name, v in VECTORS.items():
        r = m.readout(v)
        assert max(r, key=lambda k: r[k]) == ("profile" if name[0] == "p" else "history")


def test_a_new_topic_is_read_by_its_form_where_the_cosines_tie() -> None:
    m = model()
    topic = unit(RNG.normal(size=DIM))
    query = unit(topic + 0.15 * FORM)  # a topic no example has, in the profile's form
    sims = m.similarities(query)
    assert sims["profile"] - sims["history"] < 0.2  # the nearest examples barely tell
    r = m.readout(query)
    assert r["profile"] > r["history"]
    assert m.readout(unit(topic - 0.15 * FORM))["history"] > m.readout(query)["history"]


def test_no_vector_or_another_space_reads_nothing() -> None:
    m = model()
    assert m.readout(None) == {}
    assert m.readout(np.ones(DIM + 1, np.float32)) == {}
    assert IntentModel(None, EXAMPLES).readout(VECTORS["p0"]) == {}


def test_unknown_intents_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown intents"):
        IntentModel(None, {"weather": ("is it raining",)})
