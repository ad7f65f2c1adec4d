from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SpendKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SPEND_KIND_UNSPECIFIED: _ClassVar[SpendKind]
    SPEND_KIND_MODEL_INPUT_TOKENS: _ClassVar[SpendKind]
    SPEND_KIND_MODEL_OUTPUT_TOKENS: _ClassVar[SpendKind]
    SPEND_KIND_TOOL_CALL: _ClassVar[SpendKind]
    SPEND_KIND_MEMORY: _ClassVar[SpendKind]

class FailoverAction(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FAILOVER_ACTION_UNSPECIFIED: _ClassVar[FailoverAction]
    FAILOVER_ACTION_ESCALATE_HUMAN: _ClassVar[FailoverAction]
    FAILOVER_ACTION_BEST_MEMORY_ANSWER: _ClassVar[FailoverAction]
    FAILOVER_ACTION_SOFT_STOP: _ClassVar[FailoverAction]
    FAILOVER_ACTION_PAUSE: _ClassVar[FailoverAction]
SPEND_KIND_UNSPECIFIED: SpendKind
SPEND_KIND_MODEL_INPUT_TOKENS: SpendKind
SPEND_KIND_MODEL_OUTPUT_TOKENS: SpendKind
SPEND_KIND_TOOL_CALL: SpendKind
SPEND_KIND_MEMORY: SpendKind
FAILOVER_ACTION_UNSPECIFIED: FailoverAction
FAILOVER_ACTION_ESCALATE_HUMAN: FailoverAction
FAILOVER_ACTION_BEST_MEMORY_ANSWER: FailoverAction
FAILOVER_ACTION_SOFT_STOP: FailoverAction
FAILOVER_ACTION_PAUSE: FailoverAction

class ToolBudget(_message.Message):
    __slots__ = ("max_calls", "cost_per_call_micros", "cache_ttl_seconds", "idempotent", "optional")
    MAX_CALLS_FIELD_NUMBER: _ClassVar[int]
    COST_PER_CALL_MICROS_FIELD_NUMBER: _ClassVar[int]
    CACHE_TTL_SECONDS_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENT_FIELD_NUMBER: _ClassVar[int]
    OPTIONAL_FIELD_NUMBER: _ClassVar[int]
    max_calls: int
    cost_per_call_micros: int
    cache_ttl_seconds: int
    idempotent: bool
    optional: bool
    def __init__(self, max_calls: _Optional[int] = ..., cost_per_call_micros: _Optional[int] = ..., cache_ttl_seconds: _Optional[int] = ..., idempotent: _Optional[bool] = ..., optional: _Optional[bool] = ...) -> None: ...

class TaskBudget(_message.Message):
    __slots__ = ("total_micros", "round_micros", "max_rounds", "emergency_ratio", "warn_at_percent", "failover_action", "tools")
    class ToolsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: ToolBudget
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[ToolBudget, _Mapping]] = ...) -> None: ...
    TOTAL_MICROS_FIELD_NUMBER: _ClassVar[int]
    ROUND_MICROS_FIELD_NUMBER: _ClassVar[int]
    MAX_ROUNDS_FIELD_NUMBER: _ClassVar[int]
    EMERGENCY_RATIO_FIELD_NUMBER: _ClassVar[int]
    WARN_AT_PERCENT_FIELD_NUMBER: _ClassVar[int]
    FAILOVER_ACTION_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    total_micros: int
    round_micros: int
    max_rounds: int
    emergency_ratio: float
    warn_at_percent: int
    failover_action: FailoverAction
    tools: _containers.MessageMap[str, ToolBudget]
    def __init__(self, total_micros: _Optional[int] = ..., round_micros: _Optional[int] = ..., max_rounds: _Optional[int] = ..., emergency_ratio: _Optional[float] = ..., warn_at_percent: _Optional[int] = ..., failover_action: _Optional[_Union[FailoverAction, str]] = ..., tools: _Optional[_Mapping[str, ToolBudget]] = ...) -> None: ...

class OpenTaskRequest(_message.Message):
    __slots__ = ("task_id", "namespace", "session_id", "budget")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    BUDGET_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    namespace: str
    session_id: str
    budget: TaskBudget
    def __init__(self, task_id: _Optional[str] = ..., namespace: _Optional[str] = ..., session_id: _Optional[str] = ..., budget: _Optional[_Union[TaskBudget, _Mapping]] = ...) -> None: ...

class ReserveRequest(_message.Message):
    __slots__ = ("task_id", "round", "kind", "estimate_micros", "tool", "final", "ttl_seconds", "idempotency_key")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    ROUND_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    ESTIMATE_MICROS_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    FINAL_FIELD_NUMBER: _ClassVar[int]
    TTL_SECONDS_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    round: int
    kind: SpendKind
    estimate_micros: int
    tool: str
    final: bool
    ttl_seconds: int
    idempotency_key: str
    def __init__(self, task_id: _Optional[str] = ..., round: _Optional[int] = ..., kind: _Optional[_Union[SpendKind, str]] = ..., estimate_micros: _Optional[int] = ..., tool: _Optional[str] = ..., final: _Optional[bool] = ..., ttl_seconds: _Optional[int] = ..., idempotency_key: _Optional[str] = ...) -> None: ...

class Reservation(_message.Message):
    __slots__ = ("reservation_id", "amount_micros", "expires_at", "status")
    RESERVATION_ID_FIELD_NUMBER: _ClassVar[int]
    AMOUNT_MICROS_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    reservation_id: str
    amount_micros: int
    expires_at: float
    status: TaskStatus
    def __init__(self, reservation_id: _Optional[str] = ..., amount_micros: _Optional[int] = ..., expires_at: _Optional[float] = ..., status: _Optional[_Union[TaskStatus, _Mapping]] = ...) -> None: ...

class CommitRequest(_message.Message):
    __slots__ = ("task_id", "reservation_id", "actual_micros", "idempotency_key")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    RESERVATION_ID_FIELD_NUMBER: _ClassVar[int]
    ACTUAL_MICROS_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    reservation_id: str
    actual_micros: int
    idempotency_key: str
    def __init__(self, task_id: _Optional[str] = ..., reservation_id: _Optional[str] = ..., actual_micros: _Optional[int] = ..., idempotency_key: _Optional[str] = ...) -> None: ...

class ReleaseRequest(_message.Message):
    __slots__ = ("task_id", "reservation_id", "idempotency_key")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    RESERVATION_ID_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    reservation_id: str
    idempotency_key: str
    def __init__(self, task_id: _Optional[str] = ..., reservation_id: _Optional[str] = ..., idempotency_key: _Optional[str] = ...) -> None: ...

class TaskStatusRequest(_message.Message):
    __slots__ = ("task_id",)
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    def __init__(self, task_id: _Optional[str] = ...) -> None: ...

class RaiseBudgetRequest(_message.Message):
    __slots__ = ("task_id", "add_total_micros", "idempotency_key")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    ADD_TOTAL_MICROS_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    add_total_micros: int
    idempotency_key: str
    def __init__(self, task_id: _Optional[str] = ..., add_total_micros: _Optional[int] = ..., idempotency_key: _Optional[str] = ...) -> None: ...

class CloseTaskRequest(_message.Message):
    __slots__ = ("task_id", "idempotency_key")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    idempotency_key: str
    def __init__(self, task_id: _Optional[str] = ..., idempotency_key: _Optional[str] = ...) -> None: ...

class LimitState(_message.Message):
    __slots__ = ("limit", "limit_value", "spent", "held", "remaining")
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    LIMIT_VALUE_FIELD_NUMBER: _ClassVar[int]
    SPENT_FIELD_NUMBER: _ClassVar[int]
    HELD_FIELD_NUMBER: _ClassVar[int]
    REMAINING_FIELD_NUMBER: _ClassVar[int]
    limit: str
    limit_value: int
    spent: int
    held: int
    remaining: int
    def __init__(self, limit: _Optional[str] = ..., limit_value: _Optional[int] = ..., spent: _Optional[int] = ..., held: _Optional[int] = ..., remaining: _Optional[int] = ...) -> None: ...

class TaskStatus(_message.Message):
    __slots__ = ("task_id", "state", "round", "limits", "degrade_level", "failover_action", "warnings", "stop_reason", "spent_micros", "held_micros")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    ROUND_FIELD_NUMBER: _ClassVar[int]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    DEGRADE_LEVEL_FIELD_NUMBER: _ClassVar[int]
    FAILOVER_ACTION_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    STOP_REASON_FIELD_NUMBER: _ClassVar[int]
    SPENT_MICROS_FIELD_NUMBER: _ClassVar[int]
    HELD_MICROS_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    state: str
    round: int
    limits: _containers.RepeatedCompositeFieldContainer[LimitState]
    degrade_level: int
    failover_action: FailoverAction
    warnings: _containers.RepeatedScalarFieldContainer[str]
    stop_reason: str
    spent_micros: int
    held_micros: int
    def __init__(self, task_id: _Optional[str] = ..., state: _Optional[str] = ..., round: _Optional[int] = ..., limits: _Optional[_Iterable[_Union[LimitState, _Mapping]]] = ..., degrade_level: _Optional[int] = ..., failover_action: _Optional[_Union[FailoverAction, str]] = ..., warnings: _Optional[_Iterable[str]] = ..., stop_reason: _Optional[str] = ..., spent_micros: _Optional[int] = ..., held_micros: _Optional[int] = ...) -> None: ...

class KindBill(_message.Message):
    __slots__ = ("kind", "spent_micros", "commits")
    KIND_FIELD_NUMBER: _ClassVar[int]
    SPENT_MICROS_FIELD_NUMBER: _ClassVar[int]
    COMMITS_FIELD_NUMBER: _ClassVar[int]
    kind: SpendKind
    spent_micros: int
    commits: int
    def __init__(self, kind: _Optional[_Union[SpendKind, str]] = ..., spent_micros: _Optional[int] = ..., commits: _Optional[int] = ...) -> None: ...

class TaskBill(_message.Message):
    __slots__ = ("status", "by_kind", "by_tool")
    class ByToolEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: KindBill
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[KindBill, _Mapping]] = ...) -> None: ...
    STATUS_FIELD_NUMBER: _ClassVar[int]
    BY_KIND_FIELD_NUMBER: _ClassVar[int]
    BY_TOOL_FIELD_NUMBER: _ClassVar[int]
    status: TaskStatus
    by_kind: _containers.RepeatedCompositeFieldContainer[KindBill]
    by_tool: _containers.MessageMap[str, KindBill]
    def __init__(self, status: _Optional[_Union[TaskStatus, _Mapping]] = ..., by_kind: _Optional[_Iterable[_Union[KindBill, _Mapping]]] = ..., by_tool: _Optional[_Mapping[str, KindBill]] = ...) -> None: ...
