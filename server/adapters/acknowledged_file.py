"""The memories the engine acknowledged and has not yet written, in their own SQLite file
(`<data_dir>/acknowledged.sqlite3`, the memory side's, apart from the records): WAL, each `keep`
one transaction committed with `synchronous=FULL` before it returns, so what a Step acknowledged
survives kill -9."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

_SCHEMA = "CREATE TABLE IF NOT EXISTS kept (memory_id TEXT PRIMARY KEY, body BLOB NOT NULL)"


class SqliteAcknowledgedStore:
    """An `AcknowledgedStore`: one connection, its transactions one at a time."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=FULL")
        self._conn.execute(_SCHEMA)
        self._lock = threading.Lock()

    def keep(self, bodies: Sequence[tuple[str, bytes]], drop: Sequence[str] = ()) -> None:
        with self._lock:
            cur = self._conn.cursor()
            cur.execute("BEGIN IMMEDIATE")
            try:
                cur.executemany("DELETE FROM kept WHERE memory_id=?", [(m,) for m in drop])
                cur.executemany("INSERT OR REPLACE INTO kept VALUES (?, ?)", bodies)
            except BaseException:
                cur.execute("ROLLBACK")
                raise
            cur.execute("COMMIT")

    def load(self) -> list[bytes]:
        with self._lock:
            rows = self._conn.execute("SELECT body FROM kept ORDER BY rowid").fetchall()
        return [r[0] for r in rows]

    def close(self) -> None:
        with self._lock:
            self._conn.close()
