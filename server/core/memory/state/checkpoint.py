"""The metadata columns' checkpoint: saved now and then and at close, restored at start-up.

Without one, a start-up scans every live record of the store into the columns (about 12 µs a
record, 12 s at a million). With one, it loads the snapshot and replays the store's changes since
the snapshot's revision (`RecordStore.changes_since`). That is complete: the columns take each
change whole and record the last revision they followed, so whatever a snapshot lacks has a later
revision, and a row changed several times since is replayed once, in its latest state (a
forgotten one as its tombstone). A snapshot is not used when its pocket scheme is not the
configured one (placements would differ) or its revision is beyond the store's head (it belongs
to another store), or when it does not fit the columns (another layout); the columns are then
rebuilt by the scan, and a new snapshot is saved soon after. Columns that failed to follow a
change (`Columns.broken`) are never saved, and their last snapshot is discarded: it would make
the gap permanent, where a scan at the next start-up heals it.

Not detected: a store replaced by another one (a backup of the same store, say) whose head
revision is at or beyond the snapshot's; the indexes' saved revisions have the same limit.
"""

from __future__ import annotations

import logging
import time

from server.core.memory.changes import Applied
from server.core.memory.ports import ChangedRow, ColumnsSnapshots, RecordStore
from server.core.memory.state.columns import Columns

log = logging.getLogger(__name__)
REPLAY_BATCH = 4096


class Checkpoint:
    """Saves `columns` through `sink` when they have moved on, at most every `every_s` seconds
    (a maintenance job), and at close; restores them at start-up."""

    def __init__(
        self, columns: Columns, store: RecordStore, sink: ColumnsSnapshots, every_s: float
    ) -> None:
        self._cols = columns
        self._store = store
        self._sink = sink
        self._every = every_s
        self._saved_rev: int | None = None  # none saved by this process yet
        self._saved_touches = 0
        self._saved_at = 0.0
        self._discarded = False  # the columns missed a change: nothing is saved until restart

    def load(self) -> dict[str, int]:
        """Fill the (empty) columns: from the snapshot and the changes since, else by a scan.
        Returns what was read, for the start-up log."""
        head = self._store.head_rev()
        snap = self._sink.load()
        why = ""
        if snap is not None and snap.rev > head:
            why = f"its revision {snap.rev} is beyond the store's {head}"
        elif snap is not None and snap.scheme != self._cols.catalog.scheme.fingerprint:
            why = f"it was placed under another pocket scheme ({snap.scheme})"
        elif snap is not None:
            try:
                self._cols.restore(snap)  # checks everything before it takes anything
            except ValueError as exc:
                why = str(exc)
        if snap is None or why:
            if why:
                log.warning("the columns snapshot is not used: %s; scanning the store", why)
            n = 0
            for rec in self._store.scan_live():  # nothing writes before start-up is done
                self._cols.put(rec)
                n += 1
            self._cols.rev = head
            return {"records": n, "replayed": 0, "restored": 0}
        replayed, rev = 0, snap.rev
        while rows := self._store.changes_since(rev, REPLAY_BATCH):
            self._cols.follow([_applied(r) for r in rows])
            replayed += len(rows)
            rev = rows[-1].rev
        self._saved_rev = snap.rev if replayed == 0 else None
        live = int((self._cols.ns >= 0).sum())
        return {"records": live, "replayed": replayed, "restored": 1}

    def save_if_due(self) -> bool:
        """Save when the columns have moved on since the last save and `every_s` has passed
        (at once after a start-up that could not use or did not find a snapshot)."""
        if self._discarded or (self._cols.rev, self._cols.touches) == self._saved:
            return False
        if self._saved_rev is not None and time.monotonic() - self._saved_at < self._every:
            return False
        self.save()
        return True

    def save(self) -> None:
        if self._discarded:
            return
        if self._cols.broken:
            log.error("the columns missed a change: their snapshot is discarded until restart")
            self._sink.discard()
            self._discarded = True
            return
        touches = self._cols.touches
        snap = self._cols.snapshot()
        if (snap.rev, touches) == self._saved:
            return
        self._sink.save(snap)
        self._saved_rev, self._saved_at = snap.rev, time.monotonic()
        self._saved_touches = touches

    @property
    def _saved(self) -> tuple[int | None, int]:
        return self._saved_rev, self._saved_touches


def _applied(row: ChangedRow) -> Applied:
    """A row of the change feed as the columns follow it (a forgotten one as its key alone)."""
    rec = row.record
    return Applied(row.rev, rec.key, rec.namespace, None if row.deleted else rec, None)
