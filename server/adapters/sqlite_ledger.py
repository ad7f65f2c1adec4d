"""The budget ledger in its own SQLite file (`<data_dir>/ledger.sqlite3`).

One thread writes, in `BEGIN IMMEDIATE` transactions committed with `synchronous=FULL` in WAL
mode: a call is answered only once its transaction is on disk, so a kill -9 (or a power cut)
loses nothing answered, and the calls' work runs one at a time, so the ledger's check and hold
are atomic. Calls that arrive together are committed together (group commit). Tasks are
msgpack blobs; holds are rows, indexed for the live sums a Reserve asks for;
replies are the answers recorded under idempotency keys, each with the time it was recorded,
pruned once older than `ledger.reply_ttl_seconds` (every minute, in a writer's transaction).
(The live holds' sums are kept in the task, so no Reserve scans the holds.)
"""

from __future__ import annotations

import contextlib
import queue
import sqlite3
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import TypeVar

import msgspec

from server.core.batching import batches
from server.core.errors import UnavailableError
from server.core.ledger.model import Hold, SpendKind, Task

T = TypeVar("T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tasks (task_id TEXT PRIMARY KEY, body BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS holds (
    reservation_id TEXT PRIMARY KEY,
    task_id TEXT NOT NULL,
    round INTEGER NOT NULL,
    kind INTEGER NOT NULL,
    tool TEXT NOT NULL,
    amount INTEGER NOT NULL,
    final INTEGER NOT NULL,
    created_at REAL NOT NULL,
    expires_at REAL NOT NULL,
    state TEXT NOT NULL,
    actual INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS holds_live ON holds (task_id, state, expires_at);
CREATE TABLE IF NOT EXISTS replies (
    key TEXT PRIMARY KEY, fingerprint TEXT, answer BLOB, at REAL NOT NULL DEFAULT 0
);
"""
_enc = msgspec.msgpack.Encoder()
_task = msgspec.msgpack.Decoder(Task)


class _Tx:
    """A `LedgerTx` over the writer's cursor."""

    def __init__(self, cur: sqlite3.Cursor) -> None:
        self._c = cur

    def task(self, task_id: str) -> Task | None:
        row = self._c.execute("SELECT body FROM tasks WHERE task_id=?", (task_id,)).fetchone()
        return None if row is None else _task.decode(row[0])

    def put_task(self, task: Task) -> None:
        self._c.execute(
            "INSERT OR REPLACE INTO tasks (task_id, body) VALUES (?, ?)",
            (task.task_id, _enc.encode(task)),
        )

    def hold(self, reservation_id: str) -> Hold | None:
        row = self._c.execute(
            "SELECT reservation_id, task_id, round, kind, tool, amount, final, created_at,"
            " expires_at, state, actual FROM holds WHERE reservation_id=?",
            (reservation_id,),
        ).fetchone()
        if row is None:
            return None
        rid, task_id, rnd, kind, tool, amount, final, created, expires, state, actual = row
        return Hold(
            rid, task_id, rnd, SpendKind(kind), tool, amount, bool(final), created, expires,
            state, actual,
        )  # fmt: skip

    def put_hold(self, h: Hold) -> None:
        self._c.execute(
            "INSERT OR REPLACE INTO holds VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                h.reservation_id, h.task_id, h.round, int(h.kind), h.tool, h.amount,
                int(h.final), h.created_at, h.expires_at, h.state, h.actual,
            ),
        )  # fmt: skip

    def expire(self, task_id: str, now: float) -> list[Hold]:
        rows = self._c.execute(
            "SELECT reservation_id FROM holds WHERE task_id=? AND state='held' AND expires_at<=?",
            (task_id, now),
        ).fetchall()
        out = []
        for (rid,) in rows:
            h = self.hold(rid)
            assert h is not None
            out.append(h)
            h.state = "expired"
            self.put_hold(h)
        return out

    def release_all(self, task_id: str) -> int:
        cur = self._c.execute(
            "UPDATE holds SET state='released' WHERE task_id=? AND state='held'", (task_id,)
        )
        return cur.rowcount

    def reply(self, key: str) -> tuple[str, bytes] | None:
        row = self._c.execute(
            "SELECT fingerprint, answer FROM replies WHERE key=?", (key,)
        ).fetchone()
        return None if row is None else (row[0], row[1])

    def put_reply(self, key: str, fingerprint: str, answer: bytes) -> None:
        self._c.execute(
            "INSERT INTO replies (key, fingerprint, answer, at) VALUES (?, ?, ?, ?)",
            (key, fingerprint, answer, time.time()),
        )

    def kept_memories(self) -> list[bytes]:
        """The agent memories an older pocketd kept in this file (acknowledged, perhaps not
        written), oldest first; none in a file made since."""
        if not self._c.execute(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name='pending_memories'"
        ).fetchone():
            return []
        rows = self._c.execute("SELECT body FROM pending_memories ORDER BY rowid").fetchall()
        return [r[0] for r in rows]

    def drop_kept_memories(self) -> None:
        self._c.execute("DROP TABLE IF EXISTS pending_memories")


class SqliteLedgerStore:
    """A `LedgerStore` with group commit: one writer thread takes the work queued meanwhile (up
    to `BATCH`), runs each in its own savepoint of one `BEGIN IMMEDIATE` transaction, commits
    once, and only then answers every caller. So each call is still atomic and durable before
    it is answered, and a burst of calls shares one fsync instead of paying one each."""

    BATCH = 256
    WAIT = 30.0  # the longest a caller waits for its commit

    PRUNE_EVERY = 60.0  # seconds between two prunes of the expired replies

    def __init__(self, path: Path, reply_ttl_seconds: float = 86_400.0) -> None:
        """`reply_ttl_seconds`: how long an answer stays under its idempotency key."""
        self._reply_ttl = reply_ttl_seconds
        self._pruned = 0.0
        path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=FULL")
        self._conn.execute("PRAGMA busy_timeout=5000")
        self._conn.executescript(_SCHEMA)
        columns = {r[1] for r in self._conn.execute("PRAGMA table_info(replies)")}
        if "at" not in columns:  # a ledger from before replies were pruned: they count from now
            self._conn.execute("ALTER TABLE replies ADD COLUMN at REAL NOT NULL DEFAULT 0")
            self._conn.execute("UPDATE replies SET at=?", (time.time(),))
        self._conn.execute("CREATE INDEX IF NOT EXISTS replies_at ON replies (at)")
        self._queue: queue.SimpleQueue[tuple[Callable[[_Tx], object], Future[object]] | None]
        self._queue = queue.SimpleQueue()
        self._closed = False
        self._gate = threading.Lock()
        self._thread = threading.Thread(target=self._write, name="pocketd-ledger", daemon=True)
        self._thread.start()

    def run(self, work: Callable[[_Tx], T]) -> T:
        return self.start(work)()

    def start(self, work: Callable[[_Tx], T]) -> Callable[[], T]:
        fut: Future[object] = Future()
        with self._gate:  # closed, or queued before the stop: never left waiting
            if self._closed:
                raise UnavailableError("the ledger is closed")
            self._queue.put((work, fut))  # type: ignore[arg-type]

        def wait() -> T:
            try:
                return fut.result(timeout=self.WAIT)  # type: ignore[return-value]
            except FutureTimeout as e:  # it may still commit: a retry with its key finds out
                raise UnavailableError(
                    f"the ledger did not answer in {self.WAIT:.0f} s; retry with the same key"
                ) from e

        return wait

    def hand_over_memories(self, adopt: Callable[[list[bytes]], object]) -> int:
        """Hand the agent memories an older pocketd kept in this file (with a Step's last
        charge) to where they are kept now (`adopt`, durable when it returns), then drop them
        here; how many. A crash in between hands them over again at the next start (the same
        ids: kept once)."""
        bodies = self.run(lambda tx: tx.kept_memories())
        if bodies:
            adopt(bodies)
            self.run(lambda tx: tx.drop_kept_memories())
        return len(bodies)

    def close(self) -> None:
        with self._gate:
            if self._closed:
                return
            self._closed = True
            self._queue.put(None)
        self._thread.join()
        self._conn.close()

    def _write(self) -> None:
        for batch in batches(self._queue, self.BATCH):
            self._commit(batch)
        while True:  # nothing is queued after the stop (the gate), but be sure
            try:
                left = self._queue.get_nowait()
            except queue.Empty:
                return
            if left is not None:
                left[1].set_exception(UnavailableError("the ledger closed"))

    def _commit(self, batch: list[tuple[Callable[[_Tx], object], Future[object]]]) -> None:
        results: list[tuple[Future[object], object, BaseException | None]] = []
        cur = None
        try:
            cur = self._conn.cursor()
            cur.execute("BEGIN IMMEDIATE")
            tx = _Tx(cur)
            for work, fut in batch:
                cur.execute("SAVEPOINT work")
                try:
                    out = work(tx)
                except BaseException as e:  # its own changes undone; the others stand
                    cur.execute("ROLLBACK TO work")
                    cur.execute("RELEASE work")
                    results.append((fut, None, e))
                    continue
                cur.execute("RELEASE work")
                results.append((fut, out, None))
            now = time.time()
            if now - self._pruned >= self.PRUNE_EVERY:
                cur.execute("DELETE FROM replies WHERE at < ?", (now - self._reply_ttl,))
                self._pruned = now
            cur.execute("COMMIT")
        except Exception as e:  # the commit failed: nothing of the batch is on disk
            if cur is not None:
                with contextlib.suppress(sqlite3.Error):
                    cur.execute("ROLLBACK")
            err = UnavailableError(f"the ledger could not commit ({e}); retry with the same key")
            for _, fut in batch:
                if not fut.done():
                    fut.set_exception(err)
            return
        for fut, out, exc in results:
            if exc is not None:
                fut.set_exception(exc)
            else:
                fut.set_result(out)
