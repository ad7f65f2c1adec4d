"""The four policies' plans (`policies.choose`), on pockets as the log holds them."""

from __future__ import annotations

import numpy as np
import pytest

from server.core.memory.costs import CostModel
from server.core.routing.policies import STRONG, choose
from server.core.routing.training import Example, LoggedPocket, evaluate
from server.core.settings import MemorySettings

S = MemorySettings()
COSTS = CostModel(S.pockets, S.hybrid_search.expansion_search)
POCKETS = [LoggedPocket(f"p{i}", 100, "exact") for i in range(8)]


def names(
    policy: str, heur: list[float], model: list[float] | None, cap: float | None = None
) -> list[str]:
    planned = choose(policy, POCKETS, heur, model, 0.5, cap, 0.5, 64, 5, COSTS)
    return [s.pocket for s in planned.steps]


def test_full_searches_every_pocket_and_the_routed_ones_the_probable_ones() -> None:
    heur = [0.9, 0.8, 0.3, 0.3, 0.3, 0.3, 0.3, 0.6]
    assert names("full", heur, None) == [p.name for p in POCKETS]
    assert names("heuristic", heur, None) == ["p0", "p1", "p7"]
    assert names("heuristic", heur, None, cap=250) == ["p0", "p1"]  # the cap drops the least


def test_learned_follows_the_model_and_hybrid_makes_strong_rules_certain() -> None:
    heur = [STRONG, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3]
    model = [0.1, 0.1, 0.1, 0.9, 0.1, 0.1, 0.1, 0.1]
    assert names("learned", heur, model) == ["p3"]
    assert names("hybrid", heur, model) == ["p0", "p3"]
    # without a strong rule, hybrid is the model's plan
    assert names("hybrid", [0.3] * 8, model) == ["p3"]


def test_an_unsure_policy_is_widened_to_full() -> None:
    planned = choose("learned", POCKETS, [0.3] * 8, [0.2] * 8, 0.3, None, 0.5, 64, 5, COSTS)
    assert planned.widened.startswith("low confidence: 0.20")
    assert len(planned.steps) == len(POCKETS)


def test_learned_without_a_model_and_unknown_policies_are_refused() -> None:
    with pytest.raises(ValueError, match="needs a model"):
        choose("learned", POCKETS, [0.3] * 8, None, 0.3, None, 0.5, 64, 5, COSTS)
    with pytest.raises(ValueError, match="unknown routing policy"):
        choose("oracle", POCKETS, [0.3] * 8, None, 0.3, None, 0.5, 64, 5, COSTS)


def test_a_probability_that_is_not_a_number_widens_the_plan() -> None:
    model = [float("nan")] + [0.9] * 7
    planned = choose("learned", POCKETS, [0.3] * 8, model, 0.3, None, 0.5, 64, 5, COSTS)
    assert planned.widened == "a probability is not a number"
    assert len(planned.steps) == len(POCKETS)


def test_the_replay_widens_what_the_safety_net_widened() -> None:
    ex = Example(
        "ns", np.zeros((8, 3), np.float32), np.array([True] + [False] * 7), POCKETS,
        [0.9] + [0.3] * 7, 150, 0.3, 5, True, safety=True,
    )  # fmt: skip
    (full, heur) = evaluate([ex], None, 0.5, 64, COSTS)
    assert heur.policy == "heuristic" and heur.cost_share == full.cost_share == 1.0
    assert heur.waste == full.waste == 7 / 8
