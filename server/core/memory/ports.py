"""The interfaces the core needs from storage and models; `server.adapters` implements them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from server.core.memory.model import Record, Vector

KeyArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class ChangedRow:
    """A row of the record store as the indexer follows it: the record (only key, namespace,
    memory_id and kind for a forgotten one), its stored vector, its revision and whether it was
    forgotten."""

    record: Record
    vector: Vector | None
    rev: int
    deleted: bool


class RecordStore(Protocol):
    """The source of truth. Writes are durable when `write` returns."""

    def write(self, records: Sequence[Record], vectors: Sequence[Vector | None]) -> list[int]:
        """Insert or update records in one durable transaction; assign and return their keys.

        A record with key 0 is new; a record with a key replaces that row.
        """
        ...

    def delete(self, keys: Sequence[int]) -> int:
        """Erase records (text and vector) in one durable transaction; return how many."""
        ...

    def get(self, keys: Sequence[int]) -> dict[int, Record]:
        """Read records by key (missing and deleted keys are left out)."""
        ...

    def get_vectors(self, keys: Sequence[int]) -> dict[int, Vector]:
        """Read stored vectors by key."""
        ...

    def key_of(self, namespace: str, memory_id: str, include_deleted: bool = False) -> int | None:
        """The key of a live record (or of a forgotten one too), or None."""
        ...

    def changes_since(self, rev: int, limit: int) -> list[ChangedRow]:
        """Rows changed after revision `rev`, oldest change first (deleted rows included)."""
        ...

    def add_access(self, tally: dict[int, tuple[int, float]]) -> None:
        """Add {key: (accesses, latest time)} to live records' access statistics, in one
        transaction, without a new revision (no index follows them)."""
        ...

    def head_rev(self) -> int:
        """The latest revision."""
        ...

    def scan_live(self) -> Iterable[Record]:
        """Every live record (for start-up), without vectors."""
        ...

    def close(self) -> None: ...


class VectorIndex(Protocol):
    """An ANN index over unit vectors, one per partition (namespace, kind)."""

    def add(self, keys: KeyArray, vectors: Vector) -> None: ...

    def remove(self, keys: KeyArray) -> None: ...

    def search(self, query: Vector, count: int) -> tuple[KeyArray, npt.NDArray[np.float32]]:
        """Return (keys, cosine similarities), best first."""
        ...

    def search_batch(
        self, queries: Vector, count: int, expansion: int = 0
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """Search many queries with breadth `expansion` (0: the default): (keys, cosines), each
        (len(queries), count); missing slots are -1 and -inf."""
        ...

    def get(self, keys: KeyArray) -> Vector:
        """The indexed vectors of `keys`, one row each (zeros for missing keys)."""
        ...

    def __len__(self) -> int: ...


class VectorIndexSet(Protocol):
    """The partitions' vector indexes, persisted together with a watermark revision."""

    def partition(self, namespace: str, kind: int, create: bool) -> VectorIndex | None: ...

    def save(self, rev: int) -> None:
        """Persist every index, then record `rev` as the revision they contain."""
        ...

    def saved_rev(self) -> int: ...

    def size(self) -> int:
        """Vectors in every partition."""
        ...


class KeywordIndex(Protocol):
    """A BM25 index over memory text, filtered by namespace."""

    def analyze(self, text: str) -> list[str]:
        """The terms `text` is indexed under (and queried by)."""
        ...

    def upsert(self, records: Sequence[Record]) -> None: ...

    def remove(self, keys: Sequence[int]) -> None: ...

    def commit(self, rev: int) -> None:
        """Make the changes durable and searchable; record `rev` as the revision it contains."""
        ...

    def committed_rev(self) -> int: ...

    def search(self, namespace: str, text: str, count: int) -> list[tuple[int, float]]:
        """Return (key, raw BM25 score), best first."""
        ...

    def close(self) -> None: ...


class TextEncoder(Protocol):
    """Turns text into unit vectors of `dim` dimensions."""

    dim: int

    def encode(self, texts: Sequence[str]) -> Vector:
        """One unit row per text."""
        ...


class Clock(Protocol):
    """Time source, injected so tests can move it."""

    def now(self) -> float: ...
