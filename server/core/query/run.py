"""The state of one Recall while its plan runs, and the read-side ports every stage reads."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from server.core.memory.costs import CostModel
from server.core.memory.model import PlanStep, RecallQuery, StepReport, Vector
from server.core.memory.ports import (
    HotTier,
    KeywordIndex,
    KeywordQuery,
    MetadataColumns,
    RecordStore,
    SpaceIndexSet,
    VectorIndexSet,
)
from server.core.memory.roles import Role
from server.core.memory.script import Script
from server.core.settings import HybridSearchSettings

KeyArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Sources:
    """What the read path reads: the settings, the state and the indexes (all behind ports)."""

    settings: HybridSearchSettings
    columns: MetadataColumns
    hot: HotTier
    vectors: VectorIndexSet
    keywords: KeywordIndex
    store: RecordStore
    costs: CostModel
    # The named spaces' indexes, and each space's (floor, ceiling): the cosines that mean no
    # match and a full match in it (a space not listed: the text space's own).
    spaces: SpaceIndexSet | None = None
    space_scales: dict[str, tuple[float, float]] = field(default_factory=dict)


class Reader:
    """A stage of the read path over `Sources`."""

    def __init__(self, src: Sources) -> None:
        self._s = src.settings
        self._cols = src.columns
        self._hot = src.hot
        self._vectors = src.vectors
        self._keywords = src.keywords
        self._store = src.store
        self._costs = src.costs


@dataclass
class Run:
    """The state of one recall while its plan runs."""

    q: RecallQuery
    ns_id: int
    now: float
    ref: float  # the reference time: `as_of`, else now
    pockets: dict[int, PlanStep]  # pocket id → its step
    vec: dict[int, float] = field(default_factory=dict)
    kw: dict[int, float] = field(default_factory=dict)
    exact: frozenset[int] = frozenset()
    reports: list[StepReport] = field(default_factory=list)
    keyword_cost: float = 0.0
    hnsw_vectors: int = 0  # in the plan's pockets searched by HNSW
    hot: set[int] = field(default_factory=set)  # keys the hot tier scored: exact, newest
    weights: tuple[float, float] = (0.5, 0.5)
    # The keyword query, its reference (Σ idf: the keyword scale), and whether its list was
    # full (then an unlisted memory may hold a query term, and score anything).
    kq: KeywordQuery | None = None
    reference: float = 0.0
    kw_full: bool = False
    # Of the query, read once: its time cue's event-time window, and whether it asks "when".
    window: tuple[float, float] | None = None
    temporal: bool = False
    asks_when: bool = False  # it asks when: the answer type is a memory that says when
    script: Script = Script.NONE  # the script the query's text is mostly written in
    role: Role = Role.NONE  # whose turns the question is about (the asker's, the agent's)
    asks_past: bool = False  # it asks for a past value: a slot's newer value is not put first
    # The caller left obsolete memories out: the channels still find them (`q.include_obsolete`
    # is set for the run), each passes its match to the current memory that superseded it
    # (`heirs`: obsolete key → its chain's head), and ranking leaves it out.
    hidden_obsolete: bool = False
    heirs: dict[int, int] = field(default_factory=dict)
    # The candidates' own vectors, as `Scorer.complete` read them (the slot rule reuses them).
    vectors: dict[int, Vector] = field(default_factory=dict)
    # The candidates whose vector score came from another space than the text encoder's (an
    # image space): key → the space (its cosine, mapped onto the text scale, is in `vec`).
    space: dict[int, str] = field(default_factory=dict)
    # The plan's pockets as a table of pocket ids, for the dict it was made of.
    _table: tuple[dict[int, PlanStep], npt.NDArray[np.bool_]] | None = field(
        default=None, repr=False
    )

    def add_vectors(self, keys: KeyArray, sims: npt.NDArray[np.float32]) -> None:
        """A warm pocket's candidates; the hot tier's score of a key stands (it is exact and
        holds the newest version of the memory)."""
        for k, sim in zip(keys.tolist(), sims.tolist(), strict=True):
            if k not in self.hot:
                self.vec[k] = sim

    def mask(self, cols: MetadataColumns, keys: KeyArray) -> npt.NDArray[np.bool_]:
        q = self.q
        m = cols.mask(keys, self.ns_id, q.filter, self.now, q.include_obsolete, q.include_expired)
        inside = keys < len(cols.pocket)
        of = cols.pocket[keys[inside]]
        table = self._in_plan()  # its last slot is False: every id beyond the plan's lands there
        m[inside] &= (of >= 0) & table[np.minimum(of, len(table) - 1)]
        return m

    def _in_plan(self) -> npt.NDArray[np.bool_]:
        """Pocket id → whether the plan searches it (a table: a lookup, not a set test)."""
        if self._table is None or self._table[0] is not self.pockets:
            table = np.zeros(max(self.pockets, default=-1) + 2, np.bool_)
            table[list(self.pockets)] = True
            self._table = (self.pockets, table)
        return self._table[1]
