"""The interfaces the core needs from storage and models; `server.adapters` implements them."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import msgspec
import numpy as np
import numpy.typing as npt

from server.core.memory.changes import Applied, Op
from server.core.memory.model import (
    MemoryFilter,
    Record,
    SpaceVector,
    Vector,
)
from server.core.memory.pockets import PocketCatalog, PocketKey

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

    def apply(self, ops: Sequence[Op]) -> list[Applied]:
        """Apply a change (`server.core.memory.changes`) in one durable transaction, giving each
        Put and Erase the next revision; return what was applied, in revision order. A Put with
        key 0 inserts; an Erase of a record that is not live is skipped; a Touch adds to the
        access statistics without a revision."""
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

    def search(
        self, query: Vector, count: int, exact: bool = False, expansion: int = 0
    ) -> tuple[KeyArray, npt.NDArray[np.float32]]:
        """Return (keys, cosine similarities), best first; `exact`: a brute-force scan of every
        vector (SIMD, over the stored f16) instead of the graph; `expansion`: the graph search's
        breadth (0: the index's own)."""
        ...

    def coarse_search(
        self, query: Vector, count: int, rerank: int
    ) -> tuple[KeyArray, npt.NDArray[np.float32]]:
        """Coarse to fine: the `rerank` best vectors by their int8 codes, of which the `count`
        best by the stored vectors; (keys, cosine similarities), best first."""
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

    @property
    def changes(self) -> int:
        """Grows whenever the indexed vectors change (what is derived from them can be cached
        under it)."""
        ...

    def moments(self) -> tuple[npt.NDArray[np.float64], int]:
        """The sum of the indexed vectors and their count (a centroid and a radius for free)."""
        ...

    def cap(self) -> tuple[npt.NDArray[np.float64], float] | None:
        """(anchor, floor): a unit direction and a cosine that every indexed vector reaches
        with it, the cap that bounds the best similarity a query can find here; None while
        the index is empty."""
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
    """A record as the keyword index holds it: with its pocket's name and the texts of its
    neighbouring turns in its session, each with its signed distance (−1: the turn before)."""

    record: Record
    pocket: str
    context: tuple[tuple[int, str], ...] = ()


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
    # The weight of a match in the speaker's name or the event date (the meta field).
    speaker_weight: float = 0.0
    # Each neighbour's weight in the turn's term counts and length (BM25F), by signed distance
    # (−1: the turn before); a distance left out weighs 0.
    context_weights: tuple[tuple[int, float], ...] = ()
    k1: float = 0.5
    b: float = 0.75
    # The share of the rarest idf that a query term no memory of the namespace holds counts in
    # the reference (the keyword scale): 0 leaves it out.
    unseen_weight: float = 0.3


@dataclass(frozen=True)
class KeywordResult:
    # (key, BM25 score under the namespace's own term statistics), best first.
    hits: list[tuple[int, float]]
    # Each query term present in the namespace, with its idf there.
    idf: dict[str, float]
    # Postings the search read (the terms' documents in its pockets, or in the namespace): its
    # cost.
    postings: int
    # The hits that hold every identifier of the query in their own text.
    exact: frozenset[int] = frozenset()


class SpaceIndexSet(Protocol):
    """The indexes of the named vector spaces other than the text encoder's: one per
    (namespace, pocket, space), each space with its own dimension (the built-in one is
    `server.adapters.space_index.SpaceIndexes`)."""

    def apply(
        self,
        namespace: str,
        gone: Sequence[int],
        puts: Sequence[tuple[int, str, tuple[SpaceVector, ...]]],
    ) -> None:
        """`gone` keys leave every index of the namespace; each of `puts` (key, pocket, its
        vectors) is in exactly its pocket's index of each space it has a vector in."""
        ...

    def dim(self, space: str) -> int | None:
        """The space's dimension, once a vector of it is stored."""
        ...

    def size(self, namespace: str, space: str) -> int: ...

    def search(
        self, namespace: str, space: str, pockets: Sequence[str] | None, vector: Vector, k: int
    ) -> tuple[KeyArray, npt.NDArray[np.float32]]:
        """The best k keys by cosine among those pockets (None: all) of the space."""
        ...

    def get(self, namespace: str, space: str, keys: Sequence[int]) -> dict[int, Vector]:
        """The stored vectors in the space of those keys that have one."""
        ...

    def saved_rev(self) -> int: ...

    def save(self, rev: int) -> None: ...


class KeywordIndex(Protocol):
    """A BM25 index over memory text; documents carry their namespace, pocket and filter
    fields, and term statistics are those of the namespace searched."""

    def analyze(self, text: str) -> list[str]:
        """The terms `text` is indexed under (and queried by)."""
        ...

    def score(self, q: KeywordQuery, keys: Sequence[int]) -> dict[int, float]:
        """The BM25 of the given memories as `search` scores them (absent: no query term)."""
        ...

    def upsert(self, docs: Sequence[KeywordDoc]) -> None: ...

    def remove(self, namespace: str, keys: Sequence[int]) -> None:
        """Delete the documents of `keys`, which must all be of `namespace` (keys are global and
        never reused; the namespace says whose statistics the removal changes)."""
        ...

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


BoolArray = npt.NDArray[np.bool_]
F32 = npt.NDArray[np.float32]
MaskFn = Callable[[KeyArray], BoolArray]


class HotTier(Protocol):
    """The hot tier: memories of tier hot and every memory the indexer has not reached, scanned
    exactly. A follower of the revision feed (`follow`); the indexer marks rows indexed. The
    built-in one is in memory (`server.core.memory.state.hot`); a shared one (Redis) can implement
    the same methods."""

    def follow(self, applied: Sequence[Applied]) -> None: ...

    def put(
        self,
        namespace: str,
        key: int,
        kind: int,
        vec: Vector,
        terms: Iterable[str],
        now: float,
        hot: bool,
        rev: int = 0,
    ) -> None:
        """Add or replace a row at revision `rev` (rebuilding after a restart)."""
        ...

    def mark_indexed(self, rows: Iterable[tuple[int, int]]) -> None:
        """Mark (key, revision) pairs indexed; a row rewritten since stays unindexed."""
        ...

    def evict(self) -> int:
        """Drop the indexed rows not of tier hot; return how many."""
        ...

    def pending(self) -> int:
        """Rows not yet indexed."""
        ...

    def contains(self, key: int) -> bool: ...

    def size(self) -> int:
        """Rows of every namespace."""
        ...

    def count(self, namespace: str) -> int: ...

    def scan(self, namespace: str, query: Vector, k: int, mask_fn: MaskFn) -> tuple[KeyArray, F32]:
        """Exact top-k by cosine of the rows that pass `mask_fn`."""
        ...

    def keyword(
        self, namespace: str, weights: dict[str, float], mask_fn: MaskFn
    ) -> tuple[KeyArray, F32]:
        """Unindexed rows holding query terms, by their weighted share of the terms."""
        ...

    def vectors(self, namespace: str, keys: Sequence[int]) -> dict[int, Vector]:
        """The vectors of those of `keys` that the hot tier holds."""
        ...

    def rows(self, namespace: str, kind: int) -> tuple[KeyArray, F32]:
        """Keys and unit vectors of the rows of one kind."""
        ...

    def moments(
        self, namespace: str, pocket_of: npt.NDArray[np.int32], pocket: int
    ) -> tuple[npt.NDArray[np.float64], int]:
        """Sum and count of the vectors of the rows in `pocket`."""
        ...


class MetadataColumns(Protocol):
    """Per-key metadata arrays of every live memory (a follower of the revision feed), for
    vectorised filtering, ranking and pocket sizes. The built-in one is
    `server.core.memory.state.columns.Columns`."""

    catalog: PocketCatalog
    ns: npt.NDArray[np.int32]
    kind: npt.NDArray[np.int8]
    created: npt.NDArray[np.float64]
    refreshed: npt.NDArray[np.float64]
    obsolete: BoolArray
    tier: npt.NDArray[np.int8]
    pocket: npt.NDArray[np.int32]
    session: npt.NDArray[np.int32]
    turn: npt.NDArray[np.int32]
    says_when: BoolArray
    script: npt.NDArray[np.int8]  # `server.core.memory.script.Script` of its text
    role: npt.NDArray[np.int8]  # `server.core.memory.roles.Role` its speaker names
    importance: npt.NDArray[np.int8]
    expires: npt.NDArray[np.float64]
    stored: npt.NDArray[np.float64]
    accesses: npt.NDArray[np.int32]
    last_access: npt.NDArray[np.float64]

    def follow(self, applied: Sequence[Applied]) -> None: ...

    def touch(self, tally: dict[int, tuple[int, float]]) -> None:
        """Fold committed accesses (key → (count, last time)) into the access columns."""
        ...

    def put(self, rec: Record) -> int:
        """Insert or update a row (rebuilding after a restart); return its pocket id."""
        ...

    def ns_id(self, namespace: str) -> int: ...

    def obsolete_count(self, ns_id: int) -> int:
        """The namespace's live obsolete memories."""
        ...

    def namespaces(self) -> dict[str, int]: ...

    def session_id(self, session: str) -> int:
        """The interned id of a session (-2 for one never seen)."""
        ...

    def current_session(self, ns_id: int) -> tuple[float, int]:
        """(event time, session id) of the namespace's current session: the one of its latest
        hot turn ((-inf, -1) before any)."""
        ...

    def latest_turn(self, ns_id: int) -> float:
        """The event time of the namespace's latest session turn, hot or not (-inf before any)."""
        ...

    def current(self, keys: KeyArray, kind: int | None = None) -> BoolArray: ...

    def mask(
        self,
        keys: KeyArray,
        ns_id: int,
        flt: MemoryFilter,
        now: float,
        include_obsolete: bool,
        include_expired: bool,
    ) -> BoolArray: ...

    def matching_keys(
        self,
        ns_id: int,
        pockets: list[int] | None,
        flt: MemoryFilter,
        now: float,
        include_obsolete: bool,
        include_expired: bool,
    ) -> KeyArray: ...

    def pocket_sizes(self, ns_id: int, pockets: int) -> npt.NDArray[np.int64]: ...

    def pocket_size(self, pocket: int) -> int:
        """Live records in one pocket."""
        ...

    def pocket_span(self, pocket: int) -> tuple[float, float] | None:
        """(earliest, latest) event time of the rows ever put in `pocket`: an envelope, which a
        row leaving does not shrink; None for a pocket never used."""
        ...

    def session_keys(self, ns_id: int, session: str) -> KeyArray:
        """The live keys of a session's turns, in turn order."""
        ...

    def next_turn(self, ns_id: int, session: str) -> int: ...

    def neighbours(self, key: int, n: int) -> tuple[KeyArray, KeyArray]: ...

    def neighbours_many(self, keys: Sequence[int], n: int) -> dict[int, tuple[KeyArray, KeyArray]]:
        """Up to n turns before and after each key in its session (keys not in one: left out)."""
        ...


class TextEncoder(Protocol):
    """Turns text into unit vectors of `dim` dimensions."""

    dim: int

    def encode(self, texts: Sequence[str]) -> Vector:
        """One unit row per text."""
        ...


@dataclass(frozen=True)
class ColumnsSnapshot:
    """Everything the columns hold, as of revision `rev`, under the pocket scheme `scheme`."""

    rev: int
    scheme: str
    arrays: dict[str, npt.NDArray[Any]]  # each of `ARRAYS`, one entry per key up to the last
    namespaces: dict[str, int]
    session_ids: dict[str, int]
    tags: dict[int, list[str]]
    sizes: dict[int, int]
    spans: dict[int, tuple[float, float]]
    # Each session's turn list: (namespace id, session id, count) and the keys, concatenated.
    session_heads: npt.NDArray[np.int64]
    session_keys: npt.NDArray[np.int64]
    pockets: list[tuple[int, PocketKey]]  # (namespace id, key), in pocket id order


class ColumnsSnapshots(Protocol):
    """Where the metadata columns' latest snapshot is kept (the built-in one is
    `server.adapters.columns_file.ColumnsFile`)."""

    def save(self, snap: ColumnsSnapshot) -> None:
        """Replace the kept snapshot with `snap`, atomically and durably."""
        ...

    def load(self) -> ColumnsSnapshot | None:
        """The kept snapshot; None when there is none or it cannot be read (then the columns
        are rebuilt from the store)."""
        ...

    def discard(self) -> None:
        """Remove the kept snapshot, durably (the next start-up rebuilds the columns)."""
        ...


class HotTurn(msgspec.Struct, frozen=True):
    """A session's raw turn as the hot tier's session memory holds it (until the session ends):
    what its summary is written from. `at` is its event time, `turn` its position."""

    key: int
    memory_id: str
    namespace: str
    session_id: str
    kind: int
    speaker: str
    text: str
    at: float
    turn: int


class HotSessions(Protocol):
    """The hot tier's session memory: each session's raw recent turns (the live records of tier
    hot with a session) and its last activity, which session end (EndSession, or
    `memory.hot.ttl_seconds` idle) reads and removes. A follower of the revision feed; the
    record store stays the truth it is loaded and resynced from. The built-in one is in
    memory (`server.core.memory.state.sessions`); `server.adapters.redis_sessions` keeps it in
    Redis, so that a restart keeps it."""

    def follow(self, applied: Sequence[Applied]) -> None:
        """A written record of tier hot with a session adds or replaces its turn (by key) and
        makes its session active now (the clock's); an erased record, or one no longer of tier
        hot or of a session, removes its key's turn."""
        ...

    def turns(self, namespace: str, session_id: str) -> list[HotTurn]:
        """The session's turns, in turn order."""
        ...

    def idle(self, before: float) -> list[tuple[str, str]]:
        """(namespace, session id) of the sessions last active before `before`, least recently
        active first: those whose TTL has run out. Nothing is dropped by it."""
        ...

    def sessions(self, namespace: str) -> list[str]:
        """The ids of the namespace's sessions that hold turns, sorted."""
        ...

    def end(self, namespace: str, session_id: str) -> list[HotTurn]:
        """Remove the session at once and return its turns, in turn order."""
        ...

    def load(self, turns: Iterable[HotTurn]) -> None:
        """Make the content exactly `turns` (the record store's, at start-up): erased turns are
        not resurrected, and loading twice is loading once. A session already held keeps its
        last activity; a new one is active now."""
        ...

    def healthy(self) -> None:
        """Raise `UnavailableError` when the backend cannot be reached."""
        ...

    def close(self) -> None: ...


class MaintenanceJournal(Protocol):
    """Where a maintenance run is recorded while it runs, so that one a crash interrupted is
    finished at the next start-up (each of its steps is one change: applied whole or not)."""

    def begin(self, namespace: str) -> None:
        """Record, durably, that a run over `namespace` ("" : every one) began."""
        ...

    def end(self) -> None:
        """Record, durably, that the run finished."""
        ...

    def pending(self) -> str | None:
        """The namespace of a run that began and never finished, else None."""
        ...


class AcknowledgedStore(Protocol):
    """Where the engine keeps the memories acknowledged to a caller and not yet written (the
    agent loop's), each encoded, by memory id."""

    def keep(self, bodies: Sequence[tuple[str, bytes]], drop: Sequence[str] = ()) -> None:
        """Keep `bodies` (memory id, body) and drop the ids `drop`, in one transaction that is
        durable when this returns."""
        ...

    def load(self) -> list[bytes]:
        """The kept bodies, oldest first."""
        ...

    def close(self) -> None: ...
