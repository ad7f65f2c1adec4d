"""Building request messages from keyword arguments; shared by `Client` and `AsyncClient`."""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import grpc
from google.protobuf.timestamp_pb2 import Timestamp

from pocketd.v1 import memory_pb2 as pb
from pocketd.v1 import memory_service_pb2 as spb

SERVICE = "pocketd.v1.MemoryService"

# Retried on UNAVAILABLE by gRPC itself (the calls that are safe to repeat).
RETRY_SERVICE_CONFIG = json.dumps(
    {
        "methodConfig": [
            {
                "name": [{"service": SERVICE, "method": m} for m in ("Recall", "Get", "Stats")],
                "retryPolicy": {
                    "maxAttempts": 4,
                    "initialBackoff": "0.05s",
                    "maxBackoff": "1s",
                    "backoffMultiplier": 2,
                    "retryableStatusCodes": ["UNAVAILABLE"],
                },
            }
        ]
    }
)


# A batch's deadline grows with its size: the server encodes about a few hundred texts a second
# on two cores, so a fixed 5 s would fail a dialog import of a few hundred turns.
BATCH_SECONDS_PER_ITEM = 0.05


def batch_timeout(timeout: float, items: int) -> float:
    """The deadline for a RememberBatch of `items`: at least `timeout`, and 50 ms per item."""
    return max(timeout, items * BATCH_SECONDS_PER_ITEM)


# A write that waits for its medium to be read (OCR takes about a second an image on two cores,
# a transcript a fraction of the recording's length, behind whatever the queue holds) waits as
# long as the server lets a call run (`server.max_call_seconds`, 60 s by default).
MEDIA_WAIT_TIMEOUT = 60.0


def write_timeout(timeout: float, items: Sequence[MemoryInput]) -> float:
    """The deadline of a write of `items`: `timeout`, or at least `MEDIA_WAIT_TIMEOUT` when one
    of them waits for its medium to be read."""
    if any(i.wait_processed for i in items):
        return max(timeout, MEDIA_WAIT_TIMEOUT)
    return timeout


@dataclass(frozen=True)
class Tls:
    """TLS for the channel, as PEM bytes: the CA that signed the server's certificate (None:
    the system's roots), and for mTLS the client's own key and certificate."""

    root_certificates: bytes | None = None
    private_key: bytes | None = None
    certificate_chain: bytes | None = None


class _Bearer(grpc.AuthMetadataPlugin):  # type: ignore[misc]
    def __init__(self, token: str) -> None:
        self._md = (("authorization", f"Bearer {token}"),)

    def __call__(self, context: object, callback: Any) -> None:
        callback(self._md, None)


def _token_interceptors(token: str, sync: bool) -> list[Any]:
    """Interceptors adding the token's metadata to every call (for a plaintext channel, where
    gRPC refuses call credentials)."""
    md = ("authorization", f"Bearer {token}")

    def details(d: Any) -> Any:
        return d._replace(metadata=(*(d.metadata or ()), md))

    if sync:

        class SyncBearer(grpc.UnaryUnaryClientInterceptor):  # type: ignore[misc]
            def intercept_unary_unary(self, continuation: Any, d: Any, request: Any) -> Any:
                return continuation(details(d), request)

        return [SyncBearer()]

    class AioBearer(grpc.aio.UnaryUnaryClientInterceptor):  # type: ignore[misc]
        async def intercept_unary_unary(self, continuation: Any, d: Any, request: Any) -> Any:
            return await continuation(details(d), request)

    return [AioBearer()]


class InsecureTokenError(ValueError):
    """A bearer token would go in the clear to a host beyond this machine."""


def is_loopback(target: str) -> bool:
    """Whether a gRPC target (`host:port`, `[v6]:port`, `dns:///host:port`, `unix:…`) stays on
    this machine."""
    if target.startswith(("unix:", "unix-abstract:")):
        return True
    host = target.split("///", 1)[-1].rsplit(":", 1)[0].strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def open_channel(
    target: str,
    max_message_bytes: int,
    token: str | None,
    tls: Tls | None,
    sync: bool,
    allow_insecure_token: bool = False,
) -> Any:
    """A channel to pocketd: plaintext or TLS, carrying the bearer token if there is one. A
    token over plaintext goes only to loopback (`InsecureTokenError` otherwise), unless
    `allow_insecure_token` (a network the caller trusts, such as a pod's own sidecar)."""
    if token and tls is None and not allow_insecure_token and not is_loopback(target):
        raise InsecureTokenError(
            f"a token would go in the clear to {target}: connect with tls=Tls(...), or pass"
            " allow_insecure_token=True for a network you trust"
        )
    options = channel_options(max_message_bytes)
    if tls is not None:
        creds = grpc.ssl_channel_credentials(
            tls.root_certificates, tls.private_key, tls.certificate_chain
        )
        if token:
            creds = grpc.composite_channel_credentials(
                creds, grpc.metadata_call_credentials(_Bearer(token))
            )
        if sync:
            return grpc.secure_channel(target, creds, options=options)
        return grpc.aio.secure_channel(target, creds, options=options)
    if sync:
        channel = grpc.insecure_channel(target, options=options)
        return (
            grpc.intercept_channel(channel, *_token_interceptors(token, True)) if token else channel
        )
    return grpc.aio.insecure_channel(
        target,
        options=options,
        interceptors=_token_interceptors(token, False) if token else None,
    )


def channel_options(max_message_bytes: int) -> list[tuple[str, object]]:
    return [
        ("grpc.enable_retries", 1),
        ("grpc.service_config", RETRY_SERVICE_CONFIG),
        ("grpc.max_send_message_length", max_message_bytes),
        ("grpc.max_receive_message_length", max_message_bytes),
    ]


def _enum(enum: object, prefix: str, name: str | int) -> int:
    if isinstance(name, int):
        return name
    return int(enum.Value(prefix + name.upper()))  # type: ignore[attr-defined]


def _space_vectors(spaces: Mapping[str, Sequence[float]]) -> list[pb.SpaceVector]:
    return [pb.SpaceVector(space=name, values=list(v)) for name, v in spaces.items()]


def _ts(value: datetime | float) -> Timestamp:
    ts = Timestamp()
    seconds = value.timestamp() if isinstance(value, datetime) else float(value)
    ts.seconds = int(seconds // 1)
    ts.nanos = int((seconds - ts.seconds) * 1e9)
    return ts


@dataclass(frozen=True)
class MemoryInput:
    """One memory to write. `kind` and `modality` take lower-case names ("fact", "image")."""

    namespace: str
    text: str = ""
    kind: str | int = "fact"
    vector: Sequence[float] | None = None
    modality: str | int = "text"
    session_id: str = ""
    importance: int | None = None
    source_type: str | int = "unspecified"
    tags: Sequence[str] = ()
    topic: str = ""
    group_id: str = ""
    memory_id: str = ""
    # When it happened (the event time); None: now.
    occurred_at: datetime | float | None = None
    # The v1 name of the event time, still accepted.
    created_at: datetime | float | None = None
    # Who said it ("user", "assistant", a name), and its position in its session (None: next).
    speaker: str = ""
    turn: int | None = None
    # When it stops being returned; None: `write_policy.expire_after_days` after it is stored.
    expires_at: datetime | float | None = None
    blob_uri: str = ""
    blob_mime_type: str = ""
    # The medium's bytes, which pocketd stores and reads (OCR, a transcript, a linearised
    # table); the server sniffs their type. `blob_language`: a recording's ("en", "zh", "auto").
    blob_data: bytes = b""
    blob_language: str = ""
    # Wait, up to the call's deadline, until the medium is read and stored (the reply then says
    # what the gate and the alignment check decided); otherwise the reply comes once it is
    # durable, processing_state "processing".
    wait_processed: bool = False
    # Vectors in other spaces than the text encoder's, by space name (a client's own space).
    space_vectors: Mapping[str, Sequence[float]] = field(default_factory=dict)
    remember: bool = False
    error_resolved: bool = False
    supersedes: Sequence[str] = ()

    def to_pb(self) -> spb.RememberRequest:
        rec = pb.MemoryRecord(
            memory_id=self.memory_id,
            namespace=self.namespace,
            session_id=self.session_id,
            kind=_enum(pb.MemoryKind, "MEMORY_KIND_", self.kind),  # type: ignore[arg-type]
            modality=_enum(pb.Modality, "MODALITY_", self.modality),  # type: ignore[arg-type]
            text=self.text,
            source_type=_enum(pb.SourceType, "SOURCE_TYPE_", self.source_type),  # type: ignore[arg-type]
            tags=list(self.tags),
            topic=self.topic,
            group_id=self.group_id,
            speaker=self.speaker,
        )
        if self.turn is not None:
            rec.turn = self.turn
        if self.occurred_at is not None:
            rec.occurred_at.CopyFrom(_ts(self.occurred_at))
        if self.vector is not None:
            rec.vector.extend(self.vector)
        if self.importance is not None:
            rec.importance = self.importance
        if self.created_at is not None:
            rec.created_at.CopyFrom(_ts(self.created_at))
        if self.expires_at is not None:
            rec.expires_at.CopyFrom(_ts(self.expires_at))
        if self.blob_uri or self.blob_data:
            rec.blob.uri = self.blob_uri
            rec.blob.mime_type = self.blob_mime_type
            rec.blob.data = bytes(self.blob_data)
            rec.blob.language = self.blob_language
        rec.space_vectors.extend(_space_vectors(self.space_vectors))
        return spb.RememberRequest(
            record=rec,
            hints=spb.WriteHints(remember=self.remember, error_resolved=self.error_resolved),
            supersedes=list(self.supersedes),
            wait_processed=self.wait_processed,
        )


def _media_bytes(data: bytes | bytearray | memoryview | str, what: str, text_ok: bool) -> bytes:
    """The medium's bytes; a table may come as text (UTF-8). A `str` for an image or a
    recording is refused: it is more likely a path than the file's content."""
    if isinstance(data, str):
        if text_ok:
            return data.encode()
        raise TypeError(f"{what}: the file's bytes, not a str (a path? read the file first)")
    if not isinstance(data, bytes | bytearray | memoryview):
        raise TypeError(f"{what}: bytes expected, got {type(data).__name__}")
    if not data:
        raise ValueError(f"{what}: empty")
    return bytes(data)


def media_input(
    namespace: str,
    modality: str,
    data: bytes | bytearray | memoryview | str,
    caption: str = "",
    *,
    kind: str | int = "observation",
    wait: bool = False,
    language: str = "",
    **fields: Any,
) -> MemoryInput:
    """One image, recording or table to write: its bytes in the blob, the client's caption
    (or a recording's transcript) as its text, an observation unless `kind` says otherwise;
    `fields` are the rest of `MemoryInput`'s (session_id, speaker, occurred_at, tags, group_id,
    importance, ...)."""
    what = f"{modality} data"
    return MemoryInput(
        namespace=namespace,
        text=caption,
        kind=kind,
        modality=modality,
        blob_data=_media_bytes(data, what, text_ok=modality == "table"),
        blob_language=language,
        wait_processed=wait,
        **fields,
    )


@dataclass(frozen=True)
class Fact:
    """An authoritative fact for `reconcile`: its text, its topic (only memories of that topic,
    or of none and about the same thing, are weighed), how far to trust it, and optionally its
    vector and kind."""

    text: str
    topic: str = ""
    source_type: str | int = "official_document"
    vector: Sequence[float] | None = None
    kind: str | int = "fact"

    def to_pb(self) -> spb.AuthoritativeFact:
        f = spb.AuthoritativeFact(
            text=self.text,
            topic=self.topic,
            source_type=_enum(pb.SourceType, "SOURCE_TYPE_", self.source_type),  # type: ignore[arg-type]
            kind=_enum(pb.MemoryKind, "MEMORY_KIND_", self.kind),  # type: ignore[arg-type]
        )
        if self.vector is not None:
            f.vector.extend(self.vector)
        return f


def reconcile_request(
    namespace: str, facts: Sequence[Fact | str], dry_run: bool
) -> spb.ReconcileRequest:
    """A ReconcileRequest; a plain string is a `Fact` with that text and no topic."""
    return spb.ReconcileRequest(
        namespace=namespace,
        facts=[(Fact(f) if isinstance(f, str) else f).to_pb() for f in facts],
        dry_run=dry_run,
    )


def memory_filter(
    session_id: str = "",
    kinds: Sequence[str | int] = (),
    modalities: Sequence[str | int] = (),
    tags: Sequence[str] = (),
    created_after: datetime | float | None = None,
    created_before: datetime | float | None = None,
    min_importance: int = 0,
) -> spb.MemoryFilter:
    f = spb.MemoryFilter(
        session_id=session_id,
        kinds=[_enum(pb.MemoryKind, "MEMORY_KIND_", k) for k in kinds],  # type: ignore[misc]
        modalities=[_enum(pb.Modality, "MODALITY_", m) for m in modalities],  # type: ignore[misc]
        tags=list(tags),
        min_importance=min_importance,
    )
    if created_after is not None:
        f.created_after.CopyFrom(_ts(created_after))
    if created_before is not None:
        f.created_before.CopyFrom(_ts(created_before))
    return f


_FILTER_FIELDS = frozenset(
    (
        "session_id",
        "kinds",
        "modalities",
        "tags",
        "created_after",
        "created_before",
        "min_importance",
    )
)


def recall_request(
    namespace: str,
    text: str = "",
    *,
    vector: Sequence[float] | None = None,
    top_k: int | None = None,
    image: bool = False,
    include_obsolete: bool = False,
    include_expired: bool = False,
    include_cold: bool = False,
    min_score: float | None = None,
    as_of: datetime | float | None = None,
    context_turns: int = 0,
    plan: Sequence[tuple[str, int]] = (),
    route_policy: str = "",
    image_data: bytes | None = None,
    image_sha256: str = "",
    space_vectors: Mapping[str, Sequence[float]] | None = None,
    **filter_fields: Any,
) -> spb.RecallRequest:
    """A RecallRequest; `filter_fields` are those of `memory_filter`, `plan` is (pocket, depth)
    steps, `route_policy` one of full, heuristic, learned, hybrid ("": the server's).
    `image_data` (an image's bytes) or `image_sha256` (a blob pocketd holds) makes it a query by
    image (`image` then goes without saying); `space_vectors`: query vectors by space name."""
    unknown = set(filter_fields) - _FILTER_FIELDS
    if unknown:
        raise TypeError(f"unknown recall arguments: {sorted(unknown)}")
    if image_data is not None and image_sha256:
        raise ValueError("query by image: give the image's bytes or a held blob's sha256, not both")
    by_image = image_data is not None or bool(image_sha256)
    req = spb.RecallRequest(
        namespace=namespace,
        query_text=text,
        query_modality=pb.MODALITY_IMAGE if image or by_image else pb.MODALITY_UNSPECIFIED,
        include_obsolete=include_obsolete,
        include_expired=include_expired,
        include_cold=include_cold,
        context_turns=context_turns,
        plan=[spb.PlanStep(pocket=p, depth=d) for p, d in plan],
        route_policy=route_policy,
    )
    req.filter.CopyFrom(memory_filter(**filter_fields))
    if image_data is not None:
        req.query_blob.data = _media_bytes(image_data, "image_data", text_ok=False)
    elif image_sha256:
        req.query_blob.sha256 = image_sha256
    req.query_space_vectors.extend(_space_vectors(space_vectors or {}))
    if vector is not None:
        req.query_vector.extend(vector)
    if top_k is not None:
        req.top_k = top_k
    if min_score is not None:
        req.min_score = min_score
    if as_of is not None:
        req.as_of.CopyFrom(_ts(as_of))
    return req


def image_recall_request(
    namespace: str, data: bytes | None, sha256: str, text: str = "", **options: Any
) -> spb.RecallRequest:
    """The RecallRequest of a query by image: its bytes, or the sha256 of a blob pocketd holds
    (one of the two), with `text` and `recall_request`'s other options."""
    if data is None and not sha256:
        raise ValueError("query by image: give the image's bytes or a held blob's sha256")
    return recall_request(namespace, text, image_data=data, image_sha256=sha256, **options)


def get_request(
    namespace: str, memory_id: str, include_vector: bool, include_blob_data: bool
) -> spb.GetRequest:
    return spb.GetRequest(
        namespace=namespace,
        memory_id=memory_id,
        include_vector=include_vector,
        include_blob_data=include_blob_data,
    )


def list_request(
    namespace: str, page_size: int | None = None, page_token: str = "", **filter_fields: Any
) -> spb.ListRequest:
    req = spb.ListRequest(
        namespace=namespace, filter=memory_filter(**filter_fields), page_token=page_token
    )
    if page_size is not None:
        req.page_size = page_size
    return req


def forget_request(
    namespace: str, memory_id: str | None, flt: spb.MemoryFilter | None, all: bool
) -> spb.ForgetRequest:
    if memory_id is not None:
        return spb.ForgetRequest(namespace=namespace, memory_id=memory_id)
    return spb.ForgetRequest(namespace=namespace, filter=flt or spb.MemoryFilter(), all=all)


def explain_request(
    namespace: str, text: str, policies: Sequence[str], run: bool, **options: Any
) -> spb.ExplainRequest:
    """An ExplainRequest of the Recall that `recall_request` makes of the same arguments."""
    return spb.ExplainRequest(
        recall=recall_request(namespace, text, **options), policies=policies, run=run
    )
