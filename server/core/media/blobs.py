"""Which blobs are held, and when one goes: a blob lives while a record holds it (any tier: a
cold move or a compression keeps the record, and with it the blob) or a job waits to read it,
and is removed when the last of them goes (Forget, expiry, a merge into another memory, a
failed job).

`BlobKeeper` is a follower of the record store's revisions, run by the writer under its lock
like the columns: each applied Put of a record that holds a blob (`Blob.held`) takes a
reference, each Erase (or a Put that no longer names it) drops one. The references are saved in
the media ledger with the revision they are current to; after a crash the keeper replays the
store's changes since (`catch_up`), so the count is exact again before anything is removed.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence

from server.core.media.ports import BlobStore, MediaLedger
from server.core.memory.changes import Applied
from server.core.memory.model import Record
from server.core.memory.ports import ChangedRow

log = logging.getLogger(__name__)


def held_sha(rec: Record | None) -> str | None:
    """The sha256 of the blob a record holds in pocketd's store, else None."""
    if rec is None or rec.blob is None or not rec.blob.held:
        return None
    return rec.blob.sha256


class BlobKeeper:
    """Reference counts of the blobs, by record and by job; removes a blob no one holds."""

    def __init__(self, blobs: BlobStore, ledger: MediaLedger) -> None:
        self._blobs = blobs
        self._ledger = ledger
        self.rev, self._of = ledger.refs()
        self._count: Counter[str] = Counter(self._of.values())
        self._by: defaultdict[str, set[int]] = defaultdict(set)  # sha256 → the keys holding it
        for key, sha in self._of.items():
            self._by[sha].add(key)
        self._jobs: Counter[str] = Counter()  # blobs pending jobs hold
        self._lock = threading.Lock()

    def follow(self, applied: Sequence[Applied]) -> None:
        """Take and drop the references of committed revisions (a `Follower`)."""
        self._apply((a.rev, a.key, held_sha(a.record)) for a in applied)

    def catch_up(self, rows: Iterable[ChangedRow]) -> None:
        """Replay the store's changes after `rev` (start-up, before the first write)."""
        self._apply((r.rev, r.record.key, None if r.deleted else held_sha(r.record)) for r in rows)

    def _apply(self, changes: Iterable[tuple[int, int, str | None]]) -> None:
        put: dict[int, str] = {}
        drop: list[int] = []
        freed: list[str] = []
        rev = self.rev
        with self._lock:
            for r, key, sha in changes:
                rev = max(rev, r)
                old = self._of.get(key)
                if old == sha:
                    continue
                if old is not None:
                    self._by[old].discard(key)
                    if not self._by[old]:
                        del self._by[old]
                    self._count[old] -= 1
                    if self._count[old] <= 0:
                        del self._count[old]
                        freed.append(old)
                if sha is None:
                    del self._of[key]
                    drop.append(key)
                    put.pop(key, None)
                else:
                    self._of[key] = sha
                    self._by[sha].add(key)
                    self._count[sha] += 1
                    put[key] = sha
            if not put and not drop:
                return
            self.rev = rev
            self._ledger.save_refs(rev, put, drop)
            gone = [s for s in freed if not self._count[s] and not self._jobs[s]]
            self._remove(gone)

    def hold(self, sha256: str) -> None:
        """A job now holds the blob (until `release`)."""
        with self._lock:
            self._jobs[sha256] += 1

    def release(self, sha256: str) -> None:
        """A job let go of the blob; remove it if no record or job holds it."""
        with self._lock:
            self._jobs[sha256] -= 1
            if self._jobs[sha256] <= 0:
                del self._jobs[sha256]
            if not (self._count[sha256] or self._jobs[sha256]):
                self._remove([sha256])

    def holders(self, sha256: str) -> list[int]:
        """The keys of the records that hold the blob."""
        with self._lock:
            return sorted(self._by.get(sha256, ()))

    def holds(self, sha256: str) -> bool:
        with self._lock:
            return bool(self._count[sha256] or self._jobs[sha256])

    def count(self) -> int:
        """Blobs held by a record or a job."""
        with self._lock:
            return len(set(self._count) | set(self._jobs))

    def sweep(self) -> int:
        """Remove every stored blob no record or job holds (a crash between a blob's put and its
        job's); returns how many. Run at start-up after the jobs are held."""
        with self._lock:
            stray = [s for s in self._blobs.all() if not (self._count[s] or self._jobs[s])]
            self._remove(stray)
        return len(stray)

    def _remove(self, shas: Iterable[str]) -> None:
        """Remove blobs no one holds. Called under the lock, so that a `hold` (which comes
        before its blob's put) either keeps the file or finds it gone and puts it again."""
        for s in shas:
            try:
                self._blobs.remove(s)
            except OSError:  # the next start-up's sweep removes it
                log.warning("removing blob %s failed", s, exc_info=True)
