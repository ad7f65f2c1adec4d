"""The media pipeline's durable state in its own SQLite file (`<data_dir>/media.sqlite`): the
jobs waiting to be read, and which record holds which blob.

Every change commits at once with `synchronous=FULL`: a job is durable before the Remember that
queued it is acknowledged, so a kill -9 loses no acknowledged medium. Failed jobs are kept (the
newest `KEEP_FAILED`) so that Get can say why a memory never appeared.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from server.core.media.ports import Job

KEEP_FAILED = 10_000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    namespace TEXT NOT NULL,
    memory_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    spec BLOB NOT NULL,
    created REAL NOT NULL,
    failed TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS refs (key INTEGER PRIMARY KEY, sha256 TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
"""


class SqliteMediaLedger:
    """Implements `server.core.media.ports.MediaLedger`."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.executescript(_SCHEMA)
        self._lock = threading.Lock()

    def add(self, job: Job) -> int:
        with self._lock:
            cur = self._db.execute(
                "INSERT INTO jobs (namespace, memory_id, session_id, sha256, spec, created)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (job.namespace, job.memory_id, job.session_id, job.sha256, job.spec, job.created),
            )
            return int(cur.lastrowid or 0)

    def jobs(self) -> list[Job]:
        with self._lock:
            rows = self._db.execute(
                "SELECT id, namespace, memory_id, session_id, sha256, spec, created, failed"
                " FROM jobs ORDER BY id"
            ).fetchall()
        return [Job(*row) for row in rows]

    def finish(self, job_id: int) -> None:
        with self._lock:
            self._db.execute("DELETE FROM jobs WHERE id = ?", (job_id,))

    def fail(self, job_id: int, why: str) -> None:
        with self._lock:
            self._db.execute("BEGIN")
            self._db.execute("UPDATE jobs SET failed = ?, spec = x'' WHERE id = ?", (why, job_id))
            self._db.execute(
                "DELETE FROM jobs WHERE failed != '' AND id NOT IN"
                " (SELECT id FROM jobs WHERE failed != '' ORDER BY id DESC LIMIT ?)",
                (KEEP_FAILED,),
            )
            self._db.execute("COMMIT")

    def refs(self) -> tuple[int, dict[int, str]]:
        with self._lock:
            got = self._db.execute("SELECT value FROM meta WHERE name = 'refs_rev'").fetchone()
            rows = self._db.execute("SELECT key, sha256 FROM refs").fetchall()
        return (int(got[0]) if got else 0), {int(k): str(s) for k, s in rows}

    def save_refs(self, rev: int, put: dict[int, str], drop: list[int]) -> None:
        with self._lock:
            self._db.execute("BEGIN")
            self._db.executemany("DELETE FROM refs WHERE key = ?", [(k,) for k in drop])
            self._db.executemany(
                "INSERT OR REPLACE INTO refs (key, sha256) VALUES (?, ?)", list(put.items())
            )
            self._db.execute(
                "INSERT OR REPLACE INTO meta (name, value) VALUES ('refs_rev', ?)", (rev,)
            )
            self._db.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            self._db.close()
