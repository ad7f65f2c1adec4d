"""The hot tier's session memory in Redis (`memory.hot.backend: redis`): a restart keeps it.

The same port and the same reading of a change as the in-process backend
(`server.core.memory.state.sessions`), kept under `memory.hot.key_prefix`:
- `<prefix>session:<session>`: a hash per session, field the record's key, value its
  `HotTurn` in MessagePack;
- `<prefix>activity`: a sorted set of the sessions by last activity (the `Clock`'s time);
- `<prefix>keys`: a hash from a record's key to its session, to remove a turn by key;
- `<prefix>loaded`: set (without expiry) when the content is loaded from the store.
`<session>` is `<len(namespace)>:<namespace>:<session id>`, which no two sessions share.

Every write sets each key it touches to expire `ttl_seconds` plus a margin later, so Redis itself
keeps the TTL: the hot memory of a pocketd that died disappears on its own, while a live one's
maintenance has the margin to end an idle session before Redis drops it. A change is applied
whole, in one MULTI. A session whose last turn goes leaves the activity set in the same
MULTI; a session hash that Redis expired on its own is not reported (readers check it exists).

The record store stays the truth. Every call retries `memory.hot.redis_retries` times with a
short backoff on a connection error or timeout, then raises `UnavailableError` naming
`memory.hot.url`. A failed call leaves the content in doubt (a change the store committed but
Redis missed), and so does a new connection to a Redis without `loaded` (one restarted empty,
which the client reconnects to silently): the next call, or the one that found it, first
replaces the content with what the `resync` callback gives (the store's current hot turns), then
serves: no acknowledged write is lost, and none is resurrected.
"""

from __future__ import annotations

import math
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar
from urllib.parse import urlsplit, urlunsplit

import msgspec
import redis
from redis.backoff import NoBackoff
from redis.client import Pipeline
from redis.connection import AbstractConnection
from redis.retry import Retry
from redis.typing import ZSetRangeResponse

from server.core.clock import Clock
from server.core.errors import UnavailableError
from server.core.memory.changes import Applied
from server.core.memory.ports import HotTurn
from server.core.memory.state.sessions import changes_of, in_order
from server.core.settings import HotSettings

T = TypeVar("T")
Resync = Callable[[], Iterable[HotTurn]]

# How long a session outlives its TTL in Redis: the maintenance that ends idle sessions runs
# every `memory.lifecycle.maintenance.interval_seconds` (an hour by default, 10% jitter).
DEFAULT_MARGIN_SECONDS = 4000.0
# A dead server is known at once (refused); a hung one within this.
_SOCKET_TIMEOUT_SECONDS = 5.0
_CONNECT_TIMEOUT_SECONDS = 2.0
# The first retry waits this long, each next one twice as long, none longer than the cap.
_BACKOFF_SECONDS = 0.05
_BACKOFF_CAP_SECONDS = 1.0


class RedisUnreachableError(Exception):
    """The hot tier's Redis cannot be reached at start-up (the message names `memory.hot.url`);
    the composition root turns it into a `StartupError` (exit 2)."""


def shown_url(url: str) -> str:
    """The URL as it may be logged: a password in it is masked."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    netloc = f"{user}:***@{host}" + (f":{parts.port}" if parts.port is not None else "")
    return urlunsplit(parts._replace(netloc=netloc))


def _text(raw: bytes | str) -> str:
    """A name as Redis answers it (in bytes: the client is not asked to decode, the turns are
    MessagePack)."""
    return raw.decode() if isinstance(raw, bytes) else raw


def _scored(reply: ZSetRangeResponse) -> list[tuple[str, float]]:
    """The (member, score) pairs of a sorted set's WITHSCORES reply."""
    pairs: list[tuple[str, float]] = []
    for pair in reply:
        assert not isinstance(pair, bytes | str), "asked WITHSCORES"
        member, score = pair
        pairs.append((_text(member), float(score)))
    return pairs


def session_name(namespace: str, session_id: str) -> str:
    """A session as one string (a set member, a key's tail), unambiguous for any names."""
    return f"{len(namespace)}:{namespace}:{session_id}"


def parse_session(name: str) -> tuple[str, str]:
    """(namespace, session id) of a `session_name`."""
    size, rest = name.split(":", 1)
    n = int(size)
    return rest[:n], rest[n + 1 :]


class RedisHotSessions:
    """`HotSessions` in Redis. Calls are serialised by one lock (the writer's `follow` and the
    maintenance's reads), so the content only changes under it."""

    def __init__(
        self,
        settings: HotSettings,
        clock: Clock,
        resync: Resync,
        margin_seconds: float = DEFAULT_MARGIN_SECONDS,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._url = shown_url(settings.url)
        # Retries are ours (they resync and count `redis_retries`), not the client's.
        self._client = redis.Redis.from_url(
            settings.url,
            socket_timeout=_SOCKET_TIMEOUT_SECONDS,
            socket_connect_timeout=_CONNECT_TIMEOUT_SECONDS,
            retry=Retry(NoBackoff(), 0),
            redis_connect_func=self._connected,
        )
        self._retries = settings.redis_retries
        self._expire = math.ceil(settings.ttl_seconds + margin_seconds)
        self._clock = clock
        self._resync = resync
        self._sleep = sleep
        prefix = settings.key_prefix
        self._activity = f"{prefix}activity"
        self._index = f"{prefix}keys"
        self._loaded = f"{prefix}loaded"
        self._session_prefix = f"{prefix}session:"
        self._lock = threading.Lock()
        self._dirty = False
        self._encode = msgspec.msgpack.Encoder().encode
        self._decode = msgspec.msgpack.Decoder(HotTurn).decode

    # -- the port --------------------------------------------------------------------------

    def follow(self, applied: Sequence[Applied]) -> None:
        if applied:
            self._call(lambda: self._follow(applied))

    def turns(self, namespace: str, session_id: str) -> list[HotTurn]:
        key = self._session_key(session_name(namespace, session_id))
        return self._call(lambda: self._turns(key))

    def idle(self, before: float) -> list[tuple[str, str]]:
        return self._call(lambda: self._idle(before))

    def sessions(self, namespace: str) -> list[str]:
        return self._call(lambda: self._sessions(namespace))

    def end(self, namespace: str, session_id: str) -> list[HotTurn]:
        return self._call(lambda: self._end(session_name(namespace, session_id)))

    def load(self, turns: Iterable[HotTurn]) -> None:
        held = list(turns)  # a retry replays it
        self._call(lambda: self._replace(held))

    def healthy(self) -> None:
        self._call(self._client.ping)

    def close(self) -> None:
        self._client.close()

    # -- retries and resync ----------------------------------------------------------------

    def _call(self, work: Callable[[], T]) -> T:
        """`work` under the lock, after a resync when the content is in doubt; retried on a
        connection error or timeout, then UNAVAILABLE."""
        with self._lock:
            for attempt in range(self._retries + 1):
                try:
                    return self._attempt(work)
                except (redis.ConnectionError, redis.TimeoutError) as exc:
                    self._dirty = True
                    if attempt == self._retries:
                        raise UnavailableError(
                            f"the hot tier's Redis (memory.hot.url: {self._url}) is unreachable"
                            f" after {attempt + 1} tries: {exc}"
                        ) from exc
                    self._sleep(min(_BACKOFF_CAP_SECONDS, _BACKOFF_SECONDS * 2**attempt))
                except redis.RedisError as exc:
                    self._dirty = True  # a MULTI with a failed command applied the others
                    raise UnavailableError(
                        f"the hot tier's Redis (memory.hot.url: {self._url}) failed: {exc}"
                    ) from exc
        raise AssertionError("unreachable")  # the last attempt returns or raises

    def _attempt(self, work: Callable[[], T]) -> T:
        # Twice when a connection made during the work finds Redis emptied: resync, then again.
        for _ in range(2):
            if self._dirty:
                self._client.ping()  # the store is read only once Redis answers
                self._replace(list(self._resync()))
                self._dirty = False
            done = work()
            if not self._dirty:
                break
        return done

    def _connected(self, conn: AbstractConnection) -> None:
        """On each new connection (the client's hook, under the lock like every command): a
        Redis without `loaded` lost what was written (restarted without persistence), so the
        content is in doubt."""
        # The default hook (AUTH, SELECT), then the check. redis-py leaves both untyped.
        conn.on_connect()  # type: ignore[no-untyped-call]
        conn.send_command("EXISTS", self._loaded)  # type: ignore[no-untyped-call]
        if not conn.read_response():
            self._dirty = True

    # -- the work, each in one round trip to read and one MULTI to write --------------------

    def _session_key(self, name: str) -> str:
        return self._session_prefix + name

    def _turn(self, raw: bytes | str) -> HotTurn:
        return self._decode(raw.encode() if isinstance(raw, str) else raw)

    def _turns(self, skey: str) -> list[HotTurn]:
        return in_order(map(self._turn, self._client.hvals(skey)))

    def _follow(self, applied: Sequence[Applied]) -> None:
        changes = list(changes_of(applied))
        keys = sorted({key for key, _ in changes})
        where: dict[int, str | None] = {
            key: None if held is None else _text(held)
            for key, held in zip(
                keys, self._client.hmget(self._index, [str(k) for k in keys]), strict=True
            )
        }
        touched = {name for name in where.values() if name is not None}
        touched |= {session_name(t.namespace, t.session_id) for _, t in changes if t is not None}
        names = sorted(touched)
        read = self._client.pipeline(transaction=False)
        for name in names:
            read.hkeys(self._session_key(name))
        had = {name: {int(f) for f in got} for name, got in zip(names, read.execute(), strict=True)}
        fields = {name: set(held) for name, held in had.items()}
        # What the change leaves: each session's fields, its written turns, the active ones.
        written: dict[str, dict[int, HotTurn]] = defaultdict(dict)
        active: set[str] = set()
        for key, turn in changes:
            old = where[key]
            if old is not None:
                fields[old].discard(key)
                written[old].pop(key, None)
            if turn is None:
                where[key] = None
                continue
            name = where[key] = session_name(turn.namespace, turn.session_id)
            fields[name].add(key)
            written[name][key] = turn
            active.add(name)
        now = self._clock.now()
        write = self._client.pipeline(transaction=True)
        for name in names:
            skey = self._session_key(name)
            if not fields[name]:
                write.delete(skey)
                write.zrem(self._activity, name)
                continue
            gone = had[name] - fields[name]
            if gone:
                write.hdel(skey, *map(str, gone))
            if written[name]:
                write.hset(
                    skey, mapping={str(k): self._encode(t) for k, t in written[name].items()}
                )
            write.expire(skey, self._expire)
            if name in active:
                write.zadd(self._activity, {name: now})
        dropped = [str(k) for k, name in where.items() if name is None]
        if dropped:
            write.hdel(self._index, *dropped)
        if any(name is not None for name in where.values()):
            write.hset(
                self._index,
                mapping={str(k): name for k, name in where.items() if name is not None},
            )
        self._expire_shared(write)
        write.execute()

    def _expire_shared(self, write: Pipeline) -> None:
        write.expire(self._activity, self._expire)
        write.expire(self._index, self._expire)

    def _live(self, names: list[str]) -> list[bool]:
        """Whether each session's hash still exists (Redis may have expired it on its own)."""
        read = self._client.pipeline(transaction=False)
        for name in names:
            read.exists(self._session_key(name))
        return [bool(n) for n in read.execute()]

    def _idle(self, before: float) -> list[tuple[str, str]]:
        late = _scored(
            self._client.zrangebyscore(self._activity, "-inf", f"({before!r}", withscores=True)
        )
        live = self._live([name for name, _ in late])
        found = sorted(
            (score, parse_session(name)) for (name, score), ok in zip(late, live, strict=True) if ok
        )
        return [session for _, session in found]

    def _sessions(self, namespace: str) -> list[str]:
        names = [name for name, _ in _scored(self._held())]
        mine = [name for name in names if parse_session(name)[0] == namespace]
        live = self._live(mine)
        return sorted(parse_session(n)[1] for n, ok in zip(mine, live, strict=True) if ok)

    def _held(self) -> ZSetRangeResponse:
        """Every session with its last activity."""
        return self._client.zrange(self._activity, 0, -1, withscores=True)

    def _end(self, name: str) -> list[HotTurn]:
        skey = self._session_key(name)
        with self._client.pipeline() as pipe:
            while True:
                try:
                    # WATCHed: Redis expiring the hash between the read and the MULTI reads
                    # again.
                    pipe.watch(skey)  # type: ignore[no-untyped-call]  # untyped in redis-py
                    turns = [self._turn(v) for v in pipe.hvals(skey)]
                    pipe.multi()
                    pipe.delete(skey)
                    pipe.zrem(self._activity, name)
                    if turns:
                        pipe.hdel(self._index, *[str(t.key) for t in turns])
                    pipe.execute()
                    return in_order(turns)
                except redis.WatchError:
                    continue

    def _replace(self, turns: list[HotTurn]) -> None:
        """Make the content exactly `turns`: sessions held before keep their last activity, new
        ones are active now."""
        held = dict(_scored(self._held()))
        by_key = {t.key: t for t in turns}  # the same key twice: the last one counts
        sessions: dict[str, dict[int, HotTurn]] = defaultdict(dict)
        for key, turn in by_key.items():
            sessions[session_name(turn.namespace, turn.session_id)][key] = turn
        now = self._clock.now()
        write = self._client.pipeline(transaction=True)
        write.delete(self._activity, self._index, *map(self._session_key, held))
        write.set(self._loaded, 1)
        for name, mine in sessions.items():
            skey = self._session_key(name)
            write.hset(skey, mapping={str(k): self._encode(t) for k, t in mine.items()})
            write.expire(skey, self._expire)
        if sessions:
            write.zadd(self._activity, {name: held.get(name, now) for name in sessions})
            write.hset(
                self._index,
                mapping={str(k): name for name, mine in sessions.items() for k in mine},
            )
            self._expire_shared(write)
        write.execute()


def open_redis_sessions(
    settings: HotSettings,
    clock: Clock,
    resync: Resync,
    margin_seconds: float = DEFAULT_MARGIN_SECONDS,
) -> RedisHotSessions:
    """The Redis backend, once its server answers (after the retries); else
    `RedisUnreachableError` naming `memory.hot.url`."""
    sessions = RedisHotSessions(settings, clock, resync, margin_seconds)
    try:
        sessions.healthy()
    except UnavailableError as exc:
        sessions.close()
        raise RedisUnreachableError(
            f"memory.hot.backend is redis, but memory.hot.url ({shown_url(settings.url)}) cannot"
            f" be reached: {exc.__cause__ or exc}; start that Redis, set memory.hot.url to one"
            " that runs, or set memory.hot.backend: memory"
        ) from exc
    return sessions
