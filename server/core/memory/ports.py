"""The interfaces the core needs from storage and models; `server.adapters` implements them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from server.core.memory.model import MemoryFilter, Record, Vector

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
    """An ANN index over unit vectors, one per pocket."""

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

    def moments(self) -> tuple[npt.NDArray[np.float64], int]:
        """The sum of the indexed vectors and their count (a centroid and a radius for free)."""
        ...

    def __len__(self) -> int: ...


class VectorIndexSet(Protocol):
    """The pockets' vector indexes, persisted together with a watermark revision."""

    def partition(self, namespace: str, pocket: str, create: bool) -> VectorIndex | None:
        """The index of a pocket (by its name inside the namespace)."""
        ...

    def partitions(self, namespace: str) -> Mapping[str, VectorIndex]:
        """Every index of a namespace, by pocket name."""
        ...

    def save(self, rev: int) -> None:
        """Persist every index, then record `rev` as the revision they contain."""
        ...

    def saved_rev(self) -> int: ...

    def size(self) -> int:
        """Vectors in every partition."""
        ...


@dataclass(frozen=True)
class KeywordDoc:
    """A record as the keyword index holds it: with its pocket's name and the text of its
    neighbouring turns (the context field)."""

    record: Record
    pocket: str
    context: str = ""


@dataclass(frozen=True)
class KeywordQuery:
    """A BM25 search inside one namespace. The pocket restriction and the filter are part of the
    index query, so a selective filter still gets its full `count` of candidates."""

    namespace: str
    text: str
    count: int
    filter: MemoryFilter
    now: float
    include_obsolete: bool = False
    include_expired: bool = False
    # Pocket names to search; None: every pocket of the namespace.
    pockets: tuple[str, ...] | None = None
    # Analysed query terms that are exact identifiers: `exact` lists the matching records that
    # hold every one of them.
    identifiers: tuple[str, ...] = ()
    # Weights of a match in the speaker's name and in the neighbouring turns' context.
    speaker_weight: float = 0.0
    context_weight: float = 0.0


@dataclass(frozen=True)
class KeywordResult:
    # (key, BM25 score under the namespace's own term statistics), best first.
    hits: list[tuple[int, float]]
    # Each query term present in the namespace, with its idf there.
    idf: dict[str, float]
    # Postings the search read (the sum of the terms' document frequencies): its cost.
    postings: int
    # Matching records that hold every identifier of the query.
    exact: frozenset[int] = frozenset()


class KeywordIndex(Protocol):
    """A BM25 index over memory text; documents carry their namespace, pocket and filter
    fields, and term statistics are those of the namespace searched."""

    def analyze(self, text: str) -> list[str]:
        """The terms `text` is indexed under (and queried by)."""
        ...

    def upsert(self, docs: Sequence[KeywordDoc]) -> None: ...

    def remove(self, keys: Sequence[int]) -> None: ...

    def commit(self, rev: int) -> None:
        """Make the changes durable and searchable; record `rev` as the revision it contains."""
        ...

    def committed_rev(self) -> int: ...

    def search(self, q: KeywordQuery) -> KeywordResult: ...

    def pocket_terms(self, namespace: str, terms: Sequence[str]) -> dict[str, dict[str, int]]:
        """Document frequency of each term in each pocket of the namespace: {pocket: {term: df}}
        (a router feature)."""
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
