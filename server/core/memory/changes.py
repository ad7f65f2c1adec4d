"""The one change path: every mutation of memory is a typed change that the single writer applies.

A change is a list of operations, applied by the record store in one transaction in which each
`Put` and `Erase` gets its revision:
- `Put`: write a record (a new memory, a merge into one, an upsert, the obsolete mark of a
  supersede, a tier move). Without a vector the stored one is kept.
- `Erase`: forget a record (by id or by filter): its text and vector are erased.
- `Touch`: add to a record's access statistics. It gets no revision: no follower indexes it.

The store returns what it applied (`Applied`, in revision order), and the writer hands that to
its synchronous followers (the metadata columns and the hot tier) before it acknowledges. The
warm indexes (usearch, tantivy) follow the same revisions asynchronously, through
`RecordStore.changes_since`. Nothing else mutates memory, so every follower sees every change once,
in order; one that restarts rebuilds from the store, or catches up from its saved revision.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from server.core.memory.model import Record, Vector


class Cause(enum.Enum):
    """Why a record is written or erased (for the log and the tests)."""

    STORE = "store"
    MERGE = "merge"
    UPSERT = "upsert"
    SUPERSEDE = "supersede"
    TIER_MOVE = "tier_move"
    FORGET = "forget"
    REEMBED = "reembed"
    # The lifecycle (server.core.memory.lifecycle): a topic's summary and its originals moved
    # to cold; a memory past expires_at; a supersession undone.
    COMPRESS = "compress"
    EXPIRE = "expire"
    UNSUPERSEDE = "unsupersede"


@dataclass(frozen=True)
class Put:
    record: Record  # key 0: a new row
    vector: Vector | None  # None: keep the stored vector
    cause: Cause


@dataclass(frozen=True)
class Erase:
    key: int
    cause: Cause = Cause.FORGET


@dataclass(frozen=True)
class Touch:
    key: int
    accesses: int
    last: float


Op = Put | Erase | Touch


@dataclass(frozen=True)
class Applied:
    """One applied revision: the record as stored (with its key) and its vector, or, for an
    erased record, only its key and namespace."""

    rev: int
    key: int
    namespace: str
    record: Record | None  # None: erased
    vector: Vector | None  # the stored vector of a written record


class Follower(Protocol):
    """State derived from the revision feed, kept current by the writer."""

    def follow(self, applied: Sequence[Applied]) -> None:
        """Apply committed revisions, in order."""
        ...
