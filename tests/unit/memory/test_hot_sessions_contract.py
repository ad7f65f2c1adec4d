"""The hot tier's session memory (`HotSessions`): one contract for both backends, the in-process
one (`server.core.memory.state.sessions`) and Redis (`server.adapters.redis_sessions`, against a
real redis-server), checked case by case and by a state machine against a plain dict model;
then what only Redis does: the TTL kept by Redis, a restart of pocketd that keeps everything, a
Redis killed or restarted empty (UNAVAILABLE after the retries, then a resync from the store),
and start-up against a Redis that is not there."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator

import pytest
import redis
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from server.adapters.redis_sessions import (
    RedisHotSessions,
    RedisUnreachableError,
    open_redis_sessions,
    parse_session,
    session_name,
    shown_url,
)
from server.core.errors import UnavailableError
from server.core.memory.changes import Applied
from server.core.memory.model import Kind, Record, Tier
from server.core.memory.ports import HotSessions, HotTurn
from server.core.memory.state.sessions import MemoryHotSessions, hot_turns, turn_of
from server.core.settings import HotSettings
from tests.conftest import FakeClock
from tests.redis_server import RedisServer, free_port

NS = "ns"
Resync = Callable[[], Iterable[HotTurn]]
Session = tuple[str, str]


def turn(
    key: int,
    session: str = "s1",
    ns: str = NS,
    position: int = 0,
    text: str = "",
    at: float = 1_700_000_000.0,
    speaker: str = "",
    kind: int = int(Kind.EPISODE),
) -> HotTurn:
    return HotTurn(key, f"m{key}", ns, session, kind, speaker, text, at, position)


def record(t: HotTurn, tier: Tier = Tier.HOT, session: str | None = None) -> Record:
    """The stored record a hot turn is (of another tier, or another session, when asked)."""
    return Record(
        memory_id=t.memory_id,
        namespace=t.namespace,
        kind=Kind(t.kind),
        session_id=t.session_id if session is None else session,
        text=t.text,
        speaker=t.speaker,
        created_at=t.at,
        turn=t.turn,
        tier=tier,
        key=t.key,
    )


def written(t: HotTurn, tier: Tier = Tier.HOT, session: str | None = None) -> Applied:
    return Applied(1, t.key, t.namespace, record(t, tier, session), None)


def erased(key: int, ns: str = NS) -> Applied:
    return Applied(1, key, ns, None, None)


def nothing_to_resync() -> list[HotTurn]:
    raise AssertionError("resynced, though no call failed")


class Backend:
    """Opens a backend's instance on one content (`fresh`: another, empty one). A persistent
    backend keeps its content across instances: a restart of pocketd."""

    prefixes = itertools.count()

    def __init__(self, name: str, url: str = "") -> None:
        self.name = name
        self.url = url
        self.persistent = name == "redis"
        self.fresh()

    def fresh(self) -> None:
        self.prefix = f"test{next(self.prefixes)}:"

    def settings(self, retries: int = 1) -> HotSettings:
        return HotSettings(
            backend="redis", url=self.url, key_prefix=self.prefix, redis_retries=retries
        )

    def open(self, clock: FakeClock, resync: Resync = nothing_to_resync) -> HotSessions:
        if self.name == "memory":
            return MemoryHotSessions(clock)
        return RedisHotSessions(self.settings(), clock, resync)


@pytest.fixture(params=["memory", "redis"])
def backend(request: pytest.FixtureRequest) -> Backend:
    if request.param == "memory":
        return Backend("memory")
    return Backend("redis", request.getfixturevalue("redis_url"))


@pytest.fixture
def opened(backend: Backend, clock: FakeClock) -> Iterator[HotSessions]:
    sessions = backend.open(clock, list)  # a fresh prefix: resynced once, from nothing
    sessions.load([])
    yield sessions
    sessions.close()


# -- the contract, case by case --------------------------------------------------------------


def test_a_hot_turn_is_held_and_replaced_by_key(opened: HotSessions) -> None:
    a, b = turn(1, text="a", position=0), turn(2, text="b", position=1)
    opened.follow([written(a), written(b)])
    assert opened.turns(NS, "s1") == [a, b]
    a2 = turn(1, text="a, said again", position=0)
    opened.follow([written(a2)])
    assert opened.turns(NS, "s1") == [a2, b]
    assert opened.sessions(NS) == ["s1"] and opened.sessions("other") == []
    assert opened.turns(NS, "s2") == [] and opened.turns("other", "s1") == []


def test_turns_come_in_turn_order(opened: HotSessions) -> None:
    late, first, second = turn(5, position=2), turn(9, position=0), turn(7, position=1)
    opened.follow([written(late), written(first), written(second)])
    assert opened.turns(NS, "s1") == [first, second, late]


def test_erased_warm_and_sessionless_records_leave(opened: HotSessions) -> None:
    one, two, three, four = turn(1), turn(2, position=1), turn(3, position=2), turn(4, "s2")
    opened.follow([written(one), written(two), written(three), written(four)])
    opened.follow([erased(1), written(two, Tier.WARM), written(three, session="")])
    assert opened.turns(NS, "s1") == []
    assert opened.sessions(NS) == ["s2"]  # a session without turns is gone
    assert opened.idle(float("inf")) == [(NS, "s2")]
    opened.follow([erased(1), erased(42), written(turn(8), Tier.COLD)])  # gone, never there
    assert opened.sessions(NS) == ["s2"] and opened.turns(NS, "s2") == [four]


def test_a_turn_moved_to_another_session_leaves_the_first(opened: HotSessions) -> None:
    t = turn(1, "s1")
    opened.follow([written(t), written(turn(2, "s1", position=1))])
    opened.follow([written(t, session="s2")])
    moved = turn(1, "s2")
    assert opened.turns(NS, "s1") == [turn(2, "s1", position=1)]
    assert opened.turns(NS, "s2") == [moved]
    opened.follow([erased(2)])
    assert opened.sessions(NS) == ["s2"]


def test_last_activity_is_the_clock_at_follow(opened: HotSessions, clock: FakeClock) -> None:
    t0 = clock.now()
    # Turns sent late (old event times): their session is active now.
    opened.follow([written(turn(1, "s1", at=t0 - 1e6)), written(turn(3, "s1", position=1))])
    clock.advance(10)
    opened.follow([written(turn(2, "s2", at=t0 - 1e7))])
    assert opened.idle(t0) == []
    assert opened.idle(t0 + 1) == [(NS, "s1")]
    assert opened.idle(t0 + 11) == [(NS, "s1"), (NS, "s2")]  # least recently active first
    clock.advance(5)
    opened.follow([erased(3)])  # a removal is no activity
    assert opened.idle(t0 + 11) == [(NS, "s1"), (NS, "s2")]
    opened.follow([written(turn(4, "s1", position=2))])
    assert opened.idle(t0 + 11) == [(NS, "s2")]
    assert opened.idle(clock.now() + 1) == [(NS, "s2"), (NS, "s1")]


def test_end_removes_the_session_and_returns_its_turns(
    opened: HotSessions, clock: FakeClock
) -> None:
    a, b, other = turn(1, position=1), turn(2, position=0), turn(3, "s2")
    opened.follow([written(a), written(b), written(other)])
    assert opened.end(NS, "s1") == [b, a]
    assert opened.turns(NS, "s1") == [] and opened.sessions(NS) == ["s2"]
    assert opened.idle(float("inf")) == [(NS, "s2")]
    assert opened.end(NS, "s1") == [] and opened.end(NS, "never") == []
    clock.advance(60)
    opened.follow([written(turn(4))])  # the same session again: a new start
    assert opened.turns(NS, "s1") == [turn(4)]
    assert opened.idle(clock.now()) == [(NS, "s2")]
    opened.follow([erased(1), erased(2)])  # ended turns: their removal finds nothing
    assert opened.turns(NS, "s1") == [turn(4)] and opened.turns(NS, "s2") == [other]


def test_load_makes_the_content_the_stores(opened: HotSessions, clock: FakeClock) -> None:
    t0 = clock.now()
    opened.follow([written(turn(1, "s1")), written(turn(2, "s2"))])
    clock.advance(100)
    store = [turn(1, "s1", text="as stored"), turn(3, "s3"), turn(4, "s1", position=1)]
    for _ in range(2):  # loading twice is loading once
        opened.load(iter(store))
        assert opened.turns(NS, "s1") == [store[0], store[2]]
        assert opened.turns(NS, "s2") == []  # erased from the store: not resurrected
        assert opened.sessions(NS) == ["s1", "s3"]
        # s1 keeps its last activity, s3 is new: active now.
        assert opened.idle(t0 + 1) == [(NS, "s1")]
        assert opened.idle(clock.now() + 1) == [(NS, "s1"), (NS, "s3")]
    opened.load([turn(5, "s1"), turn(5, "s2", text="the last one counts")])
    assert opened.sessions(NS) == ["s2"] and opened.turns(NS, "s2")[0].text == "the last one counts"
    opened.load([])
    assert opened.sessions(NS) == [] and opened.idle(float("inf")) == []


def test_names_and_namespaces_are_kept_apart(opened: HotSessions) -> None:
    # Names with the separator in them, and one namespace a prefix of another.
    odd = [turn(1, "b:c", ns="a"), turn(2, "c", ns="a:b"), turn(3, "", ns="a")]
    opened.follow([written(t) for t in odd])
    assert opened.turns("a", "b:c") == [odd[0]] and opened.turns("a:b", "c") == [odd[1]]
    assert opened.sessions("a") == ["b:c"] and opened.sessions("a:b") == ["c"]
    assert opened.turns("a", "") == []  # a record without a session is no turn


def test_turn_of_reads_a_stored_record() -> None:
    t = turn(7, "s9", position=3, text="hello", speaker="Ann", kind=int(Kind.OBSERVATION))
    assert turn_of(record(t)) == t
    assert turn_of(record(t, Tier.WARM)) is None
    assert turn_of(record(t, session="")) is None
    assert turn_of(None) is None
    assert list(hot_turns([record(t), record(turn(8), Tier.COLD)])) == [t]


# -- the contract as a state machine against a dict model --------------------------------------

SESSIONS: list[Session] = [("a", "s1"), ("a", "s2"), ("b", "s1")]
turns_st = st.builds(
    turn,
    key=st.integers(1, 8),
    session=st.sampled_from(["s1", "s2"]),
    ns=st.sampled_from(["a", "b"]),
    position=st.integers(0, 5),
    text=st.text(max_size=12),
    at=st.floats(0, 2e9),
    speaker=st.sampled_from(["", "Ann"]),
    kind=st.sampled_from([int(Kind.EPISODE), int(Kind.OBSERVATION)]),
)
# A change: a hot turn written, or its key written warm or without a session, or erased.
change_st = st.one_of(
    turns_st.map(lambda t: ("hot", t)),
    turns_st.map(lambda t: ("warm", t)),
    turns_st.map(lambda t: ("no session", t)),
    st.integers(1, 8).map(lambda k: ("erased", turn(k))),
)


class SessionsMachine(RuleBasedStateMachine):
    """The model: the store's hot turns by key, and each session's last activity."""

    backend: Backend

    def __init__(self) -> None:
        super().__init__()
        self.clock = FakeClock()
        self.store: dict[int, HotTurn] = {}
        self.active: dict[Session, float] = {}
        self.backend.fresh()
        self.resyncs = 0
        self.sessions = self.backend.open(self.clock, self.resync)
        self.sessions.load([])  # as at start-up
        self.resyncs = 0  # a new Redis prefix is resynced once (from nothing)

    def resync(self) -> list[HotTurn]:
        self.resyncs += 1
        return list(self.store.values())

    def teardown(self) -> None:
        self.sessions.close()

    @rule(changes=st.lists(change_st, min_size=1, max_size=4))
    def follow(self, changes: list[tuple[str, HotTurn]]) -> None:
        applied = []
        for what, t in changes:
            self.store.pop(t.key, None)
            if what == "hot":
                self.store[t.key] = t
                self.active[t.namespace, t.session_id] = self.clock.now()
            applied.append(
                erased(t.key, t.namespace)
                if what == "erased"
                else written(t, Tier.WARM)
                if what == "warm"
                else written(t, session="")
                if what == "no session"
                else written(t)
            )
        held = {(t.namespace, t.session_id) for t in self.store.values()}
        self.active = {s: at for s, at in self.active.items() if s in held}
        self.sessions.follow(applied)

    @rule(seconds=st.floats(0, 3600))
    def advance(self, seconds: float) -> None:
        self.clock.advance(seconds)

    @rule(session=st.sampled_from(SESSIONS))
    def end(self, session: Session) -> None:
        mine = [t for t in self.store.values() if (t.namespace, t.session_id) == session]
        assert self.sessions.end(*session) == sorted(mine, key=lambda t: (t.turn, t.at, t.key))
        for t in mine:
            del self.store[t.key]
        self.active.pop(session, None)

    @rule(back=st.floats(-10, 7200))
    def idle(self, back: float) -> None:
        before = self.clock.now() - back
        late = sorted((at, s) for s, at in self.active.items() if at < before)
        assert self.sessions.idle(before) == [s for _, s in late]

    @rule(drop=st.sets(st.integers(1, 8)))
    def load(self, drop: set[int]) -> None:
        """The store lost some turns behind this backend's back; a load makes them agree."""
        for key in drop:
            self.store.pop(key, None)
        held = {(t.namespace, t.session_id) for t in self.store.values()}
        self.active = {s: at for s, at in self.active.items() if s in held}
        self.sessions.load(list(self.store.values()))

    @precondition(lambda self: self.backend.persistent)
    @rule()
    def restart(self) -> None:
        """pocketd restarts: a new instance on the same Redis holds everything, unresynced."""
        self.sessions.close()
        self.sessions = self.backend.open(self.clock, self.resync)

    @invariant()
    def agrees(self) -> None:
        for ns, sid in SESSIONS:
            mine = [t for t in self.store.values() if (t.namespace, t.session_id) == (ns, sid)]
            want = sorted(mine, key=lambda t: (t.turn, t.at, t.key))
            assert self.sessions.turns(ns, sid) == want
        for ns in ("a", "b"):
            assert self.sessions.sessions(ns) == sorted(s for n, s in self.active if n == ns)
        assert set(self.active) == {(t.namespace, t.session_id) for t in self.store.values()}
        assert self.resyncs == 0  # nothing failed: nothing to resync


def test_backends_follow_the_model(backend: Backend) -> None:
    machine = type("Machine", (SessionsMachine,), {"backend": backend})
    run_state_machine_as_test(
        machine, settings=hsettings(max_examples=60, stateful_step_count=30, deadline=None)
    )


# -- Redis only --------------------------------------------------------------------------------


def redis_sessions(
    url: str,
    clock: FakeClock,
    resync: Resync = nothing_to_resync,
    retries: int = 1,
    prefix: str = "pocketd:",
    sleep: Callable[[float], None] | None = None,
) -> RedisHotSessions:
    s = HotSettings(
        backend="redis", url=url, key_prefix=prefix, redis_retries=retries, ttl_seconds=1800
    )
    if sleep is None:
        return RedisHotSessions(s, clock, resync, margin_seconds=200)
    return RedisHotSessions(s, clock, resync, margin_seconds=200, sleep=sleep)


def test_redis_keeps_the_ttl_on_every_key(redis_url: str, clock: FakeClock) -> None:
    sessions = redis_sessions(redis_url, clock, list)
    sessions.follow([written(turn(1, "s1")), written(turn(2, "s2"))])
    client = redis.Redis.from_url(redis_url)
    keys = sorted(k.decode() if isinstance(k, bytes) else k for k in client.keys("*"))
    assert keys == [
        "pocketd:activity",
        "pocketd:keys",
        "pocketd:loaded",
        f"pocketd:session:{session_name(NS, 's1')}",
        f"pocketd:session:{session_name(NS, 's2')}",
    ]
    for key in keys:
        ttl = client.ttl(key)
        if key == "pocketd:loaded":
            assert ttl == -1  # no expiry: its absence means Redis lost what was written
        else:
            assert 1800 < ttl <= 2000  # ttl_seconds + the margin, set by this write
    client.close()
    sessions.close()


def test_redis_a_session_expired_by_redis_is_not_reported(redis_url: str, clock: FakeClock) -> None:
    sessions = redis_sessions(redis_url, clock, list)
    sessions.follow([written(turn(1, "s1")), written(turn(2, "s2"))])
    with redis.Redis.from_url(redis_url) as client:
        client.delete(f"pocketd:session:{session_name(NS, 's1')}")  # as its EXPIRE would
    assert sessions.sessions(NS) == ["s2"]
    assert sessions.idle(float("inf")) == [(NS, "s2")]
    assert sessions.end(NS, "s1") == []
    sessions.follow([written(turn(3, "s1")), erased(1)])
    assert sessions.turns(NS, "s1") == [turn(3, "s1")]
    sessions.close()


def test_redis_a_restart_of_pocketd_keeps_the_hot_memory(redis_url: str, clock: FakeClock) -> None:
    first = redis_sessions(redis_url, clock, list)
    first.follow([written(turn(1, "s1")), written(turn(2, "s1", position=1))])
    clock.advance(30)
    first.follow([written(turn(3, "s2"))])
    before = (first.turns(NS, "s1"), first.sessions(NS), first.idle(clock.now() + 1))
    first.close()
    again = redis_sessions(redis_url, clock)  # its resync fails the test
    assert (again.turns(NS, "s1"), again.sessions(NS), again.idle(clock.now() + 1)) == before
    again.load([turn(1, "s1"), turn(2, "s1", position=1), turn(3, "s2")])  # start-up's load
    assert (again.turns(NS, "s1"), again.sessions(NS), again.idle(clock.now() + 1)) == before
    again.close()


def test_redis_load_leaves_other_prefixes_alone(redis_url: str, clock: FakeClock) -> None:
    # One prefix starts with the other: a SCAN of "pocketd:*" would find both.
    mine = redis_sessions(redis_url, clock, list, prefix="pocketd:")
    theirs = redis_sessions(redis_url, clock, list, prefix="pocketd:x:")
    mine.follow([written(turn(1))])
    theirs.follow([written(turn(2))])
    mine.load([])
    assert mine.sessions(NS) == [] and theirs.turns(NS, "s1") == [turn(2)]
    mine.close()
    theirs.close()


def test_redis_killed_is_unavailable_after_the_retries_then_resynced(
    redis_server: RedisServer, clock: FakeClock
) -> None:
    store: dict[int, HotTurn] = {}
    waits: list[float] = []
    sessions = redis_sessions(
        redis_server.url, clock, lambda: list(store.values()), retries=2, sleep=waits.append
    )
    first, second = turn(1), turn(2, position=1)
    store[1] = first
    sessions.follow([written(first)])
    redis_server.kill()
    store[2] = second  # committed by the store; Redis never hears of it
    with pytest.raises(UnavailableError) as err:
        sessions.follow([written(second)])
    assert "memory.hot.url" in str(err.value) and redis_server.url in str(err.value)
    assert len(waits) == 2 and waits == sorted(waits)  # the retries, backing off
    with pytest.raises(UnavailableError):
        sessions.turns(NS, "s1")
    redis_server.start()  # empty: nothing was saved
    assert sessions.turns(NS, "s1") == [first, second]  # resynced from the store
    assert sessions.sessions(NS) == ["s1"]
    assert sessions.end(NS, "s1") == [first, second]
    sessions.close()


def test_redis_back_with_its_data_gets_the_write_it_missed(
    redis_server: RedisServer, clock: FakeClock
) -> None:
    store = {1: turn(1)}
    sessions = redis_sessions(redis_server.url, clock, lambda: list(store.values()), retries=0)
    sessions.follow([written(store[1])])
    with redis.Redis.from_url(redis_server.url) as client:
        client.save()  # what it will come back with
    redis_server.kill()
    store[2] = turn(2, position=1)
    with pytest.raises(UnavailableError):
        sessions.follow([written(store[2])])
    redis_server.start()  # with the saved content: only the failed call says it is behind
    assert sessions.turns(NS, "s1") == [store[1], store[2]]
    sessions.close()


def test_redis_refusing_a_write_is_unavailable_then_resynced(
    redis_server: RedisServer, clock: FakeClock
) -> None:
    store = {1: turn(1)}
    sessions = redis_sessions(redis_server.url, clock, lambda: list(store.values()))
    sessions.follow([written(store[1])])
    admin = redis.Redis.from_url(redis_server.url)
    admin.config_set("maxmemory", 1)  # every write is refused (OOM), reads still answer
    store[2] = turn(2, "s2")
    with pytest.raises(UnavailableError) as err:
        sessions.follow([written(store[2])])
    assert "memory.hot.url" in str(err.value)
    admin.config_set("maxmemory", 0)
    admin.close()
    assert sessions.sessions(NS) == ["s1", "s2"]
    sessions.close()


def test_redis_restarted_empty_between_calls_is_resynced(
    redis_server: RedisServer, clock: FakeClock
) -> None:
    store = [turn(1), turn(2, "s2")]
    calls: list[int] = []

    def resync() -> list[HotTurn]:
        calls.append(1)
        return store

    sessions = redis_sessions(redis_server.url, clock, resync)
    sessions.load(store)
    calls.clear()
    redis_server.kill()
    redis_server.start()  # no call failed: the client reconnects on its own, to an empty Redis
    assert sessions.sessions(NS) == ["s1", "s2"]
    assert sessions.turns(NS, "s2") == [store[1]]
    assert len(calls) == 1
    sessions.close()


def test_open_redis_sessions_on_a_dead_port_names_the_key(clock: FakeClock) -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"
    with pytest.raises(RedisUnreachableError) as err:
        open_redis_sessions(
            HotSettings(backend="redis", url=url, redis_retries=0), clock, nothing_to_resync
        )
    assert "memory.hot.url" in str(err.value) and url in str(err.value)


def test_open_redis_sessions_answers_when_redis_runs(redis_url: str, clock: FakeClock) -> None:
    sessions = open_redis_sessions(HotSettings(backend="redis", url=redis_url), clock, list)
    sessions.healthy()
    sessions.close()


def test_shown_url_masks_a_password() -> None:
    assert shown_url("redis://127.0.0.1:6379/0") == "redis://127.0.0.1:6379/0"
    shown = shown_url("rediss://app:s3cret@cache.example:6380/2")
    assert "s3cret" not in shown and shown == "rediss://app:***@cache.example:6380/2"


@given(st.text(), st.text(), st.text(), st.text())
def test_session_names_are_one_to_one(ns: str, sid: str, ns2: str, sid2: str) -> None:
    assert parse_session(session_name(ns, sid)) == (ns, sid)
    assert (session_name(ns, sid) == session_name(ns2, sid2)) == ((ns, sid) == (ns2, sid2))
