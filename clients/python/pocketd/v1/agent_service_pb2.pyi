from pocketd.v1 import ledger_service_pb2 as _ledger_service_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class RecallMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RECALL_MODE_UNSPECIFIED: _ClassVar[RecallMode]
    RECALL_MODE_AUTO: _ClassVar[RecallMode]
    RECALL_MODE_ACTIVE: _ClassVar[RecallMode]
RECALL_MODE_UNSPECIFIED: RecallMode
RECALL_MODE_AUTO: RecallMode
RECALL_MODE_ACTIVE: RecallMode

class StepBatchRequest(_message.Message):
    __slots__ = ("steps",)
    STEPS_FIELD_NUMBER: _ClassVar[int]
    steps: _containers.RepeatedCompositeFieldContainer[StepRequest]
    def __init__(self, steps: _Optional[_Iterable[_Union[StepRequest, _Mapping]]] = ...) -> None: ...

class StepError(_message.Message):
    __slots__ = ("code", "message", "violations")
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    VIOLATIONS_FIELD_NUMBER: _ClassVar[int]
    code: str
    message: str
    violations: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, code: _Optional[str] = ..., message: _Optional[str] = ..., violations: _Optional[_Iterable[str]] = ...) -> None: ...

class StepBatchResult(_message.Message):
    __slots__ = ("response", "error")
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    response: StepResponse
    error: StepError
    def __init__(self, response: _Optional[_Union[StepResponse, _Mapping]] = ..., error: _Optional[_Union[StepError, _Mapping]] = ...) -> None: ...

class StepBatchResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[StepBatchResult]
    def __init__(self, results: _Optional[_Iterable[_Union[StepBatchResult, _Mapping]]] = ...) -> None: ...

class ModelUsage(_message.Message):
    __slots__ = ("model", "input_tokens", "output_tokens")
    MODEL_FIELD_NUMBER: _ClassVar[int]
    INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    model: str
    input_tokens: int
    output_tokens: int
    def __init__(self, model: _Optional[str] = ..., input_tokens: _Optional[int] = ..., output_tokens: _Optional[int] = ...) -> None: ...

class ToolResult(_message.Message):
    __slots__ = ("tool", "params_json", "result")
    TOOL_FIELD_NUMBER: _ClassVar[int]
    PARAMS_JSON_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    tool: str
    params_json: str
    result: str
    def __init__(self, tool: _Optional[str] = ..., params_json: _Optional[str] = ..., result: _Optional[str] = ...) -> None: ...

class StepRequest(_message.Message):
    __slots__ = ("task_id", "round", "goal", "input", "input_has_image", "previous_action_json", "observation", "observation_has_media", "usage", "tool_results", "raw_model_output", "tools_json", "recall_mode", "idempotency_key")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    ROUND_FIELD_NUMBER: _ClassVar[int]
    GOAL_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    INPUT_HAS_IMAGE_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_ACTION_JSON_FIELD_NUMBER: _ClassVar[int]
    OBSERVATION_FIELD_NUMBER: _ClassVar[int]
    OBSERVATION_HAS_MEDIA_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    TOOL_RESULTS_FIELD_NUMBER: _ClassVar[int]
    RAW_MODEL_OUTPUT_FIELD_NUMBER: _ClassVar[int]
    TOOLS_JSON_FIELD_NUMBER: _ClassVar[int]
    RECALL_MODE_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    round: int
    goal: str
    input: str
    input_has_image: bool
    previous_action_json: str
    observation: str
    observation_has_media: bool
    usage: _containers.RepeatedCompositeFieldContainer[ModelUsage]
    tool_results: _containers.RepeatedCompositeFieldContainer[ToolResult]
    raw_model_output: str
    tools_json: _containers.RepeatedScalarFieldContainer[str]
    recall_mode: RecallMode
    idempotency_key: str
    def __init__(self, task_id: _Optional[str] = ..., round: _Optional[int] = ..., goal: _Optional[str] = ..., input: _Optional[str] = ..., input_has_image: _Optional[bool] = ..., previous_action_json: _Optional[str] = ..., observation: _Optional[str] = ..., observation_has_media: _Optional[bool] = ..., usage: _Optional[_Iterable[_Union[ModelUsage, _Mapping]]] = ..., tool_results: _Optional[_Iterable[_Union[ToolResult, _Mapping]]] = ..., raw_model_output: _Optional[str] = ..., tools_json: _Optional[_Iterable[str]] = ..., recall_mode: _Optional[_Union[RecallMode, str]] = ..., idempotency_key: _Optional[str] = ...) -> None: ...

class AllowedTool(_message.Message):
    __slots__ = ("name", "description")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ...) -> None: ...

class StepMemory(_message.Message):
    __slots__ = ("memory_id", "text", "score", "source_type")
    MEMORY_ID_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_TYPE_FIELD_NUMBER: _ClassVar[int]
    memory_id: str
    text: str
    score: float
    source_type: str
    def __init__(self, memory_id: _Optional[str] = ..., text: _Optional[str] = ..., score: _Optional[float] = ..., source_type: _Optional[str] = ...) -> None: ...

class StepAction(_message.Message):
    __slots__ = ("type", "tool", "params_json", "answer", "estimated_cost_micros", "cached_result", "cached")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    PARAMS_JSON_FIELD_NUMBER: _ClassVar[int]
    ANSWER_FIELD_NUMBER: _ClassVar[int]
    ESTIMATED_COST_MICROS_FIELD_NUMBER: _ClassVar[int]
    CACHED_RESULT_FIELD_NUMBER: _ClassVar[int]
    CACHED_FIELD_NUMBER: _ClassVar[int]
    type: str
    tool: str
    params_json: str
    answer: str
    estimated_cost_micros: int
    cached_result: str
    cached: bool
    def __init__(self, type: _Optional[str] = ..., tool: _Optional[str] = ..., params_json: _Optional[str] = ..., answer: _Optional[str] = ..., estimated_cost_micros: _Optional[int] = ..., cached_result: _Optional[str] = ..., cached: _Optional[bool] = ...) -> None: ...

class StepResponse(_message.Message):
    __slots__ = ("budget", "tier", "model", "token_budget_round", "route_reason", "escalate", "tools", "context", "context_tokens", "context_dropped", "memories", "action", "action_error", "retry_action", "committed_memory_ids", "warnings", "search_memory_tool_json", "step_cost_micros", "route_cached", "route_sticky", "route_micros", "route_max_rounds", "failover")
    BUDGET_FIELD_NUMBER: _ClassVar[int]
    TIER_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    TOKEN_BUDGET_ROUND_FIELD_NUMBER: _ClassVar[int]
    ROUTE_REASON_FIELD_NUMBER: _ClassVar[int]
    ESCALATE_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_DROPPED_FIELD_NUMBER: _ClassVar[int]
    MEMORIES_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    ACTION_ERROR_FIELD_NUMBER: _ClassVar[int]
    RETRY_ACTION_FIELD_NUMBER: _ClassVar[int]
    COMMITTED_MEMORY_IDS_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    SEARCH_MEMORY_TOOL_JSON_FIELD_NUMBER: _ClassVar[int]
    STEP_COST_MICROS_FIELD_NUMBER: _ClassVar[int]
    ROUTE_CACHED_FIELD_NUMBER: _ClassVar[int]
    ROUTE_STICKY_FIELD_NUMBER: _ClassVar[int]
    ROUTE_MICROS_FIELD_NUMBER: _ClassVar[int]
    ROUTE_MAX_ROUNDS_FIELD_NUMBER: _ClassVar[int]
    FAILOVER_FIELD_NUMBER: _ClassVar[int]
    budget: _ledger_service_pb2.TaskStatus
    tier: str
    model: str
    token_budget_round: int
    route_reason: str
    escalate: bool
    tools: _containers.RepeatedCompositeFieldContainer[AllowedTool]
    context: str
    context_tokens: int
    context_dropped: _containers.RepeatedScalarFieldContainer[str]
    memories: _containers.RepeatedCompositeFieldContainer[StepMemory]
    action: StepAction
    action_error: str
    retry_action: bool
    committed_memory_ids: _containers.RepeatedScalarFieldContainer[str]
    warnings: _containers.RepeatedScalarFieldContainer[str]
    search_memory_tool_json: str
    step_cost_micros: int
    route_cached: bool
    route_sticky: bool
    route_micros: int
    route_max_rounds: int
    failover: FailoverPlan
    def __init__(self, budget: _Optional[_Union[_ledger_service_pb2.TaskStatus, _Mapping]] = ..., tier: _Optional[str] = ..., model: _Optional[str] = ..., token_budget_round: _Optional[int] = ..., route_reason: _Optional[str] = ..., escalate: _Optional[bool] = ..., tools: _Optional[_Iterable[_Union[AllowedTool, _Mapping]]] = ..., context: _Optional[str] = ..., context_tokens: _Optional[int] = ..., context_dropped: _Optional[_Iterable[str]] = ..., memories: _Optional[_Iterable[_Union[StepMemory, _Mapping]]] = ..., action: _Optional[_Union[StepAction, _Mapping]] = ..., action_error: _Optional[str] = ..., retry_action: _Optional[bool] = ..., committed_memory_ids: _Optional[_Iterable[str]] = ..., warnings: _Optional[_Iterable[str]] = ..., search_memory_tool_json: _Optional[str] = ..., step_cost_micros: _Optional[int] = ..., route_cached: _Optional[bool] = ..., route_sticky: _Optional[bool] = ..., route_micros: _Optional[int] = ..., route_max_rounds: _Optional[int] = ..., failover: _Optional[_Union[FailoverPlan, _Mapping]] = ...) -> None: ...

class FailoverPlan(_message.Message):
    __slots__ = ("action", "stop_reason", "partial_result", "best_memory")
    ACTION_FIELD_NUMBER: _ClassVar[int]
    STOP_REASON_FIELD_NUMBER: _ClassVar[int]
    PARTIAL_RESULT_FIELD_NUMBER: _ClassVar[int]
    BEST_MEMORY_FIELD_NUMBER: _ClassVar[int]
    action: _ledger_service_pb2.FailoverAction
    stop_reason: str
    partial_result: str
    best_memory: StepMemory
    def __init__(self, action: _Optional[_Union[_ledger_service_pb2.FailoverAction, str]] = ..., stop_reason: _Optional[str] = ..., partial_result: _Optional[str] = ..., best_memory: _Optional[_Union[StepMemory, _Mapping]] = ...) -> None: ...

class CompressToolsRequest(_message.Message):
    __slots__ = ("tools_json",)
    TOOLS_JSON_FIELD_NUMBER: _ClassVar[int]
    tools_json: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, tools_json: _Optional[_Iterable[str]] = ...) -> None: ...

class CompactTool(_message.Message):
    __slots__ = ("name", "text", "tokens_before", "tokens_after")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    TOKENS_BEFORE_FIELD_NUMBER: _ClassVar[int]
    TOKENS_AFTER_FIELD_NUMBER: _ClassVar[int]
    name: str
    text: str
    tokens_before: int
    tokens_after: int
    def __init__(self, name: _Optional[str] = ..., text: _Optional[str] = ..., tokens_before: _Optional[int] = ..., tokens_after: _Optional[int] = ...) -> None: ...

class CompressToolsResponse(_message.Message):
    __slots__ = ("tools", "tokens_before", "tokens_after")
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    TOKENS_BEFORE_FIELD_NUMBER: _ClassVar[int]
    TOKENS_AFTER_FIELD_NUMBER: _ClassVar[int]
    tools: _containers.RepeatedCompositeFieldContainer[CompactTool]
    tokens_before: int
    tokens_after: int
    def __init__(self, tools: _Optional[_Iterable[_Union[CompactTool, _Mapping]]] = ..., tokens_before: _Optional[int] = ..., tokens_after: _Optional[int] = ...) -> None: ...
