from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

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
