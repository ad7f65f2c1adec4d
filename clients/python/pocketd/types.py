"""Typed results of the pocketd client (plain frozen dataclasses, no protobuf in sight)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from google.protobuf.timestamp_pb2 import Timestamp

from pocketd.v1 import memory_pb2 as pb
from pocketd.v1 import memory_service_pb2 as spb


def _name(enum: object, value: int, prefix: str) -> str:
    return str(enum.Name(value))[len(prefix) :].lower()  # type: ignore[attr-defined]


def _dt(ts: Timestamp, present: bool = True) -> datetime | None:
    if not present:
        return None
    # Whole seconds and microseconds apart: a float sum rounds 9999-12-31T23:59:59.9999999 up
    # into the year 10000, which datetime cannot hold.
    return datetime.fromtimestamp(ts.seconds, tz=UTC) + timedelta(microseconds=ts.nanos // 1000)


def _state(value: int) -> str:
    """A ProcessingState's name; unset reads as "ready", as the proto says."""
    if value == pb.PROCESSING_STATE_UNSPECIFIED:
        return "ready"
    return _name(pb.ProcessingState, value, "PROCESSING_STATE_")


@dataclass(frozen=True)
class Blob:
    """A memory's medium: where it lives (for bytes pocketd stores, "blob:sha256:<hex>"), its
    sniffed type, size and hash, a recording's language, and its bytes (only from `get` with
    `include_blob_data`)."""

    uri: str
    mime_type: str
    size_bytes: int
    sha256: str
    language: str = ""
    data: bytes = field(default=b"", repr=False)

    @classmethod
    def from_pb(cls, b: pb.BlobRef) -> Blob:
        return cls(b.uri, b.mime_type, b.size_bytes, b.sha256, b.language, b.data)


@dataclass(frozen=True)
class Memory:
    """One stored memory. Enum values are lower-case names ("fact", "image", "hot")."""

    memory_id: str
    namespace: str
    kind: str
    modality: str
    text: str
    importance: int
    source_type: str
    session_id: str
    created_at: datetime | None
    updated_at: datetime | None
    expires_at: datetime | None
    tier: str
    tags: tuple[str, ...] = ()
    topic: str = ""
    group_id: str = ""
    obsolete: bool = False
    superseded_by: str = ""
    vector: tuple[float, ...] = field(default=(), repr=False)
    # When it happened; who said it; its position in its session (None: none).
    occurred_at: datetime | None = None
    speaker: str = ""
    turn: int | None = None
    # Why it was superseded ("client", "reconcile", "value:<what changed>"); what it was made
    # from (a summary's sources); the topic summary that replaced it in recall.
    supersede_reason: str = ""
    derived_from: tuple[str, ...] = ()
    compressed_into: str = ""
    # Its medium (None: none); where it stands in the media pipeline ("ready", "processing",
    # "failed") and why it failed or what the alignment check warned; its vectors in other
    # spaces than the text encoder's, by space name (only with `include_vector`).
    blob: Blob | None = None
    processing_state: str = "ready"
    processing_note: str = ""
    space_vectors: dict[str, tuple[float, ...]] = field(default_factory=dict, repr=False)

    @classmethod
    def from_pb(cls, r: pb.MemoryRecord) -> Memory:
        return cls(
            memory_id=r.memory_id,
            namespace=r.namespace,
            kind=_name(pb.MemoryKind, r.kind, "MEMORY_KIND_"),
            modality=_name(pb.Modality, r.modality, "MODALITY_"),
            text=r.text,
            importance=r.importance,
            source_type=_name(pb.SourceType, r.source_type, "SOURCE_TYPE_"),
            session_id=r.session_id,
            created_at=_dt(r.created_at, r.HasField("created_at")),
            updated_at=_dt(r.updated_at, r.HasField("updated_at")),
            expires_at=_dt(r.expires_at, r.HasField("expires_at")),
            tier=_name(pb.Tier, r.tier, "TIER_"),
            tags=tuple(r.tags),
            topic=r.topic,
            group_id=r.group_id,
            obsolete=r.obsolete,
            superseded_by=r.superseded_by,
            vector=tuple(r.vector),
            occurred_at=_dt(r.occurred_at, r.HasField("occurred_at")),
            speaker=r.speaker,
            turn=r.turn if r.HasField("turn") else None,
            supersede_reason=r.supersede_reason,
            derived_from=tuple(r.derived_from),
            compressed_into=r.compressed_into,
            blob=Blob.from_pb(r.blob) if r.HasField("blob") else None,
            processing_state=_state(r.processing_state),
            processing_note=r.processing_note,
            space_vectors={v.space: tuple(v.values) for v in r.space_vectors},
        )


@dataclass(frozen=True)
class Score:
    """How a hit was scored (see ScoreBreakdown in the proto)."""

    vector: float
    bm25: float
    fused: float
    decay: float
    final: float
    vector_hit: bool
    keyword_hit: bool
    exact_hit: bool = False
    # The space whose cosine `vector` is ("text", an image or client space; "": none).
    vector_space: str = ""


@dataclass(frozen=True)
class Hit:
    memory: Memory
    score: Score
    # The pocket it was found in.
    pocket: str = ""
    # With context_turns: the neighbouring turns of its session, in turn order.
    context: tuple[Memory, ...] = ()
    # The other memories of its group (an image, its OCR text, caption and summary share a
    # group_id and come back once, as the best of them), best first.
    group_member_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class Page:
    """One page of List; pass `next_page_token` to `list` for the next ("" on the last)."""

    memories: tuple[Memory, ...]
    next_page_token: str

    @classmethod
    def from_pb(cls, r: spb.ListResponse) -> Page:
        return cls(tuple(Memory.from_pb(m) for m in r.records), r.next_page_token)


@dataclass(frozen=True)
class PlanStepReport:
    """What one step of the recall plan did (see PlanStepReport in the proto)."""

    pocket: str
    depth: int
    method: str
    scanned: int
    cost_units: float


@dataclass(frozen=True)
class RecallResult:
    hits: tuple[Hit, ...]
    vector_weight: float
    keyword_weight: float
    took_micros: int
    plan: tuple[PlanStepReport, ...] = ()
    cost_units: float = 0.0

    @classmethod
    def from_pb(cls, r: spb.RecallResponse) -> RecallResult:
        return cls(
            hits=tuple(
                Hit(
                    Memory.from_pb(h.record),
                    Score(
                        h.score.vector,
                        h.score.bm25,
                        h.score.fused,
                        h.score.decay,
                        h.score.final,
                        h.score.vector_hit,
                        h.score.keyword_hit,
                        h.score.exact_hit,
                        h.score.vector_space,
                    ),
                    h.pocket,
                    tuple(Memory.from_pb(c) for c in h.context),
                    tuple(h.group_member_ids),
                )
                for h in r.hits
            ),
            vector_weight=r.vector_weight,
            keyword_weight=r.keyword_weight,
            took_micros=r.took_micros,
            plan=tuple(
                PlanStepReport(p.pocket, p.depth, p.method, p.scanned, p.cost_units) for p in r.plan
            ),
            cost_units=r.cost_units,
        )


@dataclass(frozen=True)
class Supersession:
    """An older memory a write made obsolete: which, by which, and why ("client", "reconcile",
    "value:<what changed>")."""

    memory_id: str
    superseded_by: str
    reason: str


@dataclass(frozen=True)
class RememberResult:
    """The write gate's verdict: decision is "stored", "merged" or "rejected"."""

    memory_id: str
    decision: str
    reason: str
    importance: int
    expires_at: datetime | None
    # Where it landed ("hot", "warm"; "unspecified" when rejected).
    tier: str = "unspecified"
    # The older memories it made obsolete: those it named, and those that stated an older
    # value of the same thing.
    superseded: tuple[Supersession, ...] = ()
    # "processing" while its medium is queued for reading (the memory_id is the one it will be
    # stored under), "failed" when reading it failed or the alignment check rejected it
    # (`reason` says why), "ready" otherwise; and what the write left to know (the alignment
    # check's disagreement, a table's rows left out).
    processing_state: str = "ready"
    warnings: tuple[str, ...] = ()

    @property
    def stored(self) -> bool:
        return self.decision in ("stored", "merged")

    @classmethod
    def from_pb(cls, r: spb.RememberResponse) -> RememberResult:
        return cls(
            memory_id=r.memory_id,
            decision=_name(spb.GateDecision, r.decision, "GATE_DECISION_"),
            reason=r.reason,
            importance=r.importance,
            expires_at=_dt(r.expires_at, r.HasField("expires_at")),
            tier=_name(pb.Tier, r.tier, "TIER_"),
            superseded=tuple(
                Supersession(x.memory_id, x.superseded_by, x.reason) for x in r.superseded
            ),
            processing_state=_state(r.processing_state),
            warnings=tuple(r.warnings),
        )


@dataclass(frozen=True)
class ReconcileDecision:
    """What reconciliation decided about one current memory: contradicted by the fact at
    `fact_index` (`supersede`), or kept, and why (the reason code first)."""

    memory_id: str
    text: str
    fact_index: int
    supersede: bool
    reason: str


@dataclass(frozen=True)
class ReconcileResult:
    """The stored facts' ids in order (none with dry_run), the decisions, and whether they
    were applied."""

    fact_ids: tuple[str, ...]
    decisions: tuple[ReconcileDecision, ...]
    applied: bool

    @classmethod
    def from_pb(cls, r: spb.ReconcileResponse) -> ReconcileResult:
        return cls(
            fact_ids=tuple(r.fact_ids),
            decisions=tuple(
                ReconcileDecision(d.memory_id, d.text, d.fact_index, d.supersede, d.reason)
                for d in r.decisions
            ),
            applied=r.applied,
        )


@dataclass(frozen=True)
class SessionEnd:
    """An ended session: its summaries as the write gate judged them (Get shows each one's
    `derived_from`), and how many of its turns moved from hot to warm."""

    summaries: tuple[RememberResult, ...]
    turns_moved: int

    @classmethod
    def from_pb(cls, r: spb.EndSessionResponse) -> SessionEnd:
        return cls(tuple(RememberResult.from_pb(x) for x in r.summaries), r.turns_moved)


@dataclass(frozen=True)
class MaintainReport:
    """What a maintenance run did (see MaintainResponse in the proto)."""

    sessions_ended: int
    moved_to_warm: int
    moved_to_cold: int
    topics_compressed: int
    compressed_records: int
    expired: int
    superseded: int
    resumed: int
    took_micros: int

    @classmethod
    def from_pb(cls, r: spb.MaintainResponse) -> MaintainReport:
        return cls(
            sessions_ended=r.sessions_ended,
            moved_to_warm=r.moved_to_warm,
            moved_to_cold=r.moved_to_cold,
            topics_compressed=r.topics_compressed,
            compressed_records=r.compressed_records,
            expired=r.expired,
            superseded=r.superseded,
            resumed=r.resumed,
            took_micros=r.took_micros,
        )


@dataclass(frozen=True)
class NamespaceStats:
    namespace: str
    record_count: int
    obsolete_count: int
    tiers: dict[str, int]
    # name → size, listed when Stats names the namespace.
    pockets: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class IndexStats:
    """How far the warm indexes are behind the record store."""

    head_revision: int
    indexed_revision: int
    snapshot_revision: int
    pending: int
    unsnapshotted: int
    catching_up: bool


@dataclass(frozen=True)
class MediaStats:
    """The media pipeline's queue (all namespaces) and what it did since start-up, and the
    blobs held (each once, whatever the number of memories holding it)."""

    pending: int = 0
    processed: int = 0
    failed: int = 0
    blobs: int = 0


@dataclass(frozen=True)
class Stats:
    namespaces: tuple[NamespaceStats, ...]
    pending_index: int
    index: IndexStats
    media: MediaStats = field(default_factory=MediaStats)

    @classmethod
    def from_pb(cls, r: spb.StatsResponse) -> Stats:
        return cls(
            namespaces=tuple(
                NamespaceStats(
                    n.namespace,
                    n.record_count,
                    n.obsolete_count,
                    {_name(pb.Tier, t.tier, "TIER_"): t.record_count for t in n.tiers},
                    {p.name: p.size for p in n.pockets},
                )
                for n in r.namespaces
            ),
            pending_index=r.pending_index,
            index=IndexStats(
                r.index.head_revision,
                r.index.indexed_revision,
                r.index.snapshot_revision,
                r.index.pending,
                r.index.unsnapshotted,
                r.index.catching_up,
            ),
            media=MediaStats(r.media.pending, r.media.processed, r.media.failed, r.media.blobs),
        )
