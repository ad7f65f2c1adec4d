"""Model-tier routing: the rules, the intent cache (hits and TTL with a fake clock), sticky
routing and its exceptions, the round rules and the degrade ladder."""

from __future__ import annotations

from server.core.agent.step import tier_settings
from server.core.agent.tiers import Route, TierRouter, TierSettings, classify, intent_key
from server.core.settings import AgentSettings
from tests.conftest import FakeClock

ROUTES = {
    "simple": Route("simple", "fast_small_model", 3, 2000),
    "medium": Route("medium", "default_chat_model", 8, 6000),
    "complex": Route("complex", "strong_reasoning_model", 15, 16000),
    "vision": Route("vision", "vlm_model", 10, 12000),
}
S = TierSettings(ROUTES)


def test_rules_in_english_and_chinese() -> None:
    assert classify("What is the status of order 1234?", False, None, S).tier == "simple"
    assert classify("查询我的订单状态", False, None, S).tier == "simple"
    assert (
        classify("Compare the two contracts and summarise the differences", False, None, S).tier
        == "complex"
    )
    assert classify("比较这两份合同的差异", False, None, S).tier == "complex"
    assert classify("Look at this screenshot of the error", False, None, S).tier == "vision"
    assert classify("hello", True, None, S).tier == "vision"
    low = classify("hmm", False, None, S)
    assert low.tier == "medium" and "low confidence" in low.reasons


def test_the_intent_cache_answers_the_same_prefix_for_30_minutes(clock: FakeClock) -> None:
    r = TierRouter(S, clock)
    a = r.route("t1", 1, "Where is my order  1234?", "", False, 0)
    assert not a.cached and r.classified == 1 and a.route.model == "fast_small_model"
    b = r.route("t2", 1, "where is my ORDER 1234?", "", False, 0)  # normalised: the same key
    assert b.cached and r.classified == 1
    clock.advance(1801)
    c = r.route("t3", 1, "Where is my order 1234?", "", False, 0)
    assert not c.cached and r.classified == 2
    assert intent_key("x" * 100 + "tail one") == intent_key("x" * 100 + "tail two")


def test_the_first_tier_sticks_unless_the_difficulty_jumps_or_an_image_arrives(
    clock: FakeClock,
) -> None:
    r = TierRouter(S, clock)
    assert r.route("t", 1, "Where is my order 7?", "", False, 0).route.name == "simple"
    held = r.route("t", 2, "Where is my order 7?", "thanks, and then?", False, 0)
    assert held.route.name == "simple" and held.sticky
    jump = r.route("t", 3, "Where is my order 7?", "Analyse why the refund failed", False, 0)
    assert jump.route.name == "complex" and jump.why == "difficulty jumped"
    img = r.route("t", 4, "Where is my order 7?", "here is a screenshot", False, 0)
    assert img.route.name == "vision" and img.why == "image"
    back = r.route("t", 5, "Where is my order 7?", "thanks", False, 0)
    assert back.route.name == "complex" and back.sticky  # the task's tier, not vision


def test_round_rules_and_the_degrade_ladder(clock: FakeClock) -> None:
    r = TierRouter(S, clock)
    goal = "Design a migration plan for the billing database"
    names = [r.route("t", n, goal, "", False, 0).route.name for n in range(1, 8)]
    assert names == ["complex"] * 5 + ["medium"] * 2
    assert not r.route("t", 9, goal, "", False, 0).escalate
    assert r.route("t", 10, goal, "", False, 0).escalate
    cheaper = r.route("u", 1, goal, "", False, 2)
    assert cheaper.route.name == "medium" and "degrade" in cheaper.why


def test_an_image_neither_reads_nor_fills_the_intent_cache(clock: FakeClock) -> None:
    r = TierRouter(S, clock)
    assert r.route("a", 1, "Help with my order 9", "", True, 0).route.name == "vision"
    b = r.route("b", 1, "Help with my order 9", "", False, 0)
    assert b.route.name != "vision" and not b.cached
    c = r.route("c", 1, "Help with my order 9", "", True, 0)
    assert c.route.name == "vision" and not c.cached


def test_the_round_rules_and_the_intent_ttl_come_from_the_agent_settings() -> None:
    s = tier_settings(
        AgentSettings(complex_rounds=2, escalate_round=4, intent_ttl_seconds=60, min_confidence=0.5)
    )
    assert (s.complex_rounds, s.escalate_round, s.intent_ttl_s, s.min_confidence) == (
        2, 4, 60, 0.5,
    )  # fmt: skip
    assert s.routes["simple"].max_rounds == 3
