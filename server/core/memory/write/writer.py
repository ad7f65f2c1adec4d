"""The single writer: every mutation of memory becomes a typed change (`changes.py`) here.

Remember (gate, near-duplicate merge, upsert, supersede), Forget, the tier moves and the access
statistics all build a list of operations and hand it to `_commit`, which applies it in one
store transaction (each operation gets its revision), then passes what was applied to the
synchronous followers (the metadata columns and the hot tier), then returns; only then is the
call acknowledged. One lock serialises all of it, so the near-duplicate check sees every earlier
write, a merge that read a record can never write it back after a Forget, and the indexer (which
takes the same lock to mark rows indexed) never marks a row before the hot tier has it.
"""

from __future__ import annotations

import os
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import msgspec
import numpy as np

from server.core.clock import Clock
from server.core.deadline import Deadline
from server.core.errors import Location, NotFoundError, UnavailableError
from server.core.memory.changes import Applied, Cause, Erase, Follower, Op, Put, Touch
from server.core.memory.model import (
    GateDecision,
    Kind,
    NewMemory,
    Record,
    Supersession,
    Tier,
    Vector,
    WriteResult,
    unit,
)
from server.core.memory.ports import HotTier, MetadataColumns, RecordStore, VectorIndexSet
from server.core.memory.timecues import has_time_expression
from server.core.memory.write.dedup import MergePolicy, normalised
from server.core.memory.write.gate import ImportanceGate
from server.core.memory.write.supersede import SupersedePolicy
from server.core.settings import MemorySettings

_DAY = 86_400.0
BACKPRESSURE_TIMEOUT_S = 30.0
# Candidates per item from the warm index: the best may be vetoed by the merge policy (a
# sibling one digit apart), and identical texts tie at cosine 1.0.
DEDUP_CANDIDATES = 8
# The candidates the merge policy weighs for one item, best cosine first (the index's, the hot
# tier's and the batch's own together).
MERGE_CANDIDATES = 16
# Hot memories moved to warm per change (the maintenance thread moves the rest on later ticks).
TIER_MOVE_CHUNK = 4096


def new_memory_id(now: float) -> str:
    """A time-ordered id: 12 hex digits of milliseconds, then 10 random hex digits."""
    return f"m{int(now * 1000):012x}{os.urandom(5).hex()}"


@dataclass
class _Pending:
    """A record about to be written (new, or an existing one being merged into)."""

    record: Record
    vector: Vector | None
    unit: Vector | None
    reason: str = ""
    cause: Cause = Cause.STORE


@dataclass(frozen=True)
class _Candidate:
    """A near-duplicate candidate: an earlier item of the batch, or a stored record's key."""

    cosine: float
    item: int  # index in the batch, or -1
    key: int  # store key when item is -1


@dataclass
class _Staged:
    """An item that passed the gate, before near-duplicate resolution."""

    record: Record
    vector: Vector | None
    unit: Vector | None
    client_id: bool
    reason: str


class _Turns:
    """Positions in their sessions for a batch's items: a turn the client gives, or the next
    free one (past the session's stored turns and the batch's earlier items)."""

    def __init__(self, columns: MetadataColumns) -> None:
        self._cols = columns
        self._next: dict[tuple[str, str], int] = {}

    def place(self, rec: Record, turn: int | None) -> int:
        key = (rec.namespace, rec.session_id)
        nxt = self._next.get(key)
        if nxt is None:
            ns_id = self._cols.ns_id(rec.namespace)
            nxt = self._cols.next_turn(ns_id, rec.session_id) if ns_id >= 0 else 0
        placed = nxt if turn is None else turn
        self._next[key] = max(nxt, placed + 1)
        return placed


class Writer:
    """Turns validated, encoded `NewMemory` items into durable records."""

    def __init__(
        self,
        settings: MemorySettings,
        store: RecordStore,
        columns: MetadataColumns,
        hot: HotTier,
        vectors: VectorIndexSet,
        terms: Callable[[str], list[str]],
        clock: Clock,
        publish_lock: threading.Lock,
        followers: Sequence[Follower],
        media_cosine: float = 1.0,
    ) -> None:
        """`media_cosine`: the image-space cosine at which two images are one picture
        (`media.dedup_image_cosine`; 1: only the same blob)."""
        self._s = settings
        self._gate = ImportanceGate(settings.write_policy)
        self._merge = MergePolicy(settings.write_policy, terms, media_cosine)
        self._supersede = SupersedePolicy(settings.lifecycle.supersede, terms)
        self._store = store
        self._cols = columns
        self._hot = hot
        self._vectors = vectors
        self._clock = clock
        self._lock = publish_lock
        self._followers = list(followers)
        self._scheme = columns.catalog.scheme
        self._hot_kinds = frozenset(Kind[k.upper()] for k in settings.hot.kinds)

    def _wait_for_indexer(self, deadline: Deadline) -> None:
        """Backpressure: hold new writes while too many are unindexed (hot scans stay small).

        If the indexer makes no room within `BACKPRESSURE_TIMEOUT_S` (it is failing, say on a
        full disk), the write is refused as UNAVAILABLE rather than left hanging; it also stops
        waiting when its caller does.
        """
        limit = self._s.hot.max_pending_index
        give_up = time.monotonic() + BACKPRESSURE_TIMEOUT_S
        while self._hot.pending() > limit:
            deadline.check("the write (waiting for the indexer)")
            if time.monotonic() > give_up:
                raise UnavailableError(
                    f"{self._hot.pending()} acknowledged records are still waiting for the indexer"
                    f" (memory.hot.max_pending_index is {limit}); retry later"
                )
            time.sleep(0.005)

    def write(
        self,
        items: list[NewMemory],
        deadline: Deadline,
        also: Callable[[], Sequence[Op]] | None = None,
    ) -> list[WriteResult]:
        """Write `items` through the gate as one change; `also`: more operations of the same
        change, built under the lock (a session end's summaries and its tier moves commit
        together, so a crash leaves both or neither)."""
        self._wait_for_indexer(deadline)
        with self._lock:
            return self._write_locked(items, deadline, also)

    def add_access(self, tally: dict[int, tuple[int, float]]) -> None:
        """Fold counted accesses into the records, as one change like every other, so a merge
        or an upsert never writes back a stale count."""
        with self._lock:
            self._commit([Touch(k, n, last) for k, (n, last) in tally.items()])
            self._cols.touch(tally)

    def change(
        self, build: Callable[[], Sequence[Op]], deadline: Deadline, what: str
    ) -> list[Applied]:
        """Apply the operations `build` returns as one change, through the same lock and the
        same publish as every write: `build` runs under the lock, so what it reads (the store,
        the columns) is what the change applies to. The lifecycle's moves, compressions,
        expiries and (un)supersessions come through here."""
        with self._lock:
            ops = build()
            deadline.check(what)
            return self._commit(ops) if ops else []

    def forget(self, keys: list[int], deadline: Deadline, cause: Cause = Cause.FORGET) -> int:
        """Erase records (`cause`: a Forget, or expiry); return how many were live. Their
        neighbouring turns are rewritten in the same change, so the indexer rebuilds their
        context fields without the forgotten words (which would otherwise stay findable through
        a neighbour)."""
        with self._lock:
            deadline.check("the delete")
            rewrite = self._rewrite_neighbours(keys, set(keys), cause)
            applied = self._commit([*(Erase(k, cause) for k in keys), *rewrite])
            return sum(1 for a in applied if a.record is None)

    def _rewrite_neighbours(self, keys: list[int], written: set[int], cause: Cause) -> list[Put]:
        """Rewrites (same record, same vector) of the session neighbours of `keys` that the
        change does not already write: the indexer then rebuilds their keyword documents and
        mixed vectors from what the change leaves."""
        near: set[int] = set()
        for before, after in self._cols.neighbours_many(keys, self._s.context.turns).values():
            near.update(k for k in (*before.tolist(), *after.tolist()) if k not in written)
        return [Put(r, None, cause) for r in self._store.get(sorted(near)).values()]

    def _commit(self, ops: Sequence[Op]) -> list[Applied]:
        """Apply a change durably, then hand it to the followers. Called under the lock."""
        applied = self._store.apply(ops)
        for follower in self._followers:
            follower.follow(applied)
        return applied

    def _arrival_tier(self, rec: Record, event_time: float, now: float) -> Tier:
        """Hot for a session's turn of a hot kind (a session's raw memory) that is recent, or
        of the namespace's current session, or within `hot.session_window_seconds` and the
        namespace's latest (it begins the current session, sent late); else warm."""
        if rec.kind not in self._hot_kinds or not rec.session_id:
            return Tier.WARM
        if now - event_time < self._s.hot.ttl_seconds:
            return Tier.HOT
        ns_id = self._cols.ns_id(rec.namespace)
        _, current = self._cols.current_session(ns_id)
        if current == self._cols.session_id(rec.session_id):
            return Tier.HOT
        latest = event_time >= self._cols.latest_turn(ns_id)
        return (
            Tier.HOT
            if latest and now - event_time < self._s.hot.session_window_seconds
            else Tier.WARM
        )

    def move_tiers(self, deadline: Deadline) -> int:
        """Move hot memories to warm: those older than `hot.ttl_seconds` but of their
        namespace's current session, and the oldest beyond `hot.max_records_per_namespace` in a
        namespace. One change per record, through the same lock and the same publish as every
        write; return how many moved."""
        hs = self._s.hot
        with self._lock:
            now = self._clock.now()
            c = self._cols
            hot = np.nonzero((c.ns >= 0) & (c.tier == int(Tier.HOT)))[0]
            if len(hot) == 0:
                return 0
            due = c.created[hot] <= now - hs.ttl_seconds
            for ns_id in np.unique(c.ns[hot]).tolist():
                mine = np.nonzero(c.ns[hot] == ns_id)[0]
                current = c.current_session(ns_id)[1]
                due[mine[c.session[hot[mine]] == current]] = False  # current: stays hot
                over = len(mine) - hs.max_records_per_namespace
                if over > 0:
                    due[mine[np.argsort(c.created[hot[mine]], kind="stable")[:over]]] = True
            keys = hot[due].tolist()[:TIER_MOVE_CHUNK]  # the rest on the next tick
            if not keys:
                return 0
            deadline.check("the tier move")
            moved = [
                Put(
                    msgspec.structs.replace(r, tier=Tier.WARM, updated_at=now),
                    None,
                    Cause.TIER_MOVE,
                )
                for r in self._store.get(keys).values()
            ]
            return len(self._commit(moved))

    def _supersede_targets(self, items: list[NewMemory]) -> list[list[int]]:
        targets: list[list[int]] = []
        for i, item in enumerate(items):
            keys: list[int] = []
            for j, mid in enumerate(item.supersedes):
                key = self._store.key_of(item.record.namespace, mid)
                if key is None:
                    raise NotFoundError("memory", mid, where=Location("supersedes", i, j))
                keys.append(key)
            targets.append(keys)
        return targets

    def _duplicates(self, staged: list[_Staged | None]) -> dict[int, list[_Candidate]]:
        """For each eligible item, its near-duplicate candidates (cosine ≥ `dedup_cosine`), best
        first, found in one pass per (namespace, kind) group: a batched ANN search of the warm
        index, a matrix product with the hot tier's unindexed rows, and one with the earlier
        items of the same batch. Only current rows of the same kind are candidates (an index can
        still hold a ghost of a record whose kind an upsert changed, until the indexer runs).
        """
        merge_floor = self._s.write_policy.dedup_floor
        value_floor = min(merge_floor, self._s.lifecycle.supersede.cosine)
        groups: dict[tuple[str, int, str], list[int]] = defaultdict(list)
        sessions: dict[tuple[str, str], list[int]] = defaultdict(list)
        for i, st in enumerate(staged):
            if st is None or st.client_id:
                continue
            mode = self._merge.mode(st.record.kind)
            if mode == "identical_in_session" and st.record.session_id:
                sessions[(st.record.namespace, st.record.session_id)].append(i)
            elif st.unit is not None and (mode == "similar" or self._supersede.eligible(st.record)):
                # The warm pocket it would live in; hot rows are in the hot tier.
                warm = msgspec.structs.replace(self._scheme.key_of(st.record), tier=Tier.WARM)
                groups[(st.record.namespace, int(st.record.kind), warm.name)].append(i)
        out: dict[int, list[_Candidate]] = self._same_in_session(staged, sessions)
        for (ns, kind, pocket), idx in groups.items():
            # Supersession weighs neighbours further than a merge does (a new value of the
            # same thing reads less alike than a restatement).
            floor = value_floor if self._supersede.eligible(_first(staged, idx)) else merge_floor
            units = np.stack(
                [u for i in idx if (st := staged[i]) is not None and (u := st.unit) is not None]
            )
            part = self._vectors.partition(ns, pocket, False)
            if part is not None and len(part):
                keys, sims = part.search_batch(
                    units, DEDUP_CANDIDATES, self._s.index.dedup_expansion_search
                )
                ok = self._cols.current(keys.reshape(-1), kind).reshape(keys.shape)
                for n, row in zip(*np.nonzero(ok & (sims >= floor)), strict=True):
                    out[idx[n]].append(_Candidate(float(sims[n, row]), -1, int(keys[n, row])))
            hot_keys, hot_mat = self._hot.rows(ns, kind)
            live = self._cols.current(hot_keys, kind)  # never merge into an obsolete row
            hot_keys, hot_mat = hot_keys[live], hot_mat[live]
            if len(hot_keys):
                hs = units @ hot_mat.T
                for n, col in zip(*np.nonzero(hs >= floor), strict=True):
                    out[idx[n]].append(_Candidate(float(hs[n, col]), -1, int(hot_keys[col])))
            if len(idx) > 1:
                bs = units @ units.T
                bs[np.triu_indices(len(idx))] = -np.inf  # only earlier items
                for n, col in zip(*np.nonzero(bs >= floor), strict=True):
                    out[idx[n]].append(_Candidate(float(bs[n, col]), idx[col], 0))
        for cands in out.values():  # the best few: a batch of one template must not go quadratic
            cands.sort(key=lambda c: -c.cosine)
            del cands[MERGE_CANDIDATES:]
        return out

    def _same_in_session(
        self, staged: list[_Staged | None], sessions: dict[tuple[str, str], list[int]]
    ) -> dict[int, list[_Candidate]]:
        """Candidates of the kinds that merge only an identical text in the same session: the
        session's current records of the same kind and text, and earlier items of the batch. A
        lookup by session and text, not a vector probe (cosine says nothing here)."""
        out: dict[int, list[_Candidate]] = defaultdict(list)
        for (ns, session), idx in sessions.items():
            ns_id = self._cols.ns_id(ns)
            keys = self._cols.session_keys(ns_id, session) if ns_id >= 0 else np.empty(0, np.int64)
            stored = self._store.get(keys[self._cols.current(keys)].tolist()) if len(keys) else {}
            seen: dict[tuple[int, str, str], list[tuple[int, int]]] = defaultdict(list)
            for key, rec in stored.items():
                seen[(int(rec.kind), rec.speaker, normalised(rec.text))].append((-1, key))
            for i in idx:
                st = staged[i]
                assert st is not None
                twin = (int(st.record.kind), st.record.speaker, normalised(st.record.text))
                for item, key in seen[twin]:
                    out[i].append(_Candidate(1.0, item, key if item < 0 else 0))
                seen[twin].append((i, 0))
        return out

    def _write_locked(
        self,
        items: list[NewMemory],
        deadline: Deadline,
        also: Callable[[], Sequence[Op]] | None = None,
    ) -> list[WriteResult]:
        now = self._clock.now()
        wp = self._s.write_policy
        targets = self._supersede_targets(items)
        turns = _Turns(self._cols)
        moved: set[int] = set()  # upserts that leave their place in a session
        staged: list[_Staged | None] = []
        results: list[WriteResult] = []
        for item in items:
            rec = item.record
            verdict = self._gate.judge(rec.text, item.explicit_importance, item.hints)
            if not verdict.accepted:
                results.append(
                    WriteResult(
                        "",
                        GateDecision.REJECTED,
                        verdict.reason,
                        verdict.importance,
                        None,
                        Tier.UNSPECIFIED,
                    )
                )
                staged.append(None)
                continue
            created = now if item.created_at is None else item.created_at
            expires = rec.expires_at
            rec = msgspec.structs.replace(
                rec,
                memory_id=rec.memory_id or new_memory_id(now),
                importance=verdict.importance,
                created_at=created,
                updated_at=now,
                refreshed_at=created,
                expires_at=expires if expires is not None else now + wp.expire_after_days * _DAY,
                tier=self._arrival_tier(rec, created, now),
                stored_at=now,
                turn=-1 if not rec.session_id else turns.place(rec, item.turn),
                says_when=has_time_expression(rec.text),
                key=0,
            )
            if item.client_memory_id:
                rec.key = (
                    self._store.key_of(rec.namespace, rec.memory_id, include_deleted=True) or 0
                )
                if rec.key and (prev := self._store.get([rec.key]).get(rec.key)) is not None:
                    # An upsert rewrites the content; the server-set state stays: a superseded
                    # memory does not become current again by being rewritten, nor loses why,
                    # and a summary's and a compressed original's links stay.
                    rec.obsolete, rec.superseded_by = prev.obsolete, prev.superseded_by
                    rec.supersede_reason = prev.supersede_reason
                    rec.derived_from, rec.compressed_into = prev.derived_from, prev.compressed_into
                    rec.access_count = prev.access_count
                    rec.last_accessed_at = prev.last_accessed_at
                    rec.stored_at = prev.stored_at or now
                    if item.turn is None and prev.session_id == rec.session_id:
                        rec.turn = prev.turn  # rewriting a turn does not move it
                    if (prev.session_id, prev.turn) != (rec.session_id, rec.turn):
                        moved.add(rec.key)  # its old neighbours lose it as a neighbour
                    if prev.tier == Tier.COLD:
                        rec.tier = Tier.COLD
            u = None if item.vector is None else unit(item.vector)
            staged.append(_Staged(rec, item.vector, u, item.client_memory_id, verdict.reason))
            results.append(
                WriteResult(
                    rec.memory_id,
                    GateDecision.STORED,
                    verdict.reason,
                    rec.importance,
                    rec.expires_at,
                    rec.tier,
                )
            )
        dups = self._duplicates(staged)
        doomed = {k for keys in targets for k in keys}  # superseded by this batch
        # Sequentially, so an item can merge into an earlier one that itself merged. Every
        # entry with a store key (an upsert, or a merge into a stored record) is in `entries`,
        # so a later item of the batch works on that entry, never on the stale stored copy.
        entries: dict[int, _Pending] = {}
        batch: list[_Pending] = []
        slots: list[_Pending | None] = []
        for i, st in enumerate(staged):
            if i % 16 == 0:
                deadline.check("merging near-duplicates")
            if st is None:
                slots.append(None)
                continue
            entry = self._merge_target(st, dups.get(i, []), slots, entries, batch, doomed, now)
            if entry is not None:
                results[i] = WriteResult(
                    entry.record.memory_id,
                    GateDecision.MERGED,
                    f"{entry.reason}; {st.reason}",
                    entry.record.importance,
                    entry.record.expires_at,
                    entry.record.tier,
                )
            elif st.record.key and st.record.key in entries:  # an upsert of a pending entry
                entry = entries[st.record.key]
                entry.record, entry.vector, entry.unit = st.record, st.vector, st.unit
            else:
                cause = Cause.UPSERT if st.record.key else Cause.STORE
                entry = _Pending(st.record, st.vector, st.unit, cause=cause)
                batch.append(entry)
                if st.record.key:
                    entries[st.record.key] = entry
            slots.append(entry)
        said: dict[int, list[Supersession]] = defaultdict(list)  # per item, what it superseded
        marks = [
            [(k, item.supersede_reason) for k in keys]
            for keys, item in zip(targets, items, strict=True)
        ]
        auto = [it.auto_supersede for it in items]
        for i, found in self._value_changes(staged, dups, slots, doomed, said, now, auto).items():
            marks[i].extend(found)
        superseded = self._mark_superseded(marks, slots, batch, said, now)
        # A turn that moved (another session, another place) leaves neighbours whose keyword
        # documents and mixed vectors still hold it: rewrite them in the same change, as Forget
        # does, so the indexer re-indexes them without it.
        written = {p.record.key for p in batch} | {r.key for r in superseded}
        old_neighbours = self._rewrite_neighbours(sorted(moved), written, Cause.UPSERT)
        deadline.check("the commit")  # the last point at which the write can still be dropped
        self._commit(
            [Put(p.record, p.vector, p.cause) for p in batch]
            + [Put(r, None, Cause.SUPERSEDE) for r in superseded]
            + old_neighbours
            + list(also() if also is not None else ())
        )
        # A result names the final record (an entry may have absorbed later duplicates).
        return [
            res
            if slot is None
            else msgspec.structs.replace(
                res,
                memory_id=slot.record.memory_id,
                importance=slot.record.importance,
                expires_at=slot.record.expires_at,
                tier=slot.record.tier,
                superseded=tuple(said.get(i, ())),
            )
            for i, (res, slot) in enumerate(zip(results, slots, strict=True))
        ]

    def _merge_target(
        self,
        st: _Staged,
        candidates: list[_Candidate],
        slots: list[_Pending | None],
        entries: dict[int, _Pending],
        batch: list[_Pending],
        doomed: set[int],
        now: float,
    ) -> _Pending | None:
        """Fold `st` into the first candidate the merge policy allows (best cosine first), and
        return its entry; None to store `st` as a new memory. A record that this batch
        supersedes is never a target: the restatement would vanish with it."""
        for c in candidates:
            entry = slots[c.item] if c.item >= 0 else entries.get(c.key)
            if entry is not None and entry.record.key in doomed:
                continue
            if entry is None and c.key in doomed:
                continue
            base = entry.record if entry is not None else self._store.get([c.key]).get(c.key)
            why = None if base is None else self._merge.verdict(st.record, base, c.cosine)
            if base is None or why is None:
                continue
            rec = _merge(base, st.record, now)
            if entry is None:
                entry = _Pending(rec, st.vector, st.unit, cause=Cause.MERGE)
                batch.append(entry)
                entries[c.key] = entry
            else:
                entry.record, entry.vector, entry.unit = rec, st.vector, st.unit
                entry.cause = Cause.MERGE if entry.cause == Cause.STORE else entry.cause
            entry.reason = f"near-duplicate of {base.memory_id} ({why})"
            return entry
        return None

    def _value_changes(
        self,
        staged: list[_Staged | None],
        dups: dict[int, list[_Candidate]],
        slots: list[_Pending | None],
        doomed: set[int],
        said: dict[int, list[Supersession]],
        now: float,
        auto: list[bool],
    ) -> dict[int, list[tuple[int, str]]]:
        """Supersession without ids: for each new fact or preference, the stored current
        neighbours it states a new value of (`SupersedePolicy`), as (key, reason code) per item.
        When the stored neighbour is the newer one (history imported out of order), or both are
        items of this batch, the older pending record is marked here instead."""
        if not self._supersede.enabled:
            return {}
        out: dict[int, list[tuple[int, str]]] = defaultdict(list)
        wanted = sorted({c.key for cands in dups.values() for c in cands if c.item < 0})
        stored = self._store.get(wanted) if wanted else {}
        for i, st in enumerate(staged):
            slot = slots[i]
            if st is None or slot is None or slot.cause != Cause.STORE:
                continue  # a merge restates, an upsert rewrites: neither states a new value
            if not self._supersede.eligible(slot.record) or not auto[i]:
                continue
            for c in dups.get(i, []):
                other = slots[c.item] if c.item >= 0 else None
                if c.item >= 0:
                    if other is None or other is slot or other.record.obsolete:
                        continue
                    old = other.record
                else:
                    found = stored.get(c.key)
                    if c.key in doomed or found is None or found.obsolete:
                        continue
                    old = found
                new = slot.record
                if new.obsolete:
                    break
                newer_is_new = new.created_at >= old.created_at
                newer, older = (new, old) if newer_is_new else (old, new)
                v = self._supersede.verdict(newer, older, c.cosine)
                if not v.supersede:
                    continue
                if newer_is_new and other is None:
                    out[i].append((c.key, v.code))
                    continue
                # The older one is pending in this batch: mark it in place.
                pending = other if newer_is_new and other is not None else slot
                pending.record = msgspec.structs.replace(
                    pending.record,
                    obsolete=True,
                    superseded_by=newer.memory_id,
                    supersede_reason=v.code,
                    updated_at=now,
                )
                said[i].append(Supersession(older.memory_id, newer.memory_id, v.code))
        return out

    def _mark_superseded(
        self,
        marks: list[list[tuple[int, str]]],
        slots: list[_Pending | None],
        batch: list[_Pending],
        said: dict[int, list[Supersession]],
        now: float,
    ) -> list[Record]:
        """The records that `marks` supersede (key, reason code), marked obsolete. A target that
        this batch also writes (an upsert or a merge) is marked in place, so its new text is what
        is kept. A successor that is itself obsolete (an item of this batch that an even newer
        one superseded) is followed to its head, so an obsolete record names a current one."""
        out: dict[int, Record] = {}
        wanted = {k for found in marks for k, _ in found}
        existing = self._store.get(sorted(wanted))
        written = {p.record.key: p for p in batch if p.record.key}
        heads = {p.record.memory_id: p.record.superseded_by for p in batch if p.record.obsolete}
        for i, (found, slot) in enumerate(zip(marks, slots, strict=True)):
            if slot is None:
                continue
            head = slot.record.memory_id
            for _ in range(len(heads)):
                if head not in heads:
                    break
                head = heads[head]
            for key, reason in found:
                if key == slot.record.key:
                    continue
                mark = {
                    "obsolete": True,
                    "superseded_by": head,
                    "supersede_reason": reason,
                    "updated_at": now,
                }
                if key in written:
                    written[key].record = msgspec.structs.replace(written[key].record, **mark)
                    said[i].append(Supersession(written[key].record.memory_id, head, reason))
                elif (old := existing.get(key)) is not None and key not in out:
                    out[key] = msgspec.structs.replace(old, **mark)
                    said[i].append(Supersession(old.memory_id, head, reason))
        return list(out.values())


def _first(staged: list[_Staged | None], idx: list[int]) -> Record:
    st = staged[idx[0]]
    assert st is not None
    return st.record


def _merge(base: Record, new: Record, now: float) -> Record:
    """Fold a near-duplicate into the record it duplicates: the newer wording and vector win, the
    importance and expiry are the larger, the tags are the union, and it counts as fresh."""
    return msgspec.structs.replace(
        base,
        text=new.text or base.text,
        says_when=new.says_when if new.text else base.says_when,
        importance=max(base.importance, new.importance),
        updated_at=now,
        refreshed_at=max(base.refreshed_at or base.created_at, new.created_at),
        expires_at=max(base.expires_at or 0.0, new.expires_at or 0.0) or None,
        tags=tuple(dict.fromkeys(base.tags + new.tags)),
        session_id=new.session_id or base.session_id,
        # A merge into a record of another session takes the new item's place in its session.
        turn=new.turn if new.session_id and new.session_id != base.session_id else base.turn,
        speaker=new.speaker or base.speaker,
        source=new.source,
        source_type=new.source_type or base.source_type,
        blob=new.blob or base.blob,
        group_id=base.group_id or new.group_id,
    )
