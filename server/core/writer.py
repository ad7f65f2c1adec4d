"""The write path after validation and encoding: gate, near-duplicate merge, supersede, durable
write, then publish to the metadata columns and the hot tier.

All writes are serialised by one lock, so the near-duplicate check sees every earlier write,
including those earlier in the same batch. The record store commit happens before anything is
published or acknowledged. The same lock is held while publishing, and the indexer takes it to
mark rows indexed, so it can never mark a row before the writer has put it into the hot tier.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass

import msgspec
import numpy as np

from server.core.columns import Columns
from server.core.errors import NotFoundError
from server.core.gate import ImportanceGate
from server.core.hot import HotTier
from server.core.model import GateDecision, NewMemory, Record, Tier, Vector, WriteResult
from server.core.ports import Clock, KeywordIndex, RecordStore, VectorIndexSet
from server.core.settings import MemorySettings

_DAY = 86_400.0


def new_memory_id(now: float) -> str:
    """A time-ordered id: 12 hex digits of milliseconds, then 10 random hex digits."""
    return f"m{int(now * 1000):012x}{os.urandom(5).hex()}"


def unit(v: Vector) -> Vector:
    """`v` scaled to length 1 (validation has already rejected zero vectors)."""
    n = float(np.linalg.norm(v))
    return (v / n).astype(np.float32) if n > 0 else v.astype(np.float32)


@dataclass
class _Pending:
    record: Record
    vector: Vector | None
    unit: Vector | None


class Writer:
    """Turns validated, encoded `NewMemory` items into durable records."""

    def __init__(
        self,
        settings: MemorySettings,
        store: RecordStore,
        columns: Columns,
        hot: HotTier,
        vectors: VectorIndexSet,
        keywords: KeywordIndex,
        clock: Clock,
        publish_lock: threading.Lock,
    ) -> None:
        self._s = settings
        self._gate = ImportanceGate(settings.write_policy)
        self._store = store
        self._cols = columns
        self._hot = hot
        self._vectors = vectors
        self._keywords = keywords
        self._clock = clock
        self._lock = publish_lock

    def _wait_for_indexer(self) -> None:
        """Backpressure: hold new writes while too many are unindexed (hot scans stay small)."""
        limit = self._s.hot.max_pending_index
        while self._hot.pending() > limit:
            time.sleep(0.005)

    def write(self, items: list[NewMemory]) -> list[WriteResult]:
        self._wait_for_indexer()
        with self._lock:
            return self._write_locked(items)

    def _supersede_targets(self, items: list[NewMemory]) -> list[list[int]]:
        targets: list[list[int]] = []
        for i, item in enumerate(items):
            keys: list[int] = []
            for j, mid in enumerate(item.supersedes):
                key = self._store.key_of(item.record.namespace, mid)
                if key is None:
                    raise NotFoundError("memory", mid, field=f"items[{i}].supersedes[{j}]")
                keys.append(key)
            targets.append(keys)
        return targets

    def _near_duplicate(self, rec: Record, u: Vector, batch: list[_Pending]) -> tuple[_Pending | None, int, float]:
        """The best same-namespace, same-kind match: (batch entry or None, store key, cosine)."""
        best: tuple[_Pending | None, int, float] = (None, 0, -1.0)
        for p in batch:
            if p.unit is not None and p.record.namespace == rec.namespace and p.record.kind == rec.kind:
                sim = float(p.unit @ u)
                if sim > best[2]:
                    best = (p, p.record.key, sim)
        hot = self._hot.nearest(rec.namespace, int(rec.kind), u)
        if hot is not None and hot[1] > best[2]:
            best = (None, hot[0], hot[1])
        part = self._vectors.partition(rec.namespace, int(rec.kind), False)
        if part is not None and len(part):
            keys, sims = part.search(u, 4)
            for k, s in zip(keys.tolist(), sims.tolist(), strict=True):
                if s > best[2] and self._cols.live(k) and not self._cols.obsolete[k]:
                    best = (None, k, s)
                    break
        return best

    def _write_locked(self, items: list[NewMemory]) -> list[WriteResult]:
        now = self._clock.now()
        wp = self._s.write_policy
        targets = self._supersede_targets(items)
        batch: list[_Pending] = []
        by_key: dict[int, _Pending] = {}
        results: list[WriteResult | None] = []
        slots: list[_Pending | None] = []
        for item in items:
            rec = item.record
            verdict = self._gate.judge(rec.text, item.explicit_importance, item.hints)
            if not verdict.accepted:
                results.append(
                    WriteResult("", GateDecision.REJECTED, verdict.reason, verdict.importance, None,
                                Tier.UNSPECIFIED)
                )
                slots.append(None)
                continue
            u = None if item.vector is None else unit(item.vector)
            created = rec.created_at or now
            rec = msgspec.structs.replace(
                rec,
                memory_id=rec.memory_id or new_memory_id(now),
                importance=verdict.importance,
                created_at=created,
                updated_at=now,
                refreshed_at=created,
                expires_at=rec.expires_at if rec.expires_at is not None else created + wp.expire_after_days * _DAY,
                tier=Tier.HOT,
                key=0,
            )
            decision, reason = GateDecision.STORED, verdict.reason
            entry: _Pending | None = None
            if item.client_memory_id:
                rec.key = self._store.key_of(rec.namespace, rec.memory_id, include_deleted=True) or 0
            elif u is not None:
                dup, key, sim = self._near_duplicate(rec, u, batch)
                if sim >= wp.dedup_cosine:
                    entry = dup or by_key.get(key)
                    base = entry.record if entry is not None else self._store.get([key]).get(key)
                    if base is not None:
                        rec = _merge(base, rec, now)
                        decision = GateDecision.MERGED
                        reason = f"near-duplicate of {base.memory_id} (cosine {sim:.3f}); {verdict.reason}"
            if entry is not None:
                entry.record, entry.vector, entry.unit = rec, item.vector, u
            else:
                entry = _Pending(rec, item.vector, u)
                batch.append(entry)
                if rec.key:
                    by_key[rec.key] = entry
            results.append(None)
            slots.append(entry)
            results[-1] = WriteResult(rec.memory_id, decision, reason, rec.importance, rec.expires_at, Tier.HOT)
        superseded = self._mark_superseded(items, targets, slots, now)
        records = [p.record for p in batch] + superseded
        keys = self._store.write(records, [p.vector for p in batch] + [None] * len(superseded))
        for rec, key in zip(records, keys, strict=True):
            rec.key = key
            self._cols.put(rec)
        for p in batch:
            if p.unit is not None:
                terms = self._keywords.analyze(p.record.text)
                self._hot.put(p.record.namespace, p.record.key, int(p.record.kind), p.unit, terms, now)
        # Merged results must name the final record (a batch entry may have merged twice).
        out: list[WriteResult] = []
        for res, slot in zip(results, slots, strict=True):
            assert res is not None
            if slot is not None:
                res = msgspec.structs.replace(
                    res, memory_id=slot.record.memory_id, importance=slot.record.importance,
                    expires_at=slot.record.expires_at,
                )
            out.append(res)
        return out

    def _mark_superseded(
        self, items: list[NewMemory], targets: list[list[int]], slots: list[_Pending | None], now: float
    ) -> list[Record]:
        out: dict[int, Record] = {}
        wanted = {k for keys in targets for k in keys}
        existing = self._store.get(sorted(wanted))
        for keys, slot in zip(targets, slots, strict=True):
            if slot is None:
                continue
            for key in keys:
                old = existing.get(key)
                if old is None or key == slot.record.key:
                    continue
                out[key] = msgspec.structs.replace(
                    old, obsolete=True, superseded_by=slot.record.memory_id, updated_at=now
                )
        return list(out.values())


def _merge(base: Record, new: Record, now: float) -> Record:
    """Fold a near-duplicate into the record it duplicates: the newer wording and vector win, the
    importance and expiry are the larger, the tags are the union, and it counts as fresh."""
    return msgspec.structs.replace(
        base,
        text=new.text or base.text,
        importance=max(base.importance, new.importance),
        updated_at=now,
        refreshed_at=max(base.refreshed_at or base.created_at, new.created_at),
        expires_at=max(base.expires_at or 0.0, new.expires_at or 0.0) or None,
        tags=tuple(dict.fromkeys(base.tags + new.tags)),
        session_id=new.session_id or base.session_id,
        source=new.source,
        source_type=new.source_type or base.source_type,
        blob=new.blob or base.blob,
        group_id=base.group_id or new.group_id,
        tier=Tier.HOT,
    )
