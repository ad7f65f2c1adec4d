import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from pocketd.v1 import memory_pb2 as _memory_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class GateDecision(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    GATE_DECISION_UNSPECIFIED: _ClassVar[GateDecision]
    GATE_DECISION_STORED: _ClassVar[GateDecision]
    GATE_DECISION_MERGED: _ClassVar[GateDecision]
    GATE_DECISION_REJECTED: _ClassVar[GateDecision]
GATE_DECISION_UNSPECIFIED: GateDecision
GATE_DECISION_STORED: GateDecision
GATE_DECISION_MERGED: GateDecision
GATE_DECISION_REJECTED: GateDecision

class WriteHints(_message.Message):
    __slots__ = ("remember", "error_resolved")
    REMEMBER_FIELD_NUMBER: _ClassVar[int]
    ERROR_RESOLVED_FIELD_NUMBER: _ClassVar[int]
    remember: bool
    error_resolved: bool
    def __init__(self, remember: _Optional[bool] = ..., error_resolved: _Optional[bool] = ...) -> None: ...

class RememberRequest(_message.Message):
    __slots__ = ("record", "hints", "supersedes", "wait_processed")
    RECORD_FIELD_NUMBER: _ClassVar[int]
    HINTS_FIELD_NUMBER: _ClassVar[int]
    SUPERSEDES_FIELD_NUMBER: _ClassVar[int]
    WAIT_PROCESSED_FIELD_NUMBER: _ClassVar[int]
    record: _memory_pb2.MemoryRecord
    hints: WriteHints
    supersedes: _containers.RepeatedScalarFieldContainer[str]
    wait_processed: bool
    def __init__(self, record: _Optional[_Union[_memory_pb2.MemoryRecord, _Mapping]] = ..., hints: _Optional[_Union[WriteHints, _Mapping]] = ..., supersedes: _Optional[_Iterable[str]] = ..., wait_processed: _Optional[bool] = ...) -> None: ...

class RememberResponse(_message.Message):
    __slots__ = ("memory_id", "decision", "reason", "importance", "expires_at", "tier", "superseded", "processing_state", "warnings")
    MEMORY_ID_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    IMPORTANCE_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    TIER_FIELD_NUMBER: _ClassVar[int]
    SUPERSEDED_FIELD_NUMBER: _ClassVar[int]
    PROCESSING_STATE_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    memory_id: str
    decision: GateDecision
    reason: str
    importance: int
    expires_at: _timestamp_pb2.Timestamp
    tier: _memory_pb2.Tier
    superseded: _containers.RepeatedCompositeFieldContainer[Supersession]
    processing_state: _memory_pb2.ProcessingState
    warnings: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, memory_id: _Optional[str] = ..., decision: _Optional[_Union[GateDecision, str]] = ..., reason: _Optional[str] = ..., importance: _Optional[int] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., tier: _Optional[_Union[_memory_pb2.Tier, str]] = ..., superseded: _Optional[_Iterable[_Union[Supersession, _Mapping]]] = ..., processing_state: _Optional[_Union[_memory_pb2.ProcessingState, str]] = ..., warnings: _Optional[_Iterable[str]] = ...) -> None: ...

class Supersession(_message.Message):
    __slots__ = ("memory_id", "superseded_by", "reason")
    MEMORY_ID_FIELD_NUMBER: _ClassVar[int]
    SUPERSEDED_BY_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    memory_id: str
    superseded_by: str
    reason: str
    def __init__(self, memory_id: _Optional[str] = ..., superseded_by: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class RememberBatchRequest(_message.Message):
    __slots__ = ("items",)
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedCompositeFieldContainer[RememberRequest]
    def __init__(self, items: _Optional[_Iterable[_Union[RememberRequest, _Mapping]]] = ...) -> None: ...

class RememberBatchResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[RememberResponse]
    def __init__(self, results: _Optional[_Iterable[_Union[RememberResponse, _Mapping]]] = ...) -> None: ...

class MemoryFilter(_message.Message):
    __slots__ = ("session_id", "kinds", "modalities", "tags", "created_after", "created_before", "min_importance")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    KINDS_FIELD_NUMBER: _ClassVar[int]
    MODALITIES_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    CREATED_AFTER_FIELD_NUMBER: _ClassVar[int]
    CREATED_BEFORE_FIELD_NUMBER: _ClassVar[int]
    MIN_IMPORTANCE_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    kinds: _containers.RepeatedScalarFieldContainer[_memory_pb2.MemoryKind]
    modalities: _containers.RepeatedScalarFieldContainer[_memory_pb2.Modality]
    tags: _containers.RepeatedScalarFieldContainer[str]
    created_after: _timestamp_pb2.Timestamp
    created_before: _timestamp_pb2.Timestamp
    min_importance: int
    def __init__(self, session_id: _Optional[str] = ..., kinds: _Optional[_Iterable[_Union[_memory_pb2.MemoryKind, str]]] = ..., modalities: _Optional[_Iterable[_Union[_memory_pb2.Modality, str]]] = ..., tags: _Optional[_Iterable[str]] = ..., created_after: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., created_before: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., min_importance: _Optional[int] = ...) -> None: ...

class RecallRequest(_message.Message):
    __slots__ = ("namespace", "query_text", "query_vector", "query_modality", "top_k", "filter", "include_obsolete", "include_expired", "include_vectors", "min_score", "plan", "as_of", "context_turns", "route_policy", "include_cold", "query_blob", "query_space_vectors")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    QUERY_TEXT_FIELD_NUMBER: _ClassVar[int]
    QUERY_VECTOR_FIELD_NUMBER: _ClassVar[int]
    QUERY_MODALITY_FIELD_NUMBER: _ClassVar[int]
    TOP_K_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_OBSOLETE_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_EXPIRED_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_VECTORS_FIELD_NUMBER: _ClassVar[int]
    MIN_SCORE_FIELD_NUMBER: _ClassVar[int]
    PLAN_FIELD_NUMBER: _ClassVar[int]
    AS_OF_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_TURNS_FIELD_NUMBER: _ClassVar[int]
    ROUTE_POLICY_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_COLD_FIELD_NUMBER: _ClassVar[int]
    QUERY_BLOB_FIELD_NUMBER: _ClassVar[int]
    QUERY_SPACE_VECTORS_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    query_text: str
    query_vector: _containers.RepeatedScalarFieldContainer[float]
    query_modality: _memory_pb2.Modality
    top_k: int
    filter: MemoryFilter
    include_obsolete: bool
    include_expired: bool
    include_vectors: bool
    min_score: float
    plan: _containers.RepeatedCompositeFieldContainer[PlanStep]
    as_of: _timestamp_pb2.Timestamp
    context_turns: int
    route_policy: str
    include_cold: bool
    query_blob: _memory_pb2.BlobRef
    query_space_vectors: _containers.RepeatedCompositeFieldContainer[_memory_pb2.SpaceVector]
    def __init__(self, namespace: _Optional[str] = ..., query_text: _Optional[str] = ..., query_vector: _Optional[_Iterable[float]] = ..., query_modality: _Optional[_Union[_memory_pb2.Modality, str]] = ..., top_k: _Optional[int] = ..., filter: _Optional[_Union[MemoryFilter, _Mapping]] = ..., include_obsolete: _Optional[bool] = ..., include_expired: _Optional[bool] = ..., include_vectors: _Optional[bool] = ..., min_score: _Optional[float] = ..., plan: _Optional[_Iterable[_Union[PlanStep, _Mapping]]] = ..., as_of: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., context_turns: _Optional[int] = ..., route_policy: _Optional[str] = ..., include_cold: _Optional[bool] = ..., query_blob: _Optional[_Union[_memory_pb2.BlobRef, _Mapping]] = ..., query_space_vectors: _Optional[_Iterable[_Union[_memory_pb2.SpaceVector, _Mapping]]] = ...) -> None: ...

class PlanStep(_message.Message):
    __slots__ = ("pocket", "depth")
    POCKET_FIELD_NUMBER: _ClassVar[int]
    DEPTH_FIELD_NUMBER: _ClassVar[int]
    pocket: str
    depth: int
    def __init__(self, pocket: _Optional[str] = ..., depth: _Optional[int] = ...) -> None: ...

class PlanStepReport(_message.Message):
    __slots__ = ("pocket", "depth", "method", "scanned", "cost_units", "best_cosine")
    POCKET_FIELD_NUMBER: _ClassVar[int]
    DEPTH_FIELD_NUMBER: _ClassVar[int]
    METHOD_FIELD_NUMBER: _ClassVar[int]
    SCANNED_FIELD_NUMBER: _ClassVar[int]
    COST_UNITS_FIELD_NUMBER: _ClassVar[int]
    BEST_COSINE_FIELD_NUMBER: _ClassVar[int]
    pocket: str
    depth: int
    method: str
    scanned: int
    cost_units: float
    best_cosine: float
    def __init__(self, pocket: _Optional[str] = ..., depth: _Optional[int] = ..., method: _Optional[str] = ..., scanned: _Optional[int] = ..., cost_units: _Optional[float] = ..., best_cosine: _Optional[float] = ...) -> None: ...

class RecallHit(_message.Message):
    __slots__ = ("record", "score", "pocket", "context", "group_member_ids")
    RECORD_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    POCKET_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    GROUP_MEMBER_IDS_FIELD_NUMBER: _ClassVar[int]
    record: _memory_pb2.MemoryRecord
    score: _memory_pb2.ScoreBreakdown
    pocket: str
    context: _containers.RepeatedCompositeFieldContainer[_memory_pb2.MemoryRecord]
    group_member_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, record: _Optional[_Union[_memory_pb2.MemoryRecord, _Mapping]] = ..., score: _Optional[_Union[_memory_pb2.ScoreBreakdown, _Mapping]] = ..., pocket: _Optional[str] = ..., context: _Optional[_Iterable[_Union[_memory_pb2.MemoryRecord, _Mapping]]] = ..., group_member_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class RecallResponse(_message.Message):
    __slots__ = ("hits", "vector_weight", "keyword_weight", "vector_candidates", "keyword_candidates", "took_micros", "plan", "cost_units", "keyword_cost_units")
    HITS_FIELD_NUMBER: _ClassVar[int]
    VECTOR_WEIGHT_FIELD_NUMBER: _ClassVar[int]
    KEYWORD_WEIGHT_FIELD_NUMBER: _ClassVar[int]
    VECTOR_CANDIDATES_FIELD_NUMBER: _ClassVar[int]
    KEYWORD_CANDIDATES_FIELD_NUMBER: _ClassVar[int]
    TOOK_MICROS_FIELD_NUMBER: _ClassVar[int]
    PLAN_FIELD_NUMBER: _ClassVar[int]
    COST_UNITS_FIELD_NUMBER: _ClassVar[int]
    KEYWORD_COST_UNITS_FIELD_NUMBER: _ClassVar[int]
    hits: _containers.RepeatedCompositeFieldContainer[RecallHit]
    vector_weight: float
    keyword_weight: float
    vector_candidates: int
    keyword_candidates: int
    took_micros: int
    plan: _containers.RepeatedCompositeFieldContainer[PlanStepReport]
    cost_units: float
    keyword_cost_units: float
    def __init__(self, hits: _Optional[_Iterable[_Union[RecallHit, _Mapping]]] = ..., vector_weight: _Optional[float] = ..., keyword_weight: _Optional[float] = ..., vector_candidates: _Optional[int] = ..., keyword_candidates: _Optional[int] = ..., took_micros: _Optional[int] = ..., plan: _Optional[_Iterable[_Union[PlanStepReport, _Mapping]]] = ..., cost_units: _Optional[float] = ..., keyword_cost_units: _Optional[float] = ...) -> None: ...

class GetRequest(_message.Message):
    __slots__ = ("namespace", "memory_id", "include_vector", "include_blob_data")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    MEMORY_ID_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_VECTOR_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_BLOB_DATA_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    memory_id: str
    include_vector: bool
    include_blob_data: bool
    def __init__(self, namespace: _Optional[str] = ..., memory_id: _Optional[str] = ..., include_vector: _Optional[bool] = ..., include_blob_data: _Optional[bool] = ...) -> None: ...

class GetResponse(_message.Message):
    __slots__ = ("record",)
    RECORD_FIELD_NUMBER: _ClassVar[int]
    record: _memory_pb2.MemoryRecord
    def __init__(self, record: _Optional[_Union[_memory_pb2.MemoryRecord, _Mapping]] = ...) -> None: ...

class ForgetRequest(_message.Message):
    __slots__ = ("namespace", "memory_id", "filter", "all")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    MEMORY_ID_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    ALL_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    memory_id: str
    filter: MemoryFilter
    all: bool
    def __init__(self, namespace: _Optional[str] = ..., memory_id: _Optional[str] = ..., filter: _Optional[_Union[MemoryFilter, _Mapping]] = ..., all: _Optional[bool] = ...) -> None: ...

class ForgetResponse(_message.Message):
    __slots__ = ("forgotten_count",)
    FORGOTTEN_COUNT_FIELD_NUMBER: _ClassVar[int]
    forgotten_count: int
    def __init__(self, forgotten_count: _Optional[int] = ...) -> None: ...

class ListRequest(_message.Message):
    __slots__ = ("namespace", "filter", "page_size", "page_token")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    filter: MemoryFilter
    page_size: int
    page_token: str
    def __init__(self, namespace: _Optional[str] = ..., filter: _Optional[_Union[MemoryFilter, _Mapping]] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListResponse(_message.Message):
    __slots__ = ("records", "next_page_token")
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    records: _containers.RepeatedCompositeFieldContainer[_memory_pb2.MemoryRecord]
    next_page_token: str
    def __init__(self, records: _Optional[_Iterable[_Union[_memory_pb2.MemoryRecord, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class StatsRequest(_message.Message):
    __slots__ = ("namespace",)
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    def __init__(self, namespace: _Optional[str] = ...) -> None: ...

class TierStats(_message.Message):
    __slots__ = ("tier", "record_count")
    TIER_FIELD_NUMBER: _ClassVar[int]
    RECORD_COUNT_FIELD_NUMBER: _ClassVar[int]
    tier: _memory_pb2.Tier
    record_count: int
    def __init__(self, tier: _Optional[_Union[_memory_pb2.Tier, str]] = ..., record_count: _Optional[int] = ...) -> None: ...

class NamespaceStats(_message.Message):
    __slots__ = ("namespace", "record_count", "obsolete_count", "tiers", "pockets")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    RECORD_COUNT_FIELD_NUMBER: _ClassVar[int]
    OBSOLETE_COUNT_FIELD_NUMBER: _ClassVar[int]
    TIERS_FIELD_NUMBER: _ClassVar[int]
    POCKETS_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    record_count: int
    obsolete_count: int
    tiers: _containers.RepeatedCompositeFieldContainer[TierStats]
    pockets: _containers.RepeatedCompositeFieldContainer[PocketStats]
    def __init__(self, namespace: _Optional[str] = ..., record_count: _Optional[int] = ..., obsolete_count: _Optional[int] = ..., tiers: _Optional[_Iterable[_Union[TierStats, _Mapping]]] = ..., pockets: _Optional[_Iterable[_Union[PocketStats, _Mapping]]] = ...) -> None: ...

class PocketStats(_message.Message):
    __slots__ = ("name", "kind", "tier", "modality", "bucket", "size", "method", "cost_per_vector", "search_cost", "oldest", "newest", "radius", "centroid")
    NAME_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    TIER_FIELD_NUMBER: _ClassVar[int]
    MODALITY_FIELD_NUMBER: _ClassVar[int]
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    METHOD_FIELD_NUMBER: _ClassVar[int]
    COST_PER_VECTOR_FIELD_NUMBER: _ClassVar[int]
    SEARCH_COST_FIELD_NUMBER: _ClassVar[int]
    OLDEST_FIELD_NUMBER: _ClassVar[int]
    NEWEST_FIELD_NUMBER: _ClassVar[int]
    RADIUS_FIELD_NUMBER: _ClassVar[int]
    CENTROID_FIELD_NUMBER: _ClassVar[int]
    name: str
    kind: _memory_pb2.MemoryKind
    tier: _memory_pb2.Tier
    modality: _memory_pb2.Modality
    bucket: str
    size: int
    method: str
    cost_per_vector: float
    search_cost: float
    oldest: _timestamp_pb2.Timestamp
    newest: _timestamp_pb2.Timestamp
    radius: float
    centroid: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, name: _Optional[str] = ..., kind: _Optional[_Union[_memory_pb2.MemoryKind, str]] = ..., tier: _Optional[_Union[_memory_pb2.Tier, str]] = ..., modality: _Optional[_Union[_memory_pb2.Modality, str]] = ..., bucket: _Optional[str] = ..., size: _Optional[int] = ..., method: _Optional[str] = ..., cost_per_vector: _Optional[float] = ..., search_cost: _Optional[float] = ..., oldest: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., newest: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., radius: _Optional[float] = ..., centroid: _Optional[_Iterable[float]] = ...) -> None: ...

class IndexStats(_message.Message):
    __slots__ = ("head_revision", "indexed_revision", "snapshot_revision", "pending", "unsnapshotted", "catching_up")
    HEAD_REVISION_FIELD_NUMBER: _ClassVar[int]
    INDEXED_REVISION_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_REVISION_FIELD_NUMBER: _ClassVar[int]
    PENDING_FIELD_NUMBER: _ClassVar[int]
    UNSNAPSHOTTED_FIELD_NUMBER: _ClassVar[int]
    CATCHING_UP_FIELD_NUMBER: _ClassVar[int]
    head_revision: int
    indexed_revision: int
    snapshot_revision: int
    pending: int
    unsnapshotted: int
    catching_up: bool
    def __init__(self, head_revision: _Optional[int] = ..., indexed_revision: _Optional[int] = ..., snapshot_revision: _Optional[int] = ..., pending: _Optional[int] = ..., unsnapshotted: _Optional[int] = ..., catching_up: _Optional[bool] = ...) -> None: ...

class StatsResponse(_message.Message):
    __slots__ = ("namespaces", "pending_index", "index", "media")
    NAMESPACES_FIELD_NUMBER: _ClassVar[int]
    PENDING_INDEX_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    MEDIA_FIELD_NUMBER: _ClassVar[int]
    namespaces: _containers.RepeatedCompositeFieldContainer[NamespaceStats]
    pending_index: int
    index: IndexStats
    media: MediaStats
    def __init__(self, namespaces: _Optional[_Iterable[_Union[NamespaceStats, _Mapping]]] = ..., pending_index: _Optional[int] = ..., index: _Optional[_Union[IndexStats, _Mapping]] = ..., media: _Optional[_Union[MediaStats, _Mapping]] = ...) -> None: ...

class MediaStats(_message.Message):
    __slots__ = ("pending", "processed", "failed", "blobs")
    PENDING_FIELD_NUMBER: _ClassVar[int]
    PROCESSED_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    BLOBS_FIELD_NUMBER: _ClassVar[int]
    pending: int
    processed: int
    failed: int
    blobs: int
    def __init__(self, pending: _Optional[int] = ..., processed: _Optional[int] = ..., failed: _Optional[int] = ..., blobs: _Optional[int] = ...) -> None: ...

class ExplainRequest(_message.Message):
    __slots__ = ("recall", "policies", "run")
    RECALL_FIELD_NUMBER: _ClassVar[int]
    POLICIES_FIELD_NUMBER: _ClassVar[int]
    RUN_FIELD_NUMBER: _ClassVar[int]
    recall: RecallRequest
    policies: _containers.RepeatedScalarFieldContainer[str]
    run: bool
    def __init__(self, recall: _Optional[_Union[RecallRequest, _Mapping]] = ..., policies: _Optional[_Iterable[str]] = ..., run: _Optional[bool] = ...) -> None: ...

class PocketFeatures(_message.Message):
    __slots__ = ("pocket", "size", "method", "full_cost_units", "centroid_cosine", "radius", "term_documents", "heuristic_probability", "oldest", "newest", "store", "intent_probability")
    POCKET_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    METHOD_FIELD_NUMBER: _ClassVar[int]
    FULL_COST_UNITS_FIELD_NUMBER: _ClassVar[int]
    CENTROID_COSINE_FIELD_NUMBER: _ClassVar[int]
    RADIUS_FIELD_NUMBER: _ClassVar[int]
    TERM_DOCUMENTS_FIELD_NUMBER: _ClassVar[int]
    HEURISTIC_PROBABILITY_FIELD_NUMBER: _ClassVar[int]
    OLDEST_FIELD_NUMBER: _ClassVar[int]
    NEWEST_FIELD_NUMBER: _ClassVar[int]
    STORE_FIELD_NUMBER: _ClassVar[int]
    INTENT_PROBABILITY_FIELD_NUMBER: _ClassVar[int]
    pocket: str
    size: int
    method: str
    full_cost_units: float
    centroid_cosine: float
    radius: float
    term_documents: int
    heuristic_probability: float
    oldest: _timestamp_pb2.Timestamp
    newest: _timestamp_pb2.Timestamp
    store: str
    intent_probability: float
    def __init__(self, pocket: _Optional[str] = ..., size: _Optional[int] = ..., method: _Optional[str] = ..., full_cost_units: _Optional[float] = ..., centroid_cosine: _Optional[float] = ..., radius: _Optional[float] = ..., term_documents: _Optional[int] = ..., heuristic_probability: _Optional[float] = ..., oldest: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., newest: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., store: _Optional[str] = ..., intent_probability: _Optional[float] = ...) -> None: ...

class IntentScore(_message.Message):
    __slots__ = ("intent", "similarity", "probability", "readout")
    INTENT_FIELD_NUMBER: _ClassVar[int]
    SIMILARITY_FIELD_NUMBER: _ClassVar[int]
    PROBABILITY_FIELD_NUMBER: _ClassVar[int]
    READOUT_FIELD_NUMBER: _ClassVar[int]
    intent: str
    similarity: float
    probability: float
    readout: float
    def __init__(self, intent: _Optional[str] = ..., similarity: _Optional[float] = ..., probability: _Optional[float] = ..., readout: _Optional[float] = ...) -> None: ...

class RouteFeatures(_message.Message):
    __slots__ = ("flags", "terms", "identifiers", "safety", "image", "pockets", "window_start", "window_end", "vector", "intents")
    FLAGS_FIELD_NUMBER: _ClassVar[int]
    TERMS_FIELD_NUMBER: _ClassVar[int]
    IDENTIFIERS_FIELD_NUMBER: _ClassVar[int]
    SAFETY_FIELD_NUMBER: _ClassVar[int]
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    POCKETS_FIELD_NUMBER: _ClassVar[int]
    WINDOW_START_FIELD_NUMBER: _ClassVar[int]
    WINDOW_END_FIELD_NUMBER: _ClassVar[int]
    VECTOR_FIELD_NUMBER: _ClassVar[int]
    INTENTS_FIELD_NUMBER: _ClassVar[int]
    flags: _containers.RepeatedScalarFieldContainer[str]
    terms: _containers.RepeatedScalarFieldContainer[str]
    identifiers: _containers.RepeatedScalarFieldContainer[str]
    safety: _containers.RepeatedScalarFieldContainer[str]
    image: bool
    pockets: _containers.RepeatedCompositeFieldContainer[PocketFeatures]
    window_start: _timestamp_pb2.Timestamp
    window_end: _timestamp_pb2.Timestamp
    vector: bool
    intents: _containers.RepeatedCompositeFieldContainer[IntentScore]
    def __init__(self, flags: _Optional[_Iterable[str]] = ..., terms: _Optional[_Iterable[str]] = ..., identifiers: _Optional[_Iterable[str]] = ..., safety: _Optional[_Iterable[str]] = ..., image: _Optional[bool] = ..., pockets: _Optional[_Iterable[_Union[PocketFeatures, _Mapping]]] = ..., window_start: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., window_end: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., vector: _Optional[bool] = ..., intents: _Optional[_Iterable[_Union[IntentScore, _Mapping]]] = ...) -> None: ...

class PlannedStep(_message.Message):
    __slots__ = ("pocket", "depth", "probability", "cost_units")
    POCKET_FIELD_NUMBER: _ClassVar[int]
    DEPTH_FIELD_NUMBER: _ClassVar[int]
    PROBABILITY_FIELD_NUMBER: _ClassVar[int]
    COST_UNITS_FIELD_NUMBER: _ClassVar[int]
    pocket: str
    depth: int
    probability: float
    cost_units: float
    def __init__(self, pocket: _Optional[str] = ..., depth: _Optional[int] = ..., probability: _Optional[float] = ..., cost_units: _Optional[float] = ...) -> None: ...

class PolicyExplanation(_message.Message):
    __slots__ = ("policy", "ran", "widened", "rules", "model_version", "steps", "scores", "cost_units", "full_cost_units", "budget_units", "result", "searched_steps", "skip_below")
    POLICY_FIELD_NUMBER: _ClassVar[int]
    RAN_FIELD_NUMBER: _ClassVar[int]
    WIDENED_FIELD_NUMBER: _ClassVar[int]
    RULES_FIELD_NUMBER: _ClassVar[int]
    MODEL_VERSION_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    SCORES_FIELD_NUMBER: _ClassVar[int]
    COST_UNITS_FIELD_NUMBER: _ClassVar[int]
    FULL_COST_UNITS_FIELD_NUMBER: _ClassVar[int]
    BUDGET_UNITS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    SEARCHED_STEPS_FIELD_NUMBER: _ClassVar[int]
    SKIP_BELOW_FIELD_NUMBER: _ClassVar[int]
    policy: str
    ran: str
    widened: str
    rules: _containers.RepeatedScalarFieldContainer[str]
    model_version: str
    steps: _containers.RepeatedCompositeFieldContainer[PlannedStep]
    scores: _containers.RepeatedScalarFieldContainer[float]
    cost_units: float
    full_cost_units: float
    budget_units: float
    result: RecallResponse
    searched_steps: int
    skip_below: float
    def __init__(self, policy: _Optional[str] = ..., ran: _Optional[str] = ..., widened: _Optional[str] = ..., rules: _Optional[_Iterable[str]] = ..., model_version: _Optional[str] = ..., steps: _Optional[_Iterable[_Union[PlannedStep, _Mapping]]] = ..., scores: _Optional[_Iterable[float]] = ..., cost_units: _Optional[float] = ..., full_cost_units: _Optional[float] = ..., budget_units: _Optional[float] = ..., result: _Optional[_Union[RecallResponse, _Mapping]] = ..., searched_steps: _Optional[int] = ..., skip_below: _Optional[float] = ...) -> None: ...

class ExplainResponse(_message.Message):
    __slots__ = ("features", "policies")
    FEATURES_FIELD_NUMBER: _ClassVar[int]
    POLICIES_FIELD_NUMBER: _ClassVar[int]
    features: RouteFeatures
    policies: _containers.RepeatedCompositeFieldContainer[PolicyExplanation]
    def __init__(self, features: _Optional[_Union[RouteFeatures, _Mapping]] = ..., policies: _Optional[_Iterable[_Union[PolicyExplanation, _Mapping]]] = ...) -> None: ...

class AuthoritativeFact(_message.Message):
    __slots__ = ("text", "topic", "source_type", "vector", "kind")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    SOURCE_TYPE_FIELD_NUMBER: _ClassVar[int]
    VECTOR_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    text: str
    topic: str
    source_type: _memory_pb2.SourceType
    vector: _containers.RepeatedScalarFieldContainer[float]
    kind: _memory_pb2.MemoryKind
    def __init__(self, text: _Optional[str] = ..., topic: _Optional[str] = ..., source_type: _Optional[_Union[_memory_pb2.SourceType, str]] = ..., vector: _Optional[_Iterable[float]] = ..., kind: _Optional[_Union[_memory_pb2.MemoryKind, str]] = ...) -> None: ...

class ReconcileRequest(_message.Message):
    __slots__ = ("namespace", "facts", "dry_run")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    FACTS_FIELD_NUMBER: _ClassVar[int]
    DRY_RUN_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    facts: _containers.RepeatedCompositeFieldContainer[AuthoritativeFact]
    dry_run: bool
    def __init__(self, namespace: _Optional[str] = ..., facts: _Optional[_Iterable[_Union[AuthoritativeFact, _Mapping]]] = ..., dry_run: _Optional[bool] = ...) -> None: ...

class ReconcileDecision(_message.Message):
    __slots__ = ("memory_id", "text", "fact_index", "supersede", "reason")
    MEMORY_ID_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    FACT_INDEX_FIELD_NUMBER: _ClassVar[int]
    SUPERSEDE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    memory_id: str
    text: str
    fact_index: int
    supersede: bool
    reason: str
    def __init__(self, memory_id: _Optional[str] = ..., text: _Optional[str] = ..., fact_index: _Optional[int] = ..., supersede: _Optional[bool] = ..., reason: _Optional[str] = ...) -> None: ...

class ReconcileResponse(_message.Message):
    __slots__ = ("fact_ids", "decisions", "applied")
    FACT_IDS_FIELD_NUMBER: _ClassVar[int]
    DECISIONS_FIELD_NUMBER: _ClassVar[int]
    APPLIED_FIELD_NUMBER: _ClassVar[int]
    fact_ids: _containers.RepeatedScalarFieldContainer[str]
    decisions: _containers.RepeatedCompositeFieldContainer[ReconcileDecision]
    applied: bool
    def __init__(self, fact_ids: _Optional[_Iterable[str]] = ..., decisions: _Optional[_Iterable[_Union[ReconcileDecision, _Mapping]]] = ..., applied: _Optional[bool] = ...) -> None: ...

class UnsupersedeRequest(_message.Message):
    __slots__ = ("namespace", "memory_ids")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    MEMORY_IDS_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    memory_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, namespace: _Optional[str] = ..., memory_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class UnsupersedeResponse(_message.Message):
    __slots__ = ("restored",)
    RESTORED_FIELD_NUMBER: _ClassVar[int]
    restored: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, restored: _Optional[_Iterable[str]] = ...) -> None: ...

class EndSessionRequest(_message.Message):
    __slots__ = ("namespace", "session_id")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    session_id: str
    def __init__(self, namespace: _Optional[str] = ..., session_id: _Optional[str] = ...) -> None: ...

class EndSessionResponse(_message.Message):
    __slots__ = ("summaries", "turns_moved")
    SUMMARIES_FIELD_NUMBER: _ClassVar[int]
    TURNS_MOVED_FIELD_NUMBER: _ClassVar[int]
    summaries: _containers.RepeatedCompositeFieldContainer[RememberResponse]
    turns_moved: int
    def __init__(self, summaries: _Optional[_Iterable[_Union[RememberResponse, _Mapping]]] = ..., turns_moved: _Optional[int] = ...) -> None: ...

class MaintainRequest(_message.Message):
    __slots__ = ("namespace",)
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    def __init__(self, namespace: _Optional[str] = ...) -> None: ...

class MaintainResponse(_message.Message):
    __slots__ = ("sessions_ended", "moved_to_warm", "moved_to_cold", "topics_compressed", "compressed_records", "expired", "superseded", "resumed", "took_micros")
    SESSIONS_ENDED_FIELD_NUMBER: _ClassVar[int]
    MOVED_TO_WARM_FIELD_NUMBER: _ClassVar[int]
    MOVED_TO_COLD_FIELD_NUMBER: _ClassVar[int]
    TOPICS_COMPRESSED_FIELD_NUMBER: _ClassVar[int]
    COMPRESSED_RECORDS_FIELD_NUMBER: _ClassVar[int]
    EXPIRED_FIELD_NUMBER: _ClassVar[int]
    SUPERSEDED_FIELD_NUMBER: _ClassVar[int]
    RESUMED_FIELD_NUMBER: _ClassVar[int]
    TOOK_MICROS_FIELD_NUMBER: _ClassVar[int]
    sessions_ended: int
    moved_to_warm: int
    moved_to_cold: int
    topics_compressed: int
    compressed_records: int
    expired: int
    superseded: int
    resumed: int
    took_micros: int
    def __init__(self, sessions_ended: _Optional[int] = ..., moved_to_warm: _Optional[int] = ..., moved_to_cold: _Optional[int] = ..., topics_compressed: _Optional[int] = ..., compressed_records: _Optional[int] = ..., expired: _Optional[int] = ..., superseded: _Optional[int] = ..., resumed: _Optional[int] = ..., took_micros: _Optional[int] = ...) -> None: ...
