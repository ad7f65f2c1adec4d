"""The tool-result cache (seed 000 §3.1, 001 §3.2): an agent that calls the same idempotent tool
with the same arguments gets the stored result instead of paying for the call again.

- The key is the namespace, the tool and the canonical JSON of its arguments (keys sorted, no
  insignificant whitespace, NaN refused), so `{"a": 1, "b": 2}` and `{"b": 2, "a": 1}` are one
  entry, and one tenant never reads another's results. Each tenant has its own `capacity`
  (`memo.PartitionedLRU`), so one tenant's calls never evict another's entries. (Arguments
  arrive as JSON, whose keys are strings; a non-string key is turned into one, as `json.dumps`
  does.)
- Only tools declared idempotent are cached; a result larger than `max_result_bytes` is not.
- Entries live `ttl` seconds (per tool), and the least recently used one is evicted beyond
  `capacity` (512 by default).
- The cache never calls a tool: results enter through the API, as the agent reports them.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass

from server.core.clock import Clock
from server.core.memo import PartitionedLRU
from server.core.tenancy import tenant_of

JsonValue = object


class ToolArgsError(ValueError):
    """Arguments that have no canonical JSON form (NaN, a set, an object...)."""


def canonical(args: JsonValue) -> str:
    try:
        return json.dumps(
            args, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        )
    except (TypeError, ValueError) as e:
        raise ToolArgsError(f"tool arguments have no canonical JSON form: {e}") from e


@dataclass(frozen=True)
class Cached:
    result: str
    stored_at: float
    expires_at: float


class ToolCache:
    def __init__(self, clock: Clock, capacity: int = 512, max_result_bytes: int = 65_536) -> None:
        self._clock = clock
        self._max_bytes = max_result_bytes
        self._lock = threading.Lock()
        self._entries: PartitionedLRU[tuple[str, str, str], Cached] = PartitionedLRU(capacity)
        self.hits = 0
        self.misses = 0

    def get(
        self, namespace: str, tool: str, args: JsonValue, max_age: float | None = None
    ) -> Cached | None:
        """The result stored for these arguments within its TTL, and no older than `max_age`
        (the asking task's own TTL for the tool); None otherwise, or for arguments that have no
        canonical form."""
        key = _key(namespace, tool, args)
        if key is None:
            return None
        now = self._clock.now()
        part = tenant_of(namespace)
        with self._lock:
            hit = self._entries.get(part, key)
            if hit is not None and max_age is not None and now - hit.stored_at > max_age:
                self.misses += 1
                return None
            if hit is None or hit.expires_at <= now:
                if hit is not None:
                    self._entries.pop(part, key)
                self.misses += 1
                return None
            self.hits += 1
            return hit

    def put(
        self, namespace: str, tool: str, args: JsonValue, result: str, ttl: float, idempotent: bool
    ) -> bool:
        """Store a reported result; False when it is not cacheable (a tool not declared
        idempotent, a TTL of 0, or a result too large)."""
        if not idempotent or ttl <= 0 or len(result.encode()) > self._max_bytes:
            return False
        key = _key(namespace, tool, args)
        if key is None:
            return False
        now = self._clock.now()
        part = tenant_of(namespace)
        with self._lock:
            same = self._entries.get(part, key)
            if same is not None and same.result == result and same.expires_at > now:
                return True  # the same result reported again (a retried Step): as old as it was
            self._entries.put(part, key, Cached(result, now, now + ttl))
        return True

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)


def _key(namespace: str, tool: str, args: JsonValue) -> tuple[str, str, str] | None:
    """The cache key; None for arguments with no canonical JSON form (never cached)."""
    try:
        return (namespace, tool, canonical(args))
    except ToolArgsError:
        return None
