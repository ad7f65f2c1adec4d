"""The tool-result cache: canonical keys, TTL with a fake clock, LRU eviction, idempotent tools
only, tenants apart."""

from __future__ import annotations

import math

import pytest

from server.core.agent.toolcache import ToolArgsError, ToolCache, canonical
from tests.conftest import FakeClock


def test_argument_order_and_spacing_make_one_key() -> None:
    assert canonical({"b": [1, 2], "a": "é"}) == canonical({"a": "é", "b": [1, 2]})
    assert canonical({"a": 1}) != canonical({"a": 1.5})
    with pytest.raises(ToolArgsError):
        canonical({"x": math.nan})


def test_a_result_lives_its_ttl(clock: FakeClock) -> None:
    c = ToolCache(clock)
    assert c.put("ns", "search", {"q": "tea"}, "result", ttl=60, idempotent=True)
    clock.advance(59)
    hit = c.get("ns", "search", {"q": "tea"})
    assert hit is not None and hit.result == "result"
    clock.advance(2)
    assert c.get("ns", "search", {"q": "tea"}) is None
    assert (c.hits, c.misses) == (1, 1)


def test_the_least_recently_used_is_evicted(clock: FakeClock) -> None:
    c = ToolCache(clock, capacity=2)
    c.put("ns", "t", 1, "one", 60, True)
    c.put("ns", "t", 2, "two", 60, True)
    assert c.get("ns", "t", 1) is not None  # 1 is now the most recent
    c.put("ns", "t", 3, "three", 60, True)
    assert c.get("ns", "t", 2) is None and c.get("ns", "t", 1) is not None
    assert len(c) == 2


def test_only_idempotent_small_results_are_cached_and_tenants_stay_apart(
    clock: FakeClock,
) -> None:
    c = ToolCache(clock, max_result_bytes=10)
    assert not c.put("ns", "pay", {}, "ok", 60, idempotent=False)
    assert not c.put("ns", "t", {}, "x" * 11, 60, idempotent=True)
    assert not c.put("ns", "t", {}, "ok", 0, idempotent=True)
    assert c.put("a", "t", {}, "ok", 60, idempotent=True)
    assert c.get("b", "t", {}) is None


def test_max_age_caps_a_hit_at_the_asking_tasks_ttl() -> None:
    clock = FakeClock()
    c = ToolCache(clock)
    assert c.put("ns", "t", {"a": 1}, "r", 600, True)
    clock.advance(100)
    assert c.get("ns", "t", {"a": 1}, max_age=200) is not None
    assert c.get("ns", "t", {"a": 1}, max_age=50) is None  # older than this task allows
    assert c.get("ns", "t", {"a": float("nan")}) is None  # no canonical form: no hit


def test_the_same_result_reported_again_keeps_its_age() -> None:
    clock = FakeClock()
    c = ToolCache(clock)
    c.put("ns", "t", {"a": 1}, "r", 600, True)
    clock.advance(500)
    c.put("ns", "t", {"a": 1}, "r", 600, True)  # a retried Step reports it again
    clock.advance(200)
    assert c.get("ns", "t", {"a": 1}) is None  # 700 s old: expired
    c.put("ns", "t", {"a": 1}, "new", 600, True)  # a new result restarts the clock
    assert c.get("ns", "t", {"a": 1}) is not None
