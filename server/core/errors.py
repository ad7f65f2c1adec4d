"""The domain error hierarchy. No transport here: `server.api.errors` maps each class to a gRPC
status once, in one table."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FieldViolation:
    """One bad field: its path in the request (`items[3].record.vector`) and why."""

    field: str
    description: str


@dataclass(frozen=True)
class Location:
    """Where in a request a problem lies, in the core's own terms; `server.api` renders it as a
    wire field path. `part` is a part of a memory or a request ("memory_id", "supersedes",
    "blob"), `item` the position in a batch (None: not in a batch), `index` the position in a
    repeated part."""

    part: str
    item: int | None = None
    index: int | None = None


class PocketdError(Exception):
    """Base class of every error pocketd raises on purpose."""


class InvalidArgumentError(PocketdError):
    """The request is malformed; `violations` names every bad field."""

    def __init__(self, violations: list[FieldViolation]) -> None:
        self.violations = violations
        super().__init__("; ".join(f"{v.field}: {v.description}" for v in violations))


class InvalidFieldError(PocketdError):
    """One part of the request (`where`) is invalid in a way only the core can tell (it needs
    the state, or reads the bytes): INVALID_ARGUMENT naming its field."""

    def __init__(self, description: str, where: Location) -> None:
        self.description = description
        self.where = where
        super().__init__(description)


class InvalidMediaError(InvalidFieldError):
    """A medium the request carries is unsupported, corrupt, truncated or beyond a limit.
    `detected` is the type sniffed from its bytes."""

    def __init__(self, description: str, detected: str, where: Location) -> None:
        super().__init__(f"{description} (detected type: {detected})", where)
        self.detected = detected


class NotFoundError(PocketdError):
    """A named resource does not exist."""

    def __init__(self, resource: str, name: str, where: Location | None = None) -> None:
        self.resource = resource
        self.name = name
        self.where = where
        super().__init__(f"{resource} {name!r} not found")


class FailedPreconditionError(PocketdError):
    """The request is well-formed but the server is not set up to serve it; `where` names the
    part of the request that needs what is missing, when one does."""

    def __init__(self, message: str, reason: str, where: Location | None = None) -> None:
        self.reason = reason
        self.where = where
        super().__init__(message)


class UnavailableError(PocketdError):
    """The server is starting or shutting down; the call may be retried."""


class PermissionDeniedError(PocketdError):
    """The caller's token does not grant what the request names (a namespace); `field` is the
    request's field that names it."""

    def __init__(self, message: str, field: str) -> None:
        self.field = field
        super().__init__(message)


class DeadlineExceededError(PocketdError):
    """The caller's deadline passed before the work was done; it was stopped."""


class CallCancelledError(PocketdError):
    """The caller cancelled the call; its work was stopped."""


class ResourceExhaustedError(PocketdError):
    """A server limit is reached; `limit` names the setting (for QuotaFailure)."""

    def __init__(self, message: str, limit: str) -> None:
        self.limit = limit
        super().__init__(message)
