"""Forgetting (seed 000 §2.4, seed 001 §2.3): warm memories of low retention move to cold, and
memories past `expires_at` are deleted from every tier.

Retention = w_importance·importance + w_freshness·freshness, computed for a whole namespace at once
by `kernels.retention` from the metadata columns. Freshness counts from the last access, or, never
returned, from when pocketd stored the memory (an imported history is not stale on arrival
because its events are old). A memory younger than `retention.min_age_days` (since stored) stays.
Past `expires_at` a memory is deleted whatever its tier; a cold memory is deleted for its age only
with `retention.cold_max_age_days` (unset by default: the archive keeps it).
"""

from __future__ import annotations

import msgspec
import numpy as np
import numpy.typing as npt

from kernels.retention import retention
from server.core.clock import Clock
from server.core.deadline import Deadline
from server.core.memory.changes import Cause, Op, Put
from server.core.memory.model import Tier
from server.core.memory.ports import KeyArray, MetadataColumns, RecordStore
from server.core.memory.write.writer import TIER_MOVE_CHUNK, Writer
from server.core.settings import RetentionSettings

_DAY = 86_400.0


class Retention:
    def __init__(
        self,
        settings: RetentionSettings,
        columns: MetadataColumns,
        store: RecordStore,
        writer: Writer,
        clock: Clock,
    ) -> None:
        self._s = settings
        self._cols = columns
        self._store = store
        self._writer = writer
        self._clock = clock

    def scores(self, keys: KeyArray, now: float) -> npt.NDArray[np.float32]:
        """The retention of `keys`, in [0, 1]."""
        c, s = self._cols, self._s
        out: npt.NDArray[np.float32] = retention(
            c.importance[keys],
            c.stored[keys],
            c.last_access[keys],
            c.accesses[keys],
            now,
            s.w_importance,
            s.w_freshness,
            s.half_life_days,
            s.access_saturation,
        )
        return out

    def _rows(self, ns_id: int | None) -> KeyArray:
        c = self._cols
        n = len(c.ns)
        live = c.ns[:n] >= 0 if ns_id is None else c.ns[:n] == ns_id
        out: KeyArray = np.nonzero(live)[0].astype(np.int64)
        return out

    def due_cold(self, ns_id: int | None, now: float) -> KeyArray:
        """Warm memories whose retention fell below the threshold (and old enough)."""
        c = self._cols
        keys: KeyArray = self._rows(ns_id)
        # An obsolete memory stays warm: it is what a question about the past asks for (with
        # `include_obsolete`, which searches no cold pocket); it goes when it expires.
        keys = keys[(c.tier[keys] == int(Tier.WARM)) & ~c.obsolete[keys]]
        keys = keys[c.stored[keys] <= now - self._s.min_age_days * _DAY]
        if len(keys) == 0:
            return keys
        out: KeyArray = keys[self.scores(keys, now) < self._s.threshold]
        return out

    def due_expiry(self, ns_id: int | None, now: float) -> KeyArray:
        c = self._cols
        keys = self._rows(ns_id)
        past = c.expires[keys] <= now
        if self._s.cold_max_age_days is not None:
            old = c.stored[keys] <= now - self._s.cold_max_age_days * _DAY
            past |= old & (c.tier[keys] == int(Tier.COLD))
        out: KeyArray = keys[past]
        return out

    def demote(self, ns_id: int | None, deadline: Deadline) -> int:
        """Move the due warm memories to cold, a chunk per change; return how many moved."""
        moved = 0
        while True:

            def build() -> list[Op]:
                now = self._clock.now()
                keys = self.due_cold(ns_id, now)[:TIER_MOVE_CHUNK].tolist()
                return [
                    Put(
                        msgspec.structs.replace(r, tier=Tier.COLD, updated_at=now),
                        None,
                        Cause.TIER_MOVE,
                    )
                    for r in self._store.get(keys).values()
                ]

            got = len(self._writer.change(build, deadline, "the cold tier move"))
            moved += got
            if got < TIER_MOVE_CHUNK:
                return moved

    def expire(self, ns_id: int | None, deadline: Deadline) -> int:
        """Delete the memories past `expires_at` (text and vector), a chunk per change."""
        gone = 0
        while True:
            keys = self.due_expiry(ns_id, self._clock.now())[:TIER_MOVE_CHUNK].tolist()
            if not keys:
                return gone
            gone += self._writer.forget(keys, deadline, Cause.EXPIRE)
