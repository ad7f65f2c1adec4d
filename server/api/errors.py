"""The one table that maps domain errors to gRPC status codes and rich error details.

| domain error              | code                | details                              |
|---------------------------|---------------------|--------------------------------------|
| InvalidArgumentError      | INVALID_ARGUMENT    | BadRequest (one violation per field) |
| NotFoundError             | NOT_FOUND           | ResourceInfo, BadRequest (the field) |
| FailedPreconditionError   | FAILED_PRECONDITION | ErrorInfo, PreconditionFailure (field) |
| UnavailableError          | UNAVAILABLE         | -                                    |
| ResourceExhaustedError    | RESOURCE_EXHAUSTED  | QuotaFailure (the setting)           |
| DeadlineExceededError     | DEADLINE_EXCEEDED   | -                                    |
| CallCancelledError        | CANCELLED           | -                                    |
| PermissionDeniedError     | PERMISSION_DENIED   | ErrorInfo, BadRequest (the field)    |
| anything else             | INTERNAL            | - (logged with its traceback)        |

A message over `server.max_message_bytes` never reaches a handler: gRPC itself answers
RESOURCE_EXHAUSTED. A message that cannot be decoded is answered by `server.api.guard`, a call
without a valid token (UNAUTHENTICATED) by `server.api.auth`.

A status's message and details stay small (`MAX_MESSAGE_BYTES`, `MAX_DETAIL_BYTES`): gRPC
sends them as trailing metadata, which a stock client refuses beyond 8 KiB, turning the answer
into RESOURCE_EXHAUSTED. A BadRequest lists the violations that fit, and says how many more
there were.
"""

from __future__ import annotations

import logging

import grpc
from google.protobuf import any_pb2
from google.protobuf.message import Message
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from server.core.errors import (
    CallCancelledError,
    DeadlineExceededError,
    FailedPreconditionError,
    FieldViolation,
    InvalidArgumentError,
    InvalidFieldError,
    Location,
    NotFoundError,
    PermissionDeniedError,
    PocketdError,
    ResourceExhaustedError,
    UnavailableError,
)
from server.core.tenancy import unscoped_text

# What one status's message and details may take: gRPC sends them as trailing metadata
# (the details base64-encoded, the message percent-encoded), and a stock client refuses more
# than 8 KiB of metadata (its soft limit) with RESOURCE_EXHAUSTED.
MAX_DETAIL_BYTES = 3584
MAX_MESSAGE_BYTES = 1536
MAX_FIELD_CHARS = 512
log = logging.getLogger(__name__)
DOMAIN = "pocketd.dev"


def _status(code: int, message: str, *details: Message) -> status_pb2.Status:
    """The status, with the core's kept names (tenant-scoped) spelt as the caller's."""
    message = unscoped_text(message)
    packed = []
    for d in details:
        if isinstance(d, error_details_pb2.ResourceInfo):
            d.resource_name = unscoped_text(d.resource_name)
            d.description = unscoped_text(d.description)
        elif isinstance(d, error_details_pb2.PreconditionFailure):
            for pv in d.violations:
                pv.description = unscoped_text(pv.description)
        a = any_pb2.Any()
        a.Pack(d)
        packed.append(a)
    return status_pb2.Status(code=code, message=message, details=packed)


# The wire path of each part of a memory that the core names in a `Location`.
_PARTS = {
    "blob": "record.blob",
    "blob.data": "record.blob.data",
    "space_vectors": "record.space_vectors",
    "record": "record",
}


def field_path(where: Location, batch: bool) -> str:
    """The wire field path of a core location: `items[3].supersedes[0]` in a RememberBatch,
    `supersedes[0]` in a Remember (`batch` False), `memory_id` in a Get."""
    path = _PARTS.get(where.part, where.part)
    if where.index is not None:
        path += f"[{where.index}]"
    if batch and where.item is not None:
        path = f"items[{where.item}].{path}"
    return path


def to_status(exc: BaseException, batch: bool = True) -> status_pb2.Status:
    """The rich status for an exception (see the module table); `batch` says whether the request
    was a batch, for the field paths of core locations."""
    if isinstance(exc, InvalidArgumentError):
        return _bad_request(exc)
    if isinstance(exc, InvalidFieldError):
        path = field_path(exc.where, batch)
        return _bad_request(InvalidArgumentError([FieldViolation(path, exc.description)]))
    if isinstance(exc, PermissionDeniedError):
        denied = error_details_pb2.BadRequest(
            field_violations=[
                error_details_pb2.BadRequest.FieldViolation(
                    field=exc.field, description="not granted to this token"
                )
            ]
        )
        why = error_details_pb2.ErrorInfo(reason="NOT_GRANTED", domain=DOMAIN)
        return _status(code_pb2.PERMISSION_DENIED, str(exc), why, denied)
    if isinstance(exc, NotFoundError):
        info = error_details_pb2.ResourceInfo(
            resource_type=exc.resource, resource_name=exc.name, description=str(exc)
        )
        details: list[Message] = [info]
        if exc.where is not None:
            details.append(
                error_details_pb2.BadRequest(
                    field_violations=[
                        error_details_pb2.BadRequest.FieldViolation(
                            field=field_path(exc.where, batch), description="not found"
                        )
                    ]
                )
            )
        return _status(code_pb2.NOT_FOUND, str(exc), *details)
    if isinstance(exc, FailedPreconditionError):
        pre: list[Message] = [error_details_pb2.ErrorInfo(reason=exc.reason, domain=DOMAIN)]
        if exc.where is not None:
            pre.append(
                error_details_pb2.PreconditionFailure(
                    violations=[
                        error_details_pb2.PreconditionFailure.Violation(
                            type=exc.reason,
                            subject=field_path(exc.where, batch),
                            description=str(exc),
                        )
                    ]
                )
            )
        return _status(code_pb2.FAILED_PRECONDITION, str(exc), *pre)
    if isinstance(exc, UnavailableError):
        return _status(code_pb2.UNAVAILABLE, str(exc) or "server is not serving")
    if isinstance(exc, ResourceExhaustedError):
        quota = error_details_pb2.QuotaFailure(
            violations=[
                error_details_pb2.QuotaFailure.Violation(subject=exc.limit, description=str(exc))
            ]
        )
        return _status(code_pb2.RESOURCE_EXHAUSTED, str(exc), quota)
    if isinstance(exc, DeadlineExceededError):
        return _status(code_pb2.DEADLINE_EXCEEDED, str(exc))
    if isinstance(exc, CallCancelledError):
        return _status(code_pb2.CANCELLED, str(exc))
    if isinstance(exc, PocketdError):
        log.error("unmapped domain error %s", type(exc).__name__, exc_info=exc)
    else:
        log.error("internal error", exc_info=exc)
    return _status(code_pb2.INTERNAL, "internal error")


def _bad_request(exc: InvalidArgumentError) -> status_pb2.Status:
    """INVALID_ARGUMENT with the violations that fit: the details within `MAX_DETAIL_BYTES`,
    the message within `MAX_MESSAGE_BYTES` as sent, each saying how many more there were."""
    br = error_details_pb2.BadRequest()
    used, total = 0, len(exc.violations)
    for i, v in enumerate(exc.violations):
        field, what = v.field[:MAX_FIELD_CHARS], v.description[:MAX_FIELD_CHARS]
        size = len(field.encode()) + len(what.encode()) + 8  # with its protobuf framing
        if used + size > MAX_DETAIL_BYTES:
            br.field_violations.add(field="", description=f"... and {total - i} more violations")
            break
        used += size
        br.field_violations.add(field=field, description=what)
    parts: list[str] = []
    length = 0
    for i, v in enumerate(exc.violations):
        part = f"{v.field[:MAX_FIELD_CHARS]}: {v.description[:MAX_FIELD_CHARS]}"
        size = _on_the_wire(part) + 2
        if parts and length + size > MAX_MESSAGE_BYTES:
            parts.append(f"... and {total - i} more (see the details)")
            break
        parts.append(part)
        length += size
    return _status(code_pb2.INVALID_ARGUMENT, "; ".join(parts), br)


def _on_the_wire(text: str) -> int:
    """The bytes of `text` in grpc-message, which percent-encodes every byte outside printable
    ASCII (a CJK character: 9 bytes)."""
    return sum(1 if 0x20 <= b < 0x7F and b != 0x25 else 3 for b in text.encode())


async def abort(context: grpc.aio.ServicerContext, exc: BaseException) -> None:
    """Abort the call with the status for `exc` (raises)."""
    await context.abort_with_status(rpc_status.to_status(to_status(exc)))
