"""Tenants' kept names, their grants, the partitioned LRU that keeps one tenant's cache entries
from evicting another's, sealed List page tokens, and the pool that serves tenants in turn."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from server.api.fairpool import FairPool
from server.api.page_tokens import PageTokens
from server.core.agent.toolcache import ToolCache
from server.core.deadline import Deadline
from server.core.memo import PartitionedLRU, TextMemo
from server.core.query.encoding import Encoding
from server.core.tenancy import ANONYMOUS, Tenant, tenant_of, unscoped_text
from tests.conftest import FakeClock, wait_for

NAMES = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.:/-]{0,40}", fullmatch=True)


@given(NAMES, NAMES)
def test_kept_names_of_two_tenants_never_meet(a: str, b: str) -> None:
    acme, globex = Tenant("acme"), Tenant("globex")
    assert acme.scope(a) != globex.scope(b)
    assert acme.scope(a) != ANONYMOUS.scope(b)
    assert acme.unscope(acme.scope(a)) == a and globex.unscope(acme.scope(a)) is None
    assert ANONYMOUS.unscope(acme.scope(a)) is None and ANONYMOUS.unscope(a) == a
    assert tenant_of(acme.scope(a)) == "acme" and tenant_of(a) == "default"
    assert unscoped_text(f"task {acme.scope(a)!r} not found") == f"task {a!r} not found"


def test_grants_are_globs_over_the_whole_name() -> None:
    t = Tenant("acme", ("team-a/*", "shared"))
    assert t.may_use("team-a/x") and t.may_use("team-a/x/y") and t.may_use("shared")
    assert not t.may_use("team-b/x") and not t.may_use("shared2") and not t.may_use("team-a")


def test_one_partition_never_evicts_another() -> None:
    lru: PartitionedLRU[str, int] = PartitionedLRU(capacity=2, partitions=3)
    lru.put("victim", "a", 1)
    for i in range(100):
        lru.put("attacker", f"k{i}", i)
    assert lru.get("victim", "a") == 1 and len(lru) == 3
    for p in ("p1", "p2"):
        lru.put(p, "x", 0)  # a fourth partition drops the least recently used one whole
    assert lru.get("attacker", "k99") is None and lru.get("victim", "a") == 1


def test_the_tool_cache_is_partitioned_by_tenant() -> None:
    cache = ToolCache(FakeClock(), capacity=4)
    victim = Tenant("victim").scope("home")
    assert cache.put(victim, "search", {"q": "pin"}, "4321", 600, True)
    attacker = Tenant("attacker").scope("home")
    assert cache.get(attacker, "search", {"q": "pin"}) is None  # the same wire namespace
    for i in range(50):
        cache.put(attacker, "search", {"q": i}, "r", 600, True)
    hit = cache.get(victim, "search", {"q": "pin"})
    assert hit is not None and hit.result == "4321"


def test_page_tokens_are_sealed_and_bound_to_their_namespace() -> None:
    pages = PageTokens(b"k" * 32)
    token = pages.seal("acme~ns", (1_800_000_000.5, 3, 123456))
    assert "123456" not in token and pages.open("acme~ns", token) == (1_800_000_000.5, 3, 123456)
    assert pages.open("globex~ns", token) is None and pages.open("ns", token) is None
    assert PageTokens(b"j" * 32).open("acme~ns", token) is None  # another server's secret
    flipped = token[:-2] + ("A" if token[-2] != "A" else "B") + token[-1]
    assert pages.open("acme~ns", flipped) is None
    for junk in ("", "!!", "abc", "A" * 200):
        assert pages.open("acme~ns", junk) is None
    assert pages.seal("acme~ns", (1.0, 0, 1)) != pages.seal("acme~ns", (1.0, 0, 1))  # a nonce
    with pytest.raises(ValueError):
        PageTokens(b"short")


def test_the_pool_serves_a_waiting_tenant_before_a_bursting_one() -> None:
    pool = FairPool(2, "test", spare_one=True)
    gate = threading.Event()
    order: list[str] = []
    try:

        def held(i: int) -> None:
            gate.wait(60)
            order.append(f"b{i}")

        burst = [pool.submit_for("burst", held, i) for i in range(6)]
        wait_for(lambda: pool_running(pool) == 1)  # one worker: the other is kept spare
        other = pool.submit_for("other", lambda: order.append("other"))
        other.result(timeout=60)  # served on the spare worker while the burst is blocked
        assert order == ["other"]
        gate.set()
        for f in burst:
            f.result(timeout=60)
    finally:
        gate.set()
        pool.shutdown()


def pool_running(pool: FairPool) -> int:
    time.sleep(0)  # let the workers pick
    return sum(pool._running.values())


class _Encoder:
    dim = 4

    def encode(self, texts: list[str]) -> np.ndarray:
        return np.tile(np.array([1.0, 0.0, 0.0, 0.0], np.float32), (len(texts), 1))


def test_a_query_vector_cached_for_one_tenant_is_not_cached_for_another() -> None:
    enc = Encoding(_Encoder(), None, 4)  # type: ignore[arg-type]
    try:
        victim, attacker = Tenant("victim").scope("home"), Tenant("attacker").scope("home")
        enc.query(victim, "what is my PIN?", Deadline())
        assert enc.cached(victim, "what is my PIN?") is not None
        assert enc.cached(attacker, "what is my PIN?") is None  # no faster answer to time
        for i in range(2000):  # the attacker's own queries never evict the victim's
            enc.query(attacker, f"q{i}", Deadline())
        assert enc.cached(victim, "what is my PIN?") is not None
    finally:
        enc.close()


def test_text_memos_are_kept_per_tenant() -> None:
    calls: list[str] = []

    def size(text: str) -> int:
        calls.append(text)
        return len(text)

    memo: TextMemo[int] = TextMemo(size, 2)
    long = "x" * 5000
    memo(long, part="victim")
    memo(long, part="attacker")  # computed again: no faster answer for another tenant
    assert len(calls) == 2
    for i in range(10):
        memo(f"y{i}", part="attacker")
    memo(long, part="victim")  # the attacker's own texts never evict the victim's
    assert len(calls) == 12


def test_three_tenants_share_a_busy_pool_in_turn() -> None:
    pool = FairPool(3, "test", spare_one=True)
    gate = threading.Event()
    try:
        a = [pool.submit_for("a", gate.wait, 60) for _ in range(5)]
        wait_for(lambda: pool_running(pool) == 2)  # a alone: all but one worker
        b = pool.submit_for("b", gate.wait, 60)
        wait_for(lambda: pool_running(pool) == 3)  # b gets the spare at once
        order: list[str] = []
        c = pool.submit_for("c", lambda: order.append("c"))
        more_a = pool.submit_for("a", lambda: order.append("a"))
        gate.set()  # as workers free up, c (waiting, over no share) goes before a's backlog
        c.result(timeout=60)
        more_a.result(timeout=60)
        assert order.index("c") < order.index("a")
        for f in [*a, b]:
            f.result(timeout=60)
    finally:
        gate.set()
        pool.shutdown()
