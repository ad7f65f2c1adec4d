"""`bench router` is fair (issue 28): the trivial row is pocketd's own router cue lists as a rule,
the supervised row and the trivial row are scored on the same questions as pocketd's policies and
pay the same store costs, and the cue-free split holds no cue phrase. One small world, the
server's encoder, no server process."""

from __future__ import annotations

import re
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from bench.router import (
    POLICIES,
    ROWS,
    Board,
    load,
    question_sets,
    routers,
    score_sets,
    settings_for,
)
from bench.router_baselines import TARGET
from bench.router_baselines import fit as fit_baselines
from bench.router_cues import CueRule, CueScan
from bench.router_supervised import CS, THRESHOLDS, choose, chosen, held_out_probabilities
from bench.routing_world import (
    STORE_COST,
    STORES,
    World,
    build,
    cheapest_reaching,
    coverage_and_cost,
)
from server.adapters.onnx_encoder import OnnxTextEncoder
from server.app import build_engine
from server.core.settings import RouterSettings

DEFAULT = frozenset({"summary"})


@pytest.fixture(scope="module")
def world() -> World:
    return build(seed=0, users=2, questions_per_user=18)


@pytest.fixture(scope="module")
def boards(world: World, encoder: OnnxTextEncoder) -> Iterator[dict[str, dict[str, Board]]]:
    """Every row (the untrained policies, the oracle, the baselines) on the tune and report
    halves of `world`."""
    sets = question_sets(world, None)
    with tempfile.TemporaryDirectory(prefix="pocketd-router-fair-") as tmp:
        s = settings_for(Path(tmp), policy="heuristic")
        eng = build_engine(s, encoder)
        eng.load()
        offset = time.time() - world.now
        rs = {}
        try:
            load(eng, world, offset)
            rs = routers(eng, s, None)
            base = fit_baselines(sets["tune"], s.router)
            yield score_sets(eng, rs, False, world, sets, offset, base, CueScan(s.router))
        finally:
            for r in rs.values():
                r.close()
            eng.close()


def _phrases(settings: RouterSettings) -> list[str]:
    """Every phrase of every cue list the router's settings hold."""
    fields = msgspec.structs.fields(settings)
    return [c for f in fields if f.name.endswith("_cues") for c in getattr(settings, f.name)]


def _holds(text: str, phrase: str) -> bool:
    low = text.lower()
    if phrase.isascii():
        return re.search(rf"\b{re.escape(phrase.lower())}\b", low) is not None
    return phrase in low


def test_the_baselines_see_the_policies_questions_and_pay_the_same_store_costs(
    world: World, boards: dict[str, dict[str, Board]]
) -> None:
    sets = question_sets(world, None)
    phrases = _phrases(settings_for(Path("unused")).router)
    scored = [row for row in ROWS if row not in ("learned", "hybrid")]  # untrained here
    for name, by in boards.items():
        for split, board in by.items():
            asked = [
                q.text
                for q in sets[name]
                if split == "all" or not any(_holds(q.text, p) for p in phrases)
            ]
            for row in scored:
                t = board.rows[row]
                assert t.texts == asked, (name, split, row)
                # The same price list for every row, whoever chose the stores.
                costs = [sum(STORE_COST[s] for s in picked) for picked in t.picked]
                assert t.store_cost == pytest.approx(costs), (name, split, row)
            # The policies' plans are read as the same four stores the baselines name.
            assert all(p == frozenset(STORES) for p in board.rows["full"].picked)
            assert {s for p in board.rows["heuristic"].picked for s in p} <= set(STORES)
    assert set(POLICIES) - {"learned", "hybrid"} <= set(scored)


def test_the_cue_free_split_holds_no_cue_phrase_and_the_rest_hold_one(
    world: World, boards: dict[str, dict[str, Board]]
) -> None:
    phrases = _phrases(settings_for(Path("unused")).router)
    for name, by in boards.items():
        free = set(by["cue_free"].rows["full"].texts)
        assert free, name  # the split is not empty on this world...
        for text in by["all"].rows["full"].texts:
            held = [p for p in phrases if _holds(text, p)]
            assert (text in free) == (not held), (name, text, held)
        assert len(free) < len(by["all"].rows["full"].texts)  # ...nor every question


def test_the_cue_rule_is_built_from_the_routers_cue_lists(world: World, tmp_path: Path) -> None:
    shipped = settings_for(tmp_path).router
    rule = CueRule(shipped, DEFAULT)
    pointing_back = [
        q.text for q in world.questions if any(_holds(q.text, c) for c in shipped.past_cues)
    ]
    assert pointing_back  # the world's wordings use the router's past cues
    assert all("transcript" in rule.stores(t) for t in pointing_back)
    # Empty the router's past cues: the rule stops sending those questions to the transcripts.
    without = CueRule(settings_for(tmp_path, past_cues=[]).router, DEFAULT)
    assert not any("transcript" in without.stores(t) for t in pointing_back)
    # Add a phrase to the router's profile cues: the rule sends a question holding it there.
    text = "Tell me about the zebra crossing near the office."
    assert rule.stores(text) == set(DEFAULT)  # no cue: the default
    more = [*shipped.about_me_cues, "zebra crossing"]
    assert CueRule(settings_for(tmp_path, about_me_cues=more).router, DEFAULT).stores(text) == {
        "profile"
    }


def test_the_blind_set_must_be_asked_of_the_same_world(world: World) -> None:
    same = build(seed=0, users=2, questions_per_user=18)
    assert question_sets(world, same)["blind"] == same.questions
    with pytest.raises(ValueError, match="same world"):
        question_sets(world, build(seed=1, users=2, questions_per_user=18))


def test_the_supervised_rows_choice_is_the_cheapest_of_each_cs_best_on_the_tune_half(
    world: World,
) -> None:
    tune = [q for q in world.questions if q.half == "tune"]
    choice = choose(tune, TARGET)
    assert [c for c, *_ in choice.by_c] == list(CS)  # every C of the grid was tried...
    best = cheapest_reaching([(cov, cost, (c, t)) for c, t, cov, cost in choice.by_c], TARGET)
    assert (choice.c, choice.threshold) == best  # ...and the pair is the cheapest of their bests
    assert all(t in THRESHOLDS for _, t, _, _ in choice.by_c)
    # The held-out figures are those of the tune half alone, at the one price list.
    probs = held_out_probabilities(tune, 5, [choice.c])[choice.c]
    assert coverage_and_cost(tune, chosen(probs, choice.threshold)) == pytest.approx(
        (choice.coverage, choice.store_cost)
    )
