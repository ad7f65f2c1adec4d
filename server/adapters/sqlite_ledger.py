"""The budget ledger in its own SQLite file (`<data_dir>/ledger.sqlite3`).

One connection writes, under a lock, in `BEGIN IMMEDIATE` transactions committed with
`synchronous=FULL` in WAL mode: a transaction that returned is on disk, so a kill -9 (or a power
cut) loses nothing committed, and no two transactions interleave, so the ledger's check and hold
are atomic. Tasks are msgpack blobs; holds are rows, indexed for the live sums a Reserve asks for;
replies are the answers recorded under idempotency keys.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import msgspec

from server.core.agent.model import HeldSum, Hold, SpendKind, Task

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
CREATE TABLE IF NOT EXISTS replies (key TEXT PRIMARY KEY, fingerprint TEXT, answer BLOB);
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

    def live(self, task_id: str, now: float) -> list[HeldSum]:
        rows = self._c.execute(
            "SELECT round, tool, final, SUM(amount), COUNT(*) FROM holds"
            " WHERE task_id=? AND state='held' AND expires_at>? GROUP BY round, tool, final",
            (task_id, now),
        ).fetchall()
        return [HeldSum(r, t, bool(f), a, n) for r, t, f, a, n in rows]

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
        self._c.execute("INSERT INTO replies VALUES (?, ?, ?)", (key, fingerprint, answer))


class SqliteLedgerStore:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=FULL")
        self._conn.execute("PRAGMA busy_timeout=5000")
        self._conn.executescript(_SCHEMA)

    @contextmanager
    def transaction(self) -> Iterator[_Tx]:
        with self._lock:
            cur = self._conn.cursor()
            cur.execute("BEGIN IMMEDIATE")
            try:
                yield _Tx(cur)
            except BaseException:
                cur.execute("ROLLBACK")
                raise
            cur.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            self._conn.close()
