"""The record store: SQLite in WAL mode, the source of truth.

Each write is one transaction committed with `synchronous=FULL`, so a record is on disk before
`write` returns (and before the server acknowledges it). Payloads are msgspec MessagePack; vectors
are raw little-endian float32. Every change gets a new, strictly increasing revision `rev`, which
the background indexer follows (`changes_since`) to catch the warm indexes up, also after a crash.
Forgotten records keep a tombstone row (no text, no vector) so the indexer sees the deletion.
Payloads are also held in a `RecordCache` (write-through, bounded in bytes), so `get` (a
Recall's hits) is served from memory; vectors are read from SQLite.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import msgspec
import numpy as np

from server.adapters.record_cache import RecordCache
from server.core.memory.changes import Applied, Erase, Op, Put, Touch
from server.core.memory.model import Record, Tier, Vector
from server.core.memory.ports import ChangedRow
from server.core.memory.timecues import has_time_expression

_SCHEMA = """
CREATE TABLE IF NOT EXISTS records (
    key        INTEGER PRIMARY KEY AUTOINCREMENT,
    namespace  TEXT    NOT NULL,
    memory_id  TEXT    NOT NULL,
    kind       INTEGER NOT NULL,
    rev        INTEGER NOT NULL,
    deleted    INTEGER NOT NULL DEFAULT 0,
    payload    BLOB,
    vector     BLOB
);
CREATE UNIQUE INDEX IF NOT EXISTS records_by_id ON records(namespace, memory_id);
CREATE INDEX IF NOT EXISTS records_by_rev ON records(rev);
"""

_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(Record)
# SQLite's limit on the variables of one statement, with room to spare.
MAX_VARIABLES = 900
# Bytes of payloads held in memory by default.
CACHE_BYTES = 128 << 20


def _decode(payload: bytes) -> Record:
    """A stored record. One written before tier was stored state (no `stored_at`) said "hot"
    for every record; it reads as warm, stored when it was last written, so an old data
    directory opens as the new code would have written it."""
    rec = _decoder.decode(payload)
    if not rec.stored_at:
        rec.stored_at = rec.updated_at or rec.created_at
        rec.says_when = has_time_expression(rec.text)
        if rec.tier == Tier.HOT:
            rec.tier = Tier.WARM
    return rec


def _vec_bytes(v: Vector | None) -> bytes | None:
    return None if v is None else np.ascontiguousarray(v, dtype="<f4").tobytes()


def _vec(b: bytes | None) -> Vector | None:
    return None if b is None else np.frombuffer(b, dtype="<f4").astype(np.float32)


class SqliteRecordStore:
    """`RecordStore` over one SQLite file. One writer connection; one reader per thread."""

    def __init__(self, path: Path, cache_bytes: int = CACHE_BYTES) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._cache = RecordCache(cache_bytes)
        self._path = path
        self._wlock = threading.Lock()
        self._local = threading.local()
        self._w = self._connect()
        self._w.executescript(_SCHEMA)
        row = self._w.execute("SELECT COALESCE(MAX(rev), 0) FROM records").fetchone()
        self._rev: int = int(row[0])
        self._readers: list[sqlite3.Connection] = []

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("PRAGMA busy_timeout=5000")
        return conn

    def _reader(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            conn.execute("PRAGMA query_only=1")
            self._local.conn = conn
            with self._wlock:
                self._readers.append(conn)
        return conn

    def apply(self, ops: Sequence[Op]) -> list[Applied]:
        """Apply a change in one durable transaction; every Put and Erase gets a revision."""
        out: list[Applied] = []
        written: dict[int, bytes | None] = {}  # each key's new payload, None when erased
        with self._wlock:
            cur = self._w.cursor()
            cur.execute("BEGIN IMMEDIATE")
            try:
                for op in ops:
                    if isinstance(op, Put):
                        applied, payload = self._put(cur, op)
                        out.append(applied)
                        written[applied.key] = payload
                    elif isinstance(op, Erase):
                        if (gone := self._erase(cur, op.key)) is not None:
                            out.append(gone)
                            written[op.key] = None
                    elif (touched := self._touch(cur, op)) is not None:
                        written[op.key] = touched
                cur.execute("COMMIT")
            except BaseException:
                cur.execute("ROLLBACK")
                self._rev = int(
                    self._w.execute("SELECT COALESCE(MAX(rev),0) FROM records").fetchone()[0]
                )
                raise
            self._cache.committed(written)
        return out

    def _put(self, cur: sqlite3.Cursor, op: Put) -> tuple[Applied, bytes]:
        rec = op.record
        self._rev += 1
        payload = _encoder.encode(rec)
        vec = _vec_bytes(op.vector)
        if rec.key:
            row = cur.execute(
                "SELECT deleted, vector FROM records WHERE key=?", (rec.key,)
            ).fetchone()
            if row is None or (vec is None and row[0]):
                # A programming error, not bad input: roll the whole change back.
                raise KeyError(f"no row {rec.key} to write in place (or an erased one, no vector)")
            cur.execute(
                "UPDATE records SET rev=?, deleted=0, payload=?, vector=COALESCE(?, vector),"
                " kind=?, namespace=?, memory_id=? WHERE key=?",
                (self._rev, payload, vec, int(rec.kind), rec.namespace, rec.memory_id, rec.key),
            )
            key = rec.key
            vec = row[1] if vec is None else vec
        else:
            cur.execute(
                "INSERT INTO records(namespace, memory_id, kind, rev, payload, vector)"
                " VALUES (?,?,?,?,?,?)",
                (rec.namespace, rec.memory_id, int(rec.kind), self._rev, payload, vec),
            )
            assert cur.lastrowid is not None
            key = cur.lastrowid
        stored = msgspec.structs.replace(rec, key=key)
        return Applied(self._rev, key, rec.namespace, stored, _vec(vec)), payload

    def _erase(self, cur: sqlite3.Cursor, key: int) -> Applied | None:
        row = cur.execute(
            "SELECT namespace FROM records WHERE key=? AND deleted=0", (key,)
        ).fetchone()
        if row is None:
            return None
        self._rev += 1
        cur.execute(
            "UPDATE records SET rev=?, deleted=1, payload=NULL, vector=NULL WHERE key=?",
            (self._rev, key),
        )
        return Applied(self._rev, key, str(row[0]), None, None)

    def _touch(self, cur: sqlite3.Cursor, op: Touch) -> bytes | None:
        """The accesses added to a live record: its new payload (None: it was forgotten)."""
        row = cur.execute(
            "SELECT payload FROM records WHERE key=? AND deleted=0", (op.key,)
        ).fetchone()
        if row is None:  # forgotten since it was read
            return None
        rec = _decode(row[0])
        rec.access_count += op.accesses
        rec.last_accessed_at = max(rec.last_accessed_at or 0.0, op.last)
        payload = _encoder.encode(rec)
        cur.execute("UPDATE records SET payload=? WHERE key=?", (payload, op.key))
        return payload

    def _live_column(self, column: str, keys: Sequence[int]) -> list[tuple[int, bytes]]:
        """(key, column) of the live rows among `keys`, in statements of at most
        `MAX_VARIABLES` keys."""
        rows: list[tuple[int, bytes]] = []
        for start in range(0, len(keys), MAX_VARIABLES):
            chunk = list(keys[start : start + MAX_VARIABLES])
            marks = ",".join("?" * len(chunk))
            sql = f"SELECT key, {column} FROM records WHERE deleted=0 AND key IN ({marks})"
            rows.extend(self._reader().execute(sql, chunk).fetchall())
        return rows

    def get(self, keys: Sequence[int]) -> dict[int, Record]:
        """The live records among `keys`: held payloads first, the others from SQLite (and
        then held, unless a change was committed meanwhile)."""
        held, missed = self._cache.get(keys)
        if missed:
            changes = self._cache.changes()
            read = dict(self._live_column("payload", missed))
            self._cache.put(read, changes)
            held.update(read)
        out: dict[int, Record] = {}
        for key, payload in held.items():
            rec = _decode(payload)
            rec.key = key
            out[key] = rec
        return out

    def get_vectors(self, keys: Sequence[int]) -> dict[int, Vector]:
        return {k: v for k, b in self._live_column("vector", keys) if (v := _vec(b)) is not None}

    def key_of(self, namespace: str, memory_id: str, include_deleted: bool = False) -> int | None:
        sql = "SELECT key FROM records WHERE namespace=? AND memory_id=?"
        if not include_deleted:
            sql += " AND deleted=0"
        row = self._reader().execute(sql, (namespace, memory_id)).fetchone()
        return None if row is None else int(row[0])

    def changes_since(self, rev: int, limit: int) -> list[ChangedRow]:
        rows = (
            self._reader()
            .execute(
                "SELECT key, namespace, memory_id, kind, rev, deleted, payload, vector FROM records"
                " WHERE rev > ? ORDER BY rev LIMIT ?",
                (rev, limit),
            )
            .fetchall()
        )
        out: list[ChangedRow] = []
        for key, ns, mid, kind, r, deleted, payload, vec in rows:
            if deleted:
                rec = Record(memory_id=mid, namespace=ns, kind=kind, key=key)
            else:
                rec = _decode(payload)
                rec.key = key
            out.append(ChangedRow(rec, _vec(vec), int(r), bool(deleted)))
        return out

    def head_rev(self) -> int:
        return self._rev

    def scan_live(self) -> Iterator[Record]:
        cur = self._reader().execute(
            "SELECT key, payload FROM records WHERE deleted=0 ORDER BY key"
        )
        while batch := cur.fetchmany(4096):
            for key, payload in batch:
                rec = _decode(payload)
                rec.key = key
                yield rec

    def close(self) -> None:
        with self._wlock:
            for conn in self._readers:
                conn.close()
            self._readers.clear()
            self._w.close()
