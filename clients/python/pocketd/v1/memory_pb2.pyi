import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class MemoryKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MEMORY_KIND_UNSPECIFIED: _ClassVar[MemoryKind]
    MEMORY_KIND_PREFERENCE: _ClassVar[MemoryKind]
    MEMORY_KIND_FACT: _ClassVar[MemoryKind]
    MEMORY_KIND_SUMMARY: _ClassVar[MemoryKind]
    MEMORY_KIND_EPISODE: _ClassVar[MemoryKind]
    MEMORY_KIND_SKILL: _ClassVar[MemoryKind]
    MEMORY_KIND_OBSERVATION: _ClassVar[MemoryKind]

class Modality(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MODALITY_UNSPECIFIED: _ClassVar[Modality]
    MODALITY_TEXT: _ClassVar[Modality]
    MODALITY_IMAGE: _ClassVar[Modality]
    MODALITY_AUDIO: _ClassVar[Modality]
    MODALITY_TABLE: _ClassVar[Modality]

class SourceType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SOURCE_TYPE_UNSPECIFIED: _ClassVar[SourceType]
    SOURCE_TYPE_OFFICIAL_DOCUMENT: _ClassVar[SourceType]
    SOURCE_TYPE_TOOL_RESULT: _ClassVar[SourceType]
    SOURCE_TYPE_USER_STATEMENT: _ClassVar[SourceType]
    SOURCE_TYPE_AGENT_INFERENCE: _ClassVar[SourceType]

class Tier(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TIER_UNSPECIFIED: _ClassVar[Tier]
    TIER_HOT: _ClassVar[Tier]
    TIER_WARM: _ClassVar[Tier]
    TIER_COLD: _ClassVar[Tier]

class ProcessingState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PROCESSING_STATE_UNSPECIFIED: _ClassVar[ProcessingState]
    PROCESSING_STATE_READY: _ClassVar[ProcessingState]
    PROCESSING_STATE_PROCESSING: _ClassVar[ProcessingState]
    PROCESSING_STATE_FAILED: _ClassVar[ProcessingState]
MEMORY_KIND_UNSPECIFIED: MemoryKind
MEMORY_KIND_PREFERENCE: MemoryKind
MEMORY_KIND_FACT: MemoryKind
MEMORY_KIND_SUMMARY: MemoryKind
MEMORY_KIND_EPISODE: MemoryKind
MEMORY_KIND_SKILL: MemoryKind
MEMORY_KIND_OBSERVATION: MemoryKind
MODALITY_UNSPECIFIED: Modality
MODALITY_TEXT: Modality
MODALITY_IMAGE: Modality
MODALITY_AUDIO: Modality
MODALITY_TABLE: Modality
SOURCE_TYPE_UNSPECIFIED: SourceType
SOURCE_TYPE_OFFICIAL_DOCUMENT: SourceType
SOURCE_TYPE_TOOL_RESULT: SourceType
SOURCE_TYPE_USER_STATEMENT: SourceType
SOURCE_TYPE_AGENT_INFERENCE: SourceType
TIER_UNSPECIFIED: Tier
TIER_HOT: Tier
TIER_WARM: Tier
TIER_COLD: Tier
PROCESSING_STATE_UNSPECIFIED: ProcessingState
PROCESSING_STATE_READY: ProcessingState
PROCESSING_STATE_PROCESSING: ProcessingState
PROCESSING_STATE_FAILED: ProcessingState

class BlobRef(_message.Message):
    __slots__ = ("uri", "mime_type", "size_bytes", "sha256", "data", "language")
    URI_FIELD_NUMBER: _ClassVar[int]
    MIME_TYPE_FIELD_NUMBER: _ClassVar[int]
    SIZE_BYTES_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    LANGUAGE_FIELD_NUMBER: _ClassVar[int]
    uri: str
    mime_type: str
    size_bytes: int
    sha256: str
    data: bytes
    language: str
    def __init__(self, uri: _Optional[str] = ..., mime_type: _Optional[str] = ..., size_bytes: _Optional[int] = ..., sha256: _Optional[str] = ..., data: _Optional[bytes] = ..., language: _Optional[str] = ...) -> None: ...

class SpaceVector(_message.Message):
    __slots__ = ("space", "values")
    SPACE_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    space: str
    values: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, space: _Optional[str] = ..., values: _Optional[_Iterable[float]] = ...) -> None: ...

class MemorySource(_message.Message):
    __slots__ = ("tool", "round", "task_id")
    TOOL_FIELD_NUMBER: _ClassVar[int]
    ROUND_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    tool: str
    round: int
    task_id: str
    def __init__(self, tool: _Optional[str] = ..., round: _Optional[int] = ..., task_id: _Optional[str] = ...) -> None: ...

class AccessStats(_message.Message):
    __slots__ = ("access_count", "last_accessed_at")
    ACCESS_COUNT_FIELD_NUMBER: _ClassVar[int]
    LAST_ACCESSED_AT_FIELD_NUMBER: _ClassVar[int]
    access_count: int
    last_accessed_at: _timestamp_pb2.Timestamp
    def __init__(self, access_count: _Optional[int] = ..., last_accessed_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class MemoryRecord(_message.Message):
    __slots__ = ("memory_id", "namespace", "session_id", "kind", "modality", "text", "vector", "blob", "source", "source_type", "importance", "created_at", "updated_at", "expires_at", "topic", "tags", "obsolete", "superseded_by", "group_id", "tier", "access", "occurred_at", "speaker", "turn", "supersede_reason", "derived_from", "compressed_into", "space_vectors", "processing_state", "processing_note")
    MEMORY_ID_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    MODALITY_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    VECTOR_FIELD_NUMBER: _ClassVar[int]
    BLOB_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_TYPE_FIELD_NUMBER: _ClassVar[int]
    IMPORTANCE_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    OBSOLETE_FIELD_NUMBER: _ClassVar[int]
    SUPERSEDED_BY_FIELD_NUMBER: _ClassVar[int]
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    TIER_FIELD_NUMBER: _ClassVar[int]
    ACCESS_FIELD_NUMBER: _ClassVar[int]
    OCCURRED_AT_FIELD_NUMBER: _ClassVar[int]
    SPEAKER_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    SUPERSEDE_REASON_FIELD_NUMBER: _ClassVar[int]
    DERIVED_FROM_FIELD_NUMBER: _ClassVar[int]
    COMPRESSED_INTO_FIELD_NUMBER: _ClassVar[int]
    SPACE_VECTORS_FIELD_NUMBER: _ClassVar[int]
    PROCESSING_STATE_FIELD_NUMBER: _ClassVar[int]
    PROCESSING_NOTE_FIELD_NUMBER: _ClassVar[int]
    memory_id: str
    namespace: str
    session_id: str
    kind: MemoryKind
    modality: Modality
    text: str
    vector: _containers.RepeatedScalarFieldContainer[float]
    blob: BlobRef
    source: MemorySource
    source_type: SourceType
    importance: int
    created_at: _timestamp_pb2.Timestamp
    updated_at: _timestamp_pb2.Timestamp
    expires_at: _timestamp_pb2.Timestamp
    topic: str
    tags: _containers.RepeatedScalarFieldContainer[str]
    obsolete: bool
    superseded_by: str
    group_id: str
    tier: Tier
    access: AccessStats
    occurred_at: _timestamp_pb2.Timestamp
    speaker: str
    turn: int
    supersede_reason: str
    derived_from: _containers.RepeatedScalarFieldContainer[str]
    compressed_into: str
    space_vectors: _containers.RepeatedCompositeFieldContainer[SpaceVector]
    processing_state: ProcessingState
    processing_note: str
    def __init__(self, memory_id: _Optional[str] = ..., namespace: _Optional[str] = ..., session_id: _Optional[str] = ..., kind: _Optional[_Union[MemoryKind, str]] = ..., modality: _Optional[_Union[Modality, str]] = ..., text: _Optional[str] = ..., vector: _Optional[_Iterable[float]] = ..., blob: _Optional[_Union[BlobRef, _Mapping]] = ..., source: _Optional[_Union[MemorySource, _Mapping]] = ..., source_type: _Optional[_Union[SourceType, str]] = ..., importance: _Optional[int] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., updated_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., topic: _Optional[str] = ..., tags: _Optional[_Iterable[str]] = ..., obsolete: _Optional[bool] = ..., superseded_by: _Optional[str] = ..., group_id: _Optional[str] = ..., tier: _Optional[_Union[Tier, str]] = ..., access: _Optional[_Union[AccessStats, _Mapping]] = ..., occurred_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., speaker: _Optional[str] = ..., turn: _Optional[int] = ..., supersede_reason: _Optional[str] = ..., derived_from: _Optional[_Iterable[str]] = ..., compressed_into: _Optional[str] = ..., space_vectors: _Optional[_Iterable[_Union[SpaceVector, _Mapping]]] = ..., processing_state: _Optional[_Union[ProcessingState, str]] = ..., processing_note: _Optional[str] = ...) -> None: ...

class ScoreBreakdown(_message.Message):
    __slots__ = ("vector", "bm25", "fused", "decay", "final", "vector_hit", "keyword_hit", "exact_hit", "vector_space")
    VECTOR_FIELD_NUMBER: _ClassVar[int]
    BM25_FIELD_NUMBER: _ClassVar[int]
    FUSED_FIELD_NUMBER: _ClassVar[int]
    DECAY_FIELD_NUMBER: _ClassVar[int]
    FINAL_FIELD_NUMBER: _ClassVar[int]
    VECTOR_HIT_FIELD_NUMBER: _ClassVar[int]
    KEYWORD_HIT_FIELD_NUMBER: _ClassVar[int]
    EXACT_HIT_FIELD_NUMBER: _ClassVar[int]
    VECTOR_SPACE_FIELD_NUMBER: _ClassVar[int]
    vector: float
    bm25: float
    fused: float
    decay: float
    final: float
    vector_hit: bool
    keyword_hit: bool
    exact_hit: bool
    vector_space: str
    def __init__(self, vector: _Optional[float] = ..., bm25: _Optional[float] = ..., fused: _Optional[float] = ..., decay: _Optional[float] = ..., final: _Optional[float] = ..., vector_hit: _Optional[bool] = ..., keyword_hit: _Optional[bool] = ..., exact_hit: _Optional[bool] = ..., vector_space: _Optional[str] = ...) -> None: ...
