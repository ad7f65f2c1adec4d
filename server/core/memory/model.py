"""The domain model: memory records, queries and results (see shared/DESIGN.md).

Enum values equal the wire values of `pocketd.v1`, so conversion is a plain cast; 0 always means
"unspecified". Times are float seconds since the epoch (UTC).
"""

from __future__ import annotations

import enum

import msgspec
import numpy as np
import numpy.typing as npt

Vector = npt.NDArray[np.float32]


def unit(v: Vector) -> Vector:
    """`v` scaled to length 1, computed in float64 so that a vector scaled by 1e20 or 1e-30
    neither overflows nor underflows (validation has refused vectors with no direction)."""
    out: Vector = units(np.asarray(v).reshape(1, -1))[0]
    return out


def units(rows: Vector) -> Vector:
    """Each row scaled to length 1, in float64 like `unit`, in one vectorised pass."""
    w = np.asarray(rows, dtype=np.float64)
    n = np.linalg.norm(w, axis=1, keepdims=True)
    ok = (n > 0) & np.isfinite(n)
    out: Vector = np.where(ok, w / np.where(ok, n, 1.0), w).astype(np.float32)
    return out


class Kind(enum.IntEnum):
    UNSPECIFIED = 0
    PREFERENCE = 1
    FACT = 2
    SUMMARY = 3
    EPISODE = 4
    SKILL = 5
    OBSERVATION = 6


class Modality(enum.IntEnum):
    UNSPECIFIED = 0
    TEXT = 1
    IMAGE = 2
    AUDIO = 3
    TABLE = 4


class SourceType(enum.IntEnum):
    UNSPECIFIED = 0
    OFFICIAL_DOCUMENT = 1
    TOOL_RESULT = 2
    USER_STATEMENT = 3
    AGENT_INFERENCE = 4


class Tier(enum.IntEnum):
    UNSPECIFIED = 0
    HOT = 1
    WARM = 2
    COLD = 3


class GateDecision(enum.IntEnum):
    UNSPECIFIED = 0
    STORED = 1
    MERGED = 2
    REJECTED = 3


class Blob(msgspec.Struct, frozen=True):
    uri: str = ""
    mime_type: str = ""
    size_bytes: int = 0
    sha256: str = ""

    @property
    def held(self) -> bool:
        """Whether pocketd holds the bytes (in its blob store), not only a reference."""
        return self.uri.startswith(BLOB_URI)


# The URI of a blob pocketd holds: this, then its sha256.
BLOB_URI = "blob:sha256:"
# The text encoder's space, the one `Record`'s own vector lives in.
TEXT_SPACE = "text"


class SpaceVector(msgspec.Struct, frozen=True):
    """A vector in a named space other than the text encoder's (an image space, a client's),
    stored as float32 bytes."""

    space: str
    data: bytes

    @property
    def vector(self) -> Vector:
        out: Vector = np.frombuffer(self.data, dtype=np.float32)
        return out

    @staticmethod
    def of(space: str, v: Vector) -> SpaceVector:
        return SpaceVector(space, np.ascontiguousarray(v, dtype=np.float32).tobytes())


# The space of a media memory's passages: its read text's windows of lines (OCR lines, a
# transcript's sentences, a table's rows) in the text encoder's space, several a record, so that a
# question about one line of a long screenshot finds it (its best window's cosine).
PASSAGES = "passages"


class ProcessingState(enum.IntEnum):
    UNSPECIFIED = 0
    READY = 1
    PROCESSING = 2
    FAILED = 3


class Source(msgspec.Struct, frozen=True):
    tool: str = ""
    round: int = 0
    task_id: str = ""


class Record(msgspec.Struct):
    """One memory as stored. `key` is the store's integer id, also the index key."""

    memory_id: str
    namespace: str
    kind: Kind
    modality: Modality = Modality.TEXT
    session_id: str = ""
    text: str = ""
    blob: Blob | None = None
    source: Source = msgspec.field(default_factory=Source)
    source_type: SourceType = SourceType.UNSPECIFIED
    importance: int = 3
    # When it happened (`occurred_at` on the wire): decay, time filters and buckets use it.
    created_at: float = 0.0
    updated_at: float = 0.0
    # When the content was last asserted (creation, or a near-duplicate merged into it). Time decay
    # counts from here, so a restated fact is fresh again.
    refreshed_at: float = 0.0
    expires_at: float | None = None
    topic: str = ""
    tags: tuple[str, ...] = ()
    obsolete: bool = False
    superseded_by: str = ""
    group_id: str = ""
    tier: Tier = Tier.HOT
    access_count: int = 0
    last_accessed_at: float | None = None
    key: int = 0
    # Who said it; its position in its session (-1: none); when pocketd first stored it.
    speaker: str = ""
    turn: int = -1
    stored_at: float = 0.0
    # Server-set at write: whether the text says when ("last Saturday", "上周六"), the answer
    # type of a "when" question (kept in the record so that start-up need not scan every text).
    says_when: bool = False
    # Server-set when obsolete: why ("client", "reconcile", "value:<what changed>").
    supersede_reason: str = ""
    # The memories it was made from (a session's or a topic's summary).
    derived_from: tuple[str, ...] = ()
    # The topic summary that replaced it in recall (it lives in the cold tier then).
    compressed_into: str = ""
    # Vectors in other spaces than the text encoder's (an image space's, a client's): unit rows.
    space_vectors: tuple[SpaceVector, ...] = ()
    # Its passages (`PASSAGES`): unit vectors of the text encoder's, float32 bytes each.
    passages: tuple[bytes, ...] = ()
    # A warning its media processing left (the alignment check's), or why it failed.
    processing_note: str = ""
    # Server-set for a memory Get finds in the media queue: PROCESSING or FAILED.
    processing: ProcessingState = ProcessingState.READY

    def indexed_spaces(self) -> tuple[SpaceVector, ...]:
        """Its vectors in the named spaces' indexes: `space_vectors` and each passage."""
        return self.space_vectors + tuple(SpaceVector(PASSAGES, p) for p in self.passages)

    def space_vector(self, space: str) -> Vector | None:
        for sv in self.space_vectors:
            if sv.space == space:
                return sv.vector
        return None


def embedded_text(rec: Record, with_speaker: bool) -> str:
    """What a memory's vector encodes: its text, after its speaker's name when it has one and
    `with_speaker` (`memory.embed_speaker`), as a transcript reads."""
    if with_speaker and rec.speaker and rec.text:
        return f"{rec.speaker}: {rec.text}"
    return rec.text


class MediaInput(msgspec.Struct, frozen=True):
    """The bytes of a medium to read (RememberRequest's record.blob.data), what the client said
    of it, and whether the call waits until it is read."""

    data: bytes
    language: str = ""
    wait: bool = False


class WriteHints(msgspec.Struct, frozen=True):
    remember: bool = False
    error_resolved: bool = False


class NewMemory(msgspec.Struct):
    """A validated write request. `vector` is None when the server must encode `record.text`."""

    record: Record
    vector: Vector | None
    explicit_importance: int | None = None
    hints: WriteHints = msgspec.field(default_factory=WriteHints)
    supersedes: tuple[str, ...] = ()
    # The reason code the `supersedes` targets are marked with ("client"; "reconcile" for an
    # authoritative fact).
    supersede_reason: str = "client"
    # Whether the writer looks for the older memories it states a new value of (supersession
    # without ids). Off for Reconcile's facts: what they supersede is what its decisions say.
    auto_supersede: bool = True
    client_memory_id: bool = False
    # When it happened, as the client said; None: now. (1970-01-01 is a valid time, not "unset".)
    created_at: float | None = None
    # Its position in its session; None: the next one.
    turn: int | None = None
    # A medium to read before the record is written (the media pipeline takes it).
    media: MediaInput | None = None


class Supersession(msgspec.Struct, frozen=True):
    """One memory made obsolete by a write: which, by which, and the reason code."""

    memory_id: str
    superseded_by: str
    reason: str


class WriteResult(msgspec.Struct, frozen=True):
    memory_id: str
    decision: GateDecision
    reason: str
    importance: int
    expires_at: float | None
    tier: Tier
    superseded: tuple[Supersession, ...] = ()
    processing: ProcessingState = ProcessingState.READY
    warnings: tuple[str, ...] = ()


class MemoryFilter(msgspec.Struct, frozen=True):
    session_id: str = ""
    kinds: tuple[Kind, ...] = ()
    modalities: tuple[Modality, ...] = ()
    tags: tuple[str, ...] = ()
    created_after: float | None = None
    created_before: float | None = None
    min_importance: int = 0

    def is_empty(self) -> bool:
        return self == MemoryFilter()


class RecallQuery(msgspec.Struct):
    namespace: str
    text: str = ""
    vector: Vector | None = None
    image_query: bool = False
    top_k: int = 0
    filter: MemoryFilter = msgspec.field(default_factory=MemoryFilter)
    include_obsolete: bool = False
    include_expired: bool = False
    include_vectors: bool = False
    # Also search the cold tier's pockets (priced high; see `memory.lifecycle.cold`).
    include_cold: bool = False
    # The relevance floor on the fused score; None: `hybrid_search.min_score`.
    min_score: float | None = None
    # The pockets to search, in order; None: every pocket the filter allows.
    plan: list[PlanStep] | None = None
    # Stop the plan's vector steps once no pocket left could hold a memory that enters the top
    # k (see `server.core.query.early_stop`): the skipped steps are reported as "skipped".
    early_stop: bool = False
    # The reference time for decay and time cues; None: now.
    as_of: float | None = None
    # Neighbouring turns to return on each side of each hit.
    context_turns: int = 0
    # The routing policy for this Recall ("" : `router.policy`); see server.core.routing.
    route_policy: str = ""
    # Query vectors in other spaces (space → unit vector): an image space's (from a query image,
    # or the text through the space's text tower) and a client's.
    space_vectors: dict[str, Vector] = msgspec.field(default_factory=dict)
    # Query by image: its bytes, or the sha256 of a blob pocketd holds (read by the media
    # pipeline into `space_vectors` before the Recall runs).
    image: bytes = b""
    image_sha256: str = ""


class Score(msgspec.Struct, frozen=True):
    vector: float
    bm25: float
    fused: float
    decay: float
    final: float
    vector_hit: bool
    keyword_hit: bool
    exact_hit: bool = False
    # The space whose cosine `vector` is ("text", or an image or client space's, mapped onto the
    # text space's scale); "" when no vector channel found it.
    space: str = ""


class Hit(msgspec.Struct, frozen=True):
    record: Record
    score: Score
    vector: Vector | None = None
    # The name of the pocket it was found in.
    pocket: str = ""
    # Neighbouring turns of its session, in turn order (with `context_turns`).
    context: list[Record] = msgspec.field(default_factory=list)
    # The other memories of its group (an image, its OCR text, its caption), best first.
    group_members: tuple[str, ...] = ()


class Page(msgspec.Struct, frozen=True):
    """A page of List: records in event-time order, and where the next page starts (None: this
    was the last)."""

    records: list[Record]
    next_after: tuple[float, int, int] | None


class PlanStep(msgspec.Struct, frozen=True):
    """One step of a recall plan: search `pocket` for up to `depth` vector candidates."""

    pocket: str
    depth: int


class StepReport(msgspec.Struct, frozen=True):
    """What a plan step did: how (`exact`, `hnsw` or `hot`), how many vectors it scanned
    (an HNSW search reports its pocket's size), and what it cost."""

    pocket: str
    depth: int
    method: str
    scanned: int
    cost_units: float
    best: float = 0.0  # the best cosine the step found among the memories it kept


class RecallResult(msgspec.Struct, frozen=True):
    hits: list[Hit]
    vector_weight: float
    keyword_weight: float
    vector_candidates: int
    keyword_candidates: int
    took_micros: int
    plan: list[StepReport] = msgspec.field(default_factory=list)
    # Vector steps plus the keyword search.
    cost_units: float = 0.0
    keyword_cost_units: float = 0.0

    @property
    def pockets_searched(self) -> int:
        """The plan's steps that searched (not skipped by the early stop)."""
        return sum(1 for s in self.plan if s.method != "skipped")


class TierCount(msgspec.Struct, frozen=True):
    tier: Tier
    count: int


class PocketStats(msgspec.Struct, frozen=True):
    """One pocket as a router sees it."""

    name: str
    kind: Kind
    tier: Tier
    modality: Modality
    bucket: str
    size: int
    # How it is searched ("exact", "coarse", "hnsw" or "hot"), the cost of one scanned vector,
    # and of a search at the default depth, in cost units (one exact 384-d f16 dot product).
    method: str
    cost_per_vector: float
    search_cost: float
    oldest: float
    newest: float
    # The mean cosine distance of its indexed vectors to their centroid (0: all alike).
    radius: float
    centroid: Vector | None = None


class NamespaceStats(msgspec.Struct, frozen=True):
    namespace: str
    record_count: int
    obsolete_count: int
    tiers: tuple[TierCount, ...]
    pockets: tuple[PocketStats, ...] = ()


class IndexState(msgspec.Struct, frozen=True):
    """How far the warm indexes are behind the record store."""

    head_rev: int
    indexed_rev: int
    snapshot_rev: int
    # Acknowledged records not yet in the warm indexes.
    pending: int
    # Indexed rows not yet in a vector snapshot: what a crash would re-index on restart.
    unsnapshotted: int

    @property
    def catching_up(self) -> bool:
        return self.indexed_rev < self.head_rev


class MaintainReport(msgspec.Struct, frozen=True):
    """What one maintenance run did (`server.core.memory.lifecycle.run`)."""

    sessions_ended: int = 0
    moved_to_warm: int = 0
    moved_to_cold: int = 0
    topics_compressed: int = 0
    compressed_records: int = 0
    expired: int = 0
    superseded: int = 0
    # A run that a crash interrupted, finished at start-up before this one (0 or 1).
    resumed: int = 0
    took_micros: int = 0


class MediaCounts(msgspec.Struct, frozen=True):
    """The media pipeline's queue (items waiting or in work) and what it did since start-up."""

    pending: int = 0
    processed: int = 0
    failed: int = 0
    blobs: int = 0


class Stats(msgspec.Struct, frozen=True):
    namespaces: tuple[NamespaceStats, ...]
    pending_index: int
    index: IndexState
    media: MediaCounts = msgspec.field(default_factory=MediaCounts)
