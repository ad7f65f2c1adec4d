"""Pockets: the parts of a namespace's memory that a recall plan names, measures and prices.

A pocket's key is (kind, tier, modality, time bucket) inside one namespace. The kinds in
`pockets.bucketed_kinds` (episodes and observations) are bucketed by their event time, by ISO week
unless `pockets.time_bucket` says otherwise; the other kinds have no bucket. A record's pocket is a
pure function of its stored fields, so every record is in exactly one pocket, and a change that
moves it (a tier move, an upsert that changes the kind) moves it by rewriting the record.

The catalog interns the pockets it has seen to small integers (the metadata columns hold one per
record) and answers which pockets a filter can touch. Sizes and times come from the columns,
vector moments (centroid, radius) from the vector indexes and term statistics from the keyword
index, so the catalog itself keeps no state that could drift from them.
"""

from __future__ import annotations

import datetime as dt
import functools
import math
import threading

import msgspec

from server.core.clock import utc
from server.core.memory.model import Kind, MemoryFilter, Modality, Record, Tier
from server.core.settings import PocketSettings

TIME_BUCKETS = ("week", "month", "day", "none")
_UTC = dt.UTC


class PocketKey(msgspec.Struct, frozen=True, order=True):
    """Where a record lives inside its namespace."""

    kind: Kind
    tier: Tier
    modality: Modality
    # "2026-W48", "2026-11", "2026-11-30", or "" for an unbucketed kind.
    bucket: str = ""

    @property
    def name(self) -> str:
        """The pocket's id inside its namespace: `episode/warm/text/2026-W48`, `fact/hot/text`."""
        return _name(self)

    def span(self) -> tuple[float, float]:
        """The event times the bucket covers, [start, end); unbounded without a bucket."""
        return bucket_span(self.bucket)


@functools.lru_cache(maxsize=65_536)
def _name(key: PocketKey) -> str:
    base = f"{key.kind.name.lower()}/{key.tier.name.lower()}/{key.modality.name.lower()}"
    return f"{base}/{key.bucket}" if key.bucket else base


def bucket_of(t: float, granularity: str) -> str:
    """The bucket label of event time `t` (seconds since the epoch, UTC)."""
    if granularity == "none":
        return ""
    d = utc(max(t, 0.0))  # exact at the calendar's end (clock.utc)
    if granularity == "day":
        return d.strftime("%Y-%m-%d")
    if granularity == "month":
        return d.strftime("%Y-%m")
    year, week, _ = d.isocalendar()
    return f"{year:04d}-W{week:02d}"


@functools.lru_cache(maxsize=65_536)
def bucket_span(bucket: str) -> tuple[float, float]:
    """[start, end) of a bucket label, in seconds since the epoch."""
    if not bucket:
        return -math.inf, math.inf
    if "-W" in bucket:
        year, week = bucket.split("-W")
        start = dt.datetime.fromisocalendar(int(year), int(week), 1).replace(tzinfo=_UTC)
        end = start + dt.timedelta(days=7)
    elif bucket.count("-") == 2:
        start = dt.datetime.strptime(bucket, "%Y-%m-%d").replace(tzinfo=_UTC)
        end = start + dt.timedelta(days=1)
    else:
        start = dt.datetime.strptime(bucket, "%Y-%m").replace(tzinfo=_UTC)
        end = (start + dt.timedelta(days=32)).replace(day=1)
    return start.timestamp(), end.timestamp()


class PocketScheme:
    """Which pocket a record belongs to."""

    def __init__(self, settings: PocketSettings) -> None:
        self._granularity = settings.time_bucket
        self._bucketed = frozenset(Kind[k.upper()] for k in settings.bucketed_kinds)

    @property
    def fingerprint(self) -> str:
        """What decides a record's pocket: a placement made under another one is not valid."""
        kinds = ",".join(sorted(k.name.lower() for k in self._bucketed))
        return f"{self._granularity}:{kinds}"

    def key_of(self, rec: Record) -> PocketKey:
        bucket = bucket_of(rec.created_at, self._granularity) if rec.kind in self._bucketed else ""
        return PocketKey(rec.kind, rec.tier, rec.modality, bucket)


class PocketCatalog:
    """Every namespace's pockets, interned: pocket ids are small integers that only grow.

    Thread-safe: interning takes a lock; lookups read plain lists that only grow.
    """

    def __init__(self, scheme: PocketScheme) -> None:
        self.scheme = scheme
        self._lock = threading.Lock()
        self._ids: dict[tuple[int, PocketKey], int] = {}
        self._keys: list[PocketKey] = []
        self._ns: list[int] = []
        self._by_ns: dict[int, list[int]] = {}
        # Each namespace's pockets in key order, rebuilt when one is added (asked on every Recall).
        self._ordered: dict[int, tuple[int, ...]] = {}

    def place(self, ns_id: int, rec: Record) -> int:
        """The id of the pocket `rec` belongs to (interned on first sight)."""
        return self.intern(ns_id, self.scheme.key_of(rec))

    def intern(self, ns_id: int, key: PocketKey) -> int:
        pid = self._ids.get((ns_id, key))
        if pid is not None:
            return pid
        with self._lock:
            pid = self._ids.get((ns_id, key))
            if pid is None:
                pid = len(self._keys)
                self._keys.append(key)
                self._ns.append(ns_id)
                self._by_ns.setdefault(ns_id, []).append(pid)
                self._ordered.pop(ns_id, None)
                self._ids[(ns_id, key)] = pid
        return pid

    def restore(self, pockets: list[tuple[int, PocketKey]]) -> None:
        """Intern `pockets` ((namespace id, key), in pocket id order) into an empty catalog, so
        that each gets its id again."""
        if self._keys:
            raise ValueError("a catalog can only be restored while empty")
        if len(set(pockets)) != len(pockets):
            raise ValueError("a pocket is listed twice")
        for ns_id, key in pockets:  # distinct, into an empty catalog: ids 0, 1, 2, ... again
            self.intern(ns_id, key)

    def __len__(self) -> int:
        return len(self._keys)

    def key(self, pid: int) -> PocketKey:
        return self._keys[pid]

    def namespace_of(self, pid: int) -> int:
        return self._ns[pid]

    def of_namespace(self, ns_id: int) -> list[int]:
        """The namespace's pockets, ordered by key (kind, tier, modality, bucket)."""
        ordered = self._ordered.get(ns_id)
        if ordered is None:
            with self._lock:
                ordered = tuple(sorted(self._by_ns.get(ns_id, ()), key=lambda p: self._keys[p]))
                self._ordered[ns_id] = ordered
        return list(ordered)

    def allowed(self, ns_id: int, flt: MemoryFilter) -> list[int]:
        """The namespace's pockets that a record passing `flt` can be in: the filter's kinds and
        modalities, and buckets that overlap its time window."""
        lo = -math.inf if flt.created_after is None else flt.created_after
        hi = math.inf if flt.created_before is None else flt.created_before
        timed = lo > -math.inf or hi < math.inf
        out = []
        for pid in self.of_namespace(ns_id):
            key = self._keys[pid]
            if flt.kinds and key.kind not in flt.kinds:
                continue
            if flt.modalities and key.modality not in flt.modalities:
                continue
            if timed:
                start, end = key.span()
                if end <= lo or start >= hi:
                    continue
            out.append(pid)
        return out
