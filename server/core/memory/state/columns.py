"""Columnar metadata of every live memory, indexed by store key, for fast filtering.

The ANN and BM25 indexes return keys; these arrays answer "does key k pass the filter?" for a
whole candidate list with a few vectorised numpy operations, and list a partition's matching keys
when a filter is selective enough to scan exactly. Loaded from the record store at start-up and
kept current by the writer. Readers may run concurrently with the single writer: each update
writes plain array slots, and arrays only grow (a reader holding an old array sees old data).

`rev` is the last revision followed. `snapshot()` copies the whole state with it, and
`restore(snapshot)` takes it back into an empty instance, so a start-up reads the snapshot and
replays the store's changes since its revision instead of scanning every record
(`server.core.memory.state.checkpoint`).
"""

from __future__ import annotations

import math
import threading
from array import array
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from server.core.memory.changes import Applied
from server.core.memory.model import MemoryFilter, Record, Tier
from server.core.memory.pockets import PocketCatalog
from server.core.memory.ports import ColumnsSnapshot
from server.core.memory.roles import role_of
from server.core.memory.script import script_of

BoolArray = npt.NDArray[np.bool_]
KeyArray = npt.NDArray[np.int64]
# The per-key arrays, `ns` last (see `_grow`), and each one's value for an empty row.
ARRAYS = (
    "kind",
    "modality",
    "importance",
    "created",
    "refreshed",
    "expires",
    "obsolete",
    "session",
    "tier",
    "pocket",
    "turn",
    "says_when",
    "script",
    "role",
    "stored",
    "accesses",
    "last_access",
    "ns",
)
_EMPTY = {"ns": -1, "expires": np.inf, "pocket": -1, "turn": -1, "last_access": np.nan}


class Columns:
    """Per-key arrays: namespace id, kind, modality, importance, times, flags, session id, tier,
    pocket id (placed by the pocket catalog), turn, and whether the text says when."""

    def __init__(self, catalog: PocketCatalog, capacity: int = 1024) -> None:
        self.catalog = catalog
        self._lock = threading.Lock()
        self._ns_ids: dict[str, int] = {}
        self._session_ids: dict[str, int] = {"": 0}
        self.tags: dict[int, frozenset[str]] = {}
        # pocket id → live rows in it.
        self._sizes: dict[int, int] = {}
        # namespace id → its live obsolete rows (a Recall of a namespace with none skips the
        # work of passing obsolete matches on).
        self._obsolete: dict[int, int] = {}
        # pocket id → (earliest, latest) event time of any row ever put in it: an envelope (a
        # row that leaves does not shrink it), kept without a pass over the rows.
        self._spans: dict[int, tuple[float, float]] = {}
        # (namespace id, session id) → the keys of its turns, for neighbours and next positions.
        self._sessions: dict[tuple[int, int], array[int]] = {}
        # namespace id → (event time, session id) of its latest hot session turn ever put: the
        # namespace's current session (`current_session`); and the event time of its latest
        # session turn, hot or not (`latest_turn`).
        self._newest: dict[int, tuple[float, int]] = {}
        self._latest: dict[int, float] = {}
        self.rev = 0  # the last revision followed
        # Accesses folded in (`touch`): they have no revision, so a snapshot is due after them
        # too. After a crash the access columns lag the store by those since the last snapshot
        # (retention reads them; nothing else does).
        self.touches = 0
        # A change failed half-way: these columns may miss part of it while `rev` moves past it,
        # so no snapshot of them may be kept (the next start-up scans the store).
        self.broken = False
        self._alloc(capacity)

    def _alloc(self, n: int) -> None:
        self.ns = np.full(n, -1, dtype=np.int32)
        self.kind = np.zeros(n, dtype=np.int8)
        self.modality = np.zeros(n, dtype=np.int8)
        self.importance = np.zeros(n, dtype=np.int8)
        self.created = np.zeros(n, dtype=np.float64)
        self.refreshed = np.zeros(n, dtype=np.float64)
        self.expires = np.full(n, np.inf, dtype=np.float64)
        self.obsolete = np.zeros(n, dtype=np.bool_)
        self.session = np.zeros(n, dtype=np.int32)
        self.tier = np.zeros(n, dtype=np.int8)
        self.pocket = np.full(n, -1, dtype=np.int32)
        self.turn = np.full(n, -1, dtype=np.int32)
        self.says_when = np.zeros(n, dtype=np.bool_)
        # The script its text is mostly written in (`server.core.memory.script.Script`).
        self.script = np.zeros(n, dtype=np.int8)
        # The chat role its speaker names (`server.core.memory.roles.Role`).
        self.role = np.zeros(n, dtype=np.int8)
        # What retention weighs (`kernels.retention`): when pocketd stored it, how often and when
        # last it was returned (NaN: never).
        self.stored = np.zeros(n, dtype=np.float64)
        self.accesses = np.zeros(n, dtype=np.int32)
        self.last_access = np.full(n, np.nan, dtype=np.float64)

    def _grow(self, key: int) -> None:
        n = len(self.ns)
        if key < n:
            return
        m = max(key + 1, n * 2)
        # `ns` is swapped in last: a reader that takes `ns` first and slices the other arrays
        # to its length never mixes arrays of two sizes (readers take no lock).
        for name in ARRAYS:
            old = getattr(self, name)
            new = np.empty(m, dtype=old.dtype)
            new[:n] = old
            new[n:] = _EMPTY.get(name, 0)
            setattr(self, name, new)

    def ns_id(self, namespace: str) -> int:
        """The interned id of a namespace (-2 for one never seen: it matches nothing)."""
        return self._ns_ids.get(namespace, -2)

    def namespaces(self) -> dict[str, int]:
        return dict(self._ns_ids)

    def session_id(self, session: str) -> int:
        return self._session_ids.get(session, -2)

    def current_session(self, ns_id: int) -> tuple[float, int]:
        """(event time, session id) of the namespace's current session: the one of its latest
        turn that arrived hot ((-inf, -1) before any). It stays current until a later hot turn
        of another session begins one."""
        return self._newest.get(ns_id, (-math.inf, -1))

    def latest_turn(self, ns_id: int) -> float:
        """The event time of the namespace's latest session turn, hot or not (-inf before any)."""
        return self._latest.get(ns_id, -math.inf)

    def put(self, rec: Record) -> int:
        """Insert or update the row of `rec.key`; return the pocket it is placed in."""
        with self._lock:
            return self._put(rec)

    def _put(self, rec: Record) -> int:
        self._grow(rec.key)
        k = rec.key
        ns = self._ns_ids.setdefault(rec.namespace, len(self._ns_ids))
        sid = self._session_ids.setdefault(rec.session_id, len(self._session_ids))
        pocket = self.catalog.place(ns, rec)
        self._count_out(k)
        self._obsolete_out(k)
        if rec.obsolete:
            self._obsolete[ns] = self._obsolete.get(ns, 0) + 1
        self._sizes[pocket] = self._sizes.get(pocket, 0) + 1
        lo, hi = self._spans.get(pocket, (math.inf, -math.inf))
        self._spans[pocket] = (min(lo, rec.created_at), max(hi, rec.created_at))
        self.kind[k] = int(rec.kind)
        self.modality[k] = int(rec.modality)
        self.importance[k] = rec.importance
        self.created[k] = rec.created_at
        self.refreshed[k] = rec.refreshed_at or rec.created_at
        self.expires[k] = math.inf if rec.expires_at is None else rec.expires_at
        self.obsolete[k] = rec.obsolete
        self._leave_session(k)
        self.session[k] = sid
        self.tier[k] = int(rec.tier)
        self.pocket[k] = pocket
        self.turn[k] = rec.turn
        self.says_when[k] = rec.says_when
        self.script[k] = int(script_of(rec.text))
        self.role[k] = int(role_of(rec.speaker))
        self.stored[k] = rec.stored_at or rec.created_at
        self.accesses[k] = rec.access_count
        self.last_access[k] = np.nan if rec.last_accessed_at is None else rec.last_accessed_at
        if rec.session_id and rec.turn >= 0:
            self._sessions.setdefault((ns, sid), array("q")).append(k)
            if rec.tier == Tier.HOT and rec.created_at >= self._newest.get(ns, (-math.inf, 0))[0]:
                self._newest[ns] = (rec.created_at, sid)
            self._latest[ns] = max(self._latest.get(ns, -math.inf), rec.created_at)
        if rec.tags:
            self.tags[k] = frozenset(rec.tags)
        else:
            self.tags.pop(k, None)
        self.ns[k] = ns  # last: a reader that sees the namespace sees a complete row
        return pocket

    def current(self, keys: KeyArray, kind: int | None = None) -> BoolArray:
        """Which of `keys` are live, not obsolete and (if given) of `kind`; keys beyond the
        arrays are not."""
        out = np.zeros(len(keys), dtype=np.bool_)
        inside = (keys >= 0) & (keys < len(self.ns))
        k = keys[inside]
        ok = (self.ns[k] >= 0) & ~self.obsolete[k]
        if kind is not None:
            ok &= self.kind[k] == kind
        out[inside] = ok
        return out

    def follow(self, applied: Sequence[Applied]) -> None:
        """Follow committed revisions: a written record is put, an erased one dropped. A change
        is taken whole (a snapshot never holds half of one)."""
        with self._lock:
            try:
                for a in applied:
                    if a.record is None:
                        self._drop(a.key)
                    else:
                        self._put(a.record)
                    self.rev = max(self.rev, a.rev)
            except BaseException:
                self.broken = True
                raise

    def touch(self, tally: dict[int, tuple[int, float]]) -> None:
        """Fold counted accesses in, as the store did (`Touch` has no revision: the writer hands
        the tally here after committing it)."""
        with self._lock:
            self.touches += 1
            for k, (n, last) in tally.items():
                if 0 <= k < len(self.ns) and self.ns[k] >= 0:
                    self.accesses[k] += n
                    prev = self.last_access[k]
                    self.last_access[k] = last if np.isnan(prev) else max(prev, last)

    def drop(self, key: int) -> None:
        with self._lock:
            self._drop(key)

    def obsolete_count(self, ns_id: int) -> int:
        """The namespace's live obsolete memories."""
        return self._obsolete.get(ns_id, 0)

    def _obsolete_out(self, key: int) -> None:
        """Take a live obsolete row out of its namespace's count (before it changes or goes)."""
        if key < len(self.ns) and (ns := int(self.ns[key])) >= 0 and self.obsolete[key]:
            self._obsolete[ns] -= 1

    def _drop(self, key: int) -> None:
        if key < len(self.ns):
            self._obsolete_out(key)
            self._leave_session(key)
            self._count_out(key)
            self.ns[key] = -1
            self.tags.pop(key, None)

    def snapshot(self) -> ColumnsSnapshot:
        """A copy of the whole state as of `rev` (under the lock: a few copies of arrays)."""
        with self._lock:  # copies only: the writer waits for no Python loop over the rows
            live = np.nonzero(self.ns >= 0)[0]
            rows = int(live[-1]) + 1 if len(live) else 0
            arrays = {name: getattr(self, name)[:rows].copy() for name in ARRAYS}
            sessions = list(self._sessions.items())
            heads = np.array(
                [(ns, sid, len(keys)) for (ns, sid), keys in sessions], dtype=np.int64
            ).reshape(-1, 3)
            joined = np.concatenate(
                [np.frombuffer(keys, dtype=np.int64).copy() for _, keys in sessions]
                or [np.empty(0, np.int64)]
            )
            tags, rev = dict(self.tags), self.rev
            namespaces, session_ids = dict(self._ns_ids), dict(self._session_ids)
            sizes, spans = dict(self._sizes), dict(self._spans)
            cat = self.catalog
            pockets = [(cat.namespace_of(p), cat.key(p)) for p in range(len(cat))]
        return ColumnsSnapshot(
            rev=rev,
            scheme=cat.scheme.fingerprint,
            arrays=arrays,
            namespaces=namespaces,
            session_ids=session_ids,
            tags={k: sorted(v) for k, v in tags.items()},
            sizes=sizes,
            spans=spans,
            session_heads=heads,
            session_keys=joined,
            pockets=pockets,
        )

    def restore(self, snap: ColumnsSnapshot) -> None:
        """Take `snap` into these (empty) columns, under the same pocket scheme."""
        with self._lock:
            if self.rev or len(self.catalog) or self._ns_ids:
                raise ValueError("columns can only be restored while empty")
            if snap.scheme != self.catalog.scheme.fingerprint:
                raise ValueError(
                    f"the snapshot's pocket scheme {snap.scheme!r} is not the configured"
                    f" {self.catalog.scheme.fingerprint!r}"
                )
            # Everything is checked before anything is taken: a snapshot that does not fit
            # leaves the columns empty, to be rebuilt by a scan.
            missing = [n for n in ARRAYS if n not in snap.arrays]
            if missing:
                raise ValueError(f"the snapshot has no {', '.join(missing)} column")
            rows = len(snap.arrays["ns"])
            for name in ARRAYS:
                got, want = snap.arrays[name], getattr(self, name).dtype
                if len(got) != rows or got.dtype != want:
                    raise ValueError(
                        f"the snapshot's {name} is {len(got)} rows of {got.dtype}, not {rows}"
                        f" of {want}"
                    )
            if int(snap.session_heads[:, 2].sum()) != len(snap.session_keys):
                raise ValueError("the snapshot's session lists do not add up")
            self.catalog.restore(snap.pockets)
            self._alloc(max(rows, 1024))
            for name in ARRAYS:
                getattr(self, name)[:rows] = snap.arrays[name]
            self._ns_ids = dict(snap.namespaces)
            self._session_ids = dict(snap.session_ids)
            self.tags = {k: frozenset(v) for k, v in snap.tags.items()}
            self._sizes = dict(snap.sizes)
            live = self.ns[:rows] >= 0
            stale = np.bincount(self.ns[:rows][live & self.obsolete[:rows]])
            self._obsolete = {i: int(n) for i, n in enumerate(stale.tolist()) if n}
            self._spans = dict(snap.spans)
            self._sessions = {}
            self._newest = {}
            self._latest = {}
            at = 0
            for ns, sid, n in snap.session_heads.tolist():
                keys = snap.session_keys[at : at + n]
                self._sessions[(ns, sid)] = array("q", keys.tolist())
                at += n
                if n:
                    latest = float(self.created[keys].max())
                    self._latest[ns] = max(self._latest.get(ns, -math.inf), latest)
                hot = keys[self.tier[keys] == int(Tier.HOT)]
                if len(hot):
                    latest = float(self.created[hot].max())
                    if latest >= self._newest.get(ns, (-math.inf, 0))[0]:
                        self._newest[ns] = (latest, sid)
            self.rev = snap.rev

    def _count_out(self, key: int) -> None:
        """Take a live row out of its pocket's count (before it moves or goes)."""
        if key < len(self.ns) and self.ns[key] >= 0 and (p := int(self.pocket[key])) >= 0:
            self._sizes[p] -= 1

    def _leave_session(self, key: int) -> None:
        """Take a live row out of its session's turn list (before it moves or goes)."""
        if key < len(self.ns) and self.ns[key] >= 0 and self.turn[key] >= 0:
            keys = self._sessions.get((int(self.ns[key]), int(self.session[key])))
            if keys is not None and key in keys:
                keys.remove(key)

    def session_keys(self, ns_id: int, session: str) -> KeyArray:
        """The live keys of a session's turns, in turn order."""
        keys = self._session_copy(ns_id, self.session_id(session))
        return keys[np.argsort(self.turn[keys], kind="stable")] if len(keys) else keys

    def _session_copy(self, ns_id: int, sid: int) -> KeyArray:
        with self._lock:  # a copy: the writer may append to the list meanwhile
            return np.array(self._sessions.get((ns_id, sid), ()), dtype=np.int64)

    def next_turn(self, ns_id: int, session: str) -> int:
        """One past the largest turn of the session (0 for a new one)."""
        keys = self.session_keys(ns_id, session)
        return int(self.turn[keys].max()) + 1 if len(keys) else 0

    def neighbours(self, key: int, n: int) -> tuple[KeyArray, KeyArray]:
        """Up to `n` turns of the same session before and after `key`, in turn order."""
        empty = np.empty(0, np.int64)
        return self.neighbours_many([key], n).get(key, (empty, empty))

    def neighbours_many(self, keys: Sequence[int], n: int) -> dict[int, tuple[KeyArray, KeyArray]]:
        """`neighbours` of many keys, sorting each session's turns once (an import or a Forget
        of a long session would otherwise sort it once per key)."""
        out: dict[int, tuple[KeyArray, KeyArray]] = {}
        groups: dict[tuple[int, int], list[int]] = {}
        for key in keys:
            if 0 <= key < len(self.ns) and self.ns[key] >= 0 and self.turn[key] >= 0 and n > 0:
                groups.setdefault((int(self.ns[key]), int(self.session[key])), []).append(key)
        for (ns_id, sid), mine in groups.items():
            ks = self._session_copy(ns_id, sid)
            turns = self.turn[ks]
            order = np.argsort(turns, kind="stable")
            ks, turns = ks[order], turns[order]
            for key in mine:
                t = int(self.turn[key])
                left = int(np.searchsorted(turns, t, side="left"))
                right = int(np.searchsorted(turns, t, side="right"))
                out[key] = (ks[max(0, left - n) : left], ks[right : right + n])
        return out

    def mask(
        self,
        keys: KeyArray,
        ns_id: int,
        flt: MemoryFilter,
        now: float,
        include_obsolete: bool,
        include_expired: bool,
    ) -> BoolArray:
        """Which of `keys` are live in namespace `ns_id` and pass the filter.

        A key beyond the arrays (an index can still return a forgotten record's key after a
        restart, until the indexer has replayed the deletion) is simply not live.
        """
        inside = (keys >= 0) & (keys < len(self.ns))
        if not inside.all():
            m0 = np.zeros(len(keys), dtype=np.bool_)
            m0[inside] = self.mask(keys[inside], ns_id, flt, now, include_obsolete, include_expired)
            return m0
        m: BoolArray = self.ns[keys] == ns_id
        if not include_obsolete:
            m &= ~self.obsolete[keys]
        if not include_expired:
            m &= self.expires[keys] > now
        if flt.session_id:
            m &= self.session[keys] == self.session_id(flt.session_id)
        if flt.kinds:
            m &= np.isin(self.kind[keys], np.array([int(k) for k in flt.kinds], dtype=np.int8))
        if flt.modalities:
            m &= np.isin(
                self.modality[keys], np.array([int(x) for x in flt.modalities], dtype=np.int8)
            )
        if flt.min_importance:
            m &= self.importance[keys] >= flt.min_importance
        if flt.created_after is not None:
            m &= self.created[keys] >= flt.created_after
        if flt.created_before is not None:
            m &= self.created[keys] < flt.created_before
        if flt.tags:
            wanted = frozenset(flt.tags)
            idx = np.nonzero(m)[0]
            for i in idx:
                if not (self.tags.get(int(keys[i]), frozenset()) & wanted):
                    m[i] = False
        return m

    def pocket_sizes(self, ns_id: int, pockets: int) -> npt.NDArray[np.int64]:
        """Live records per pocket id (0..pockets-1) of a namespace (kept as rows come and go,
        so this costs one entry per pocket, not a pass over the rows)."""
        out = np.zeros(pockets, dtype=np.int64)
        for p in self.catalog.of_namespace(ns_id):
            if p < pockets:
                out[p] = self._sizes.get(p, 0)
        return out

    def pocket_size(self, pocket: int) -> int:
        return self._sizes.get(pocket, 0)

    def pocket_span(self, pocket: int) -> tuple[float, float] | None:
        return self._spans.get(pocket)

    def matching_keys(
        self,
        ns_id: int,
        pockets: list[int] | None,
        flt: MemoryFilter,
        now: float,
        include_obsolete: bool,
        include_expired: bool,
    ) -> KeyArray:
        """Every live key of the namespace (and of `pockets`) that passes the filter."""
        base = self.ns == ns_id  # `ns` first (see `_grow`)
        if pockets is not None:
            base &= in_pockets(self.pocket[: len(base)], pockets)
        keys = np.nonzero(base)[0].astype(np.int64)
        return keys[self.mask(keys, ns_id, flt, now, include_obsolete, include_expired)]


def in_pockets(column: npt.NDArray[np.int32], pockets: Sequence[int]) -> BoolArray:
    """Which rows of a pocket column (-1: no row) lie in `pockets`, on a copy: the writer moves
    a live row to another pocket without a lock (a tier change), and `np.isin` reads its input
    twice (its range, then by it), so on the live column it could see two values of one row
    and fail."""
    snapshot = column.copy()
    out: BoolArray = np.isin(snapshot, np.asarray(pockets, dtype=np.int32))
    return out
