"""Request validation: every rule names the field path it checks.

Violations are collected (not raised at the first) so a client sees every problem at once, then
raised as one `InvalidArgumentError`, which `server.api.errors` turns into INVALID_ARGUMENT with a
`google.rpc.BadRequest` detail.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sized

import numpy as np
from google.protobuf.timestamp_pb2 import Timestamp

from pocketd.v1 import memory_pb2 as pb
from pocketd.v1 import memory_service_pb2 as spb
from server.core.errors import FieldViolation, InvalidArgumentError
from server.core.settings import Settings

NAMESPACE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:/-]{0,127}$")
MEMORY_ID_RE = re.compile(r"^[A-Za-z0-9_.:-]{1,128}$")
MAX_FUTURE_SECONDS = 300.0

_KINDS = set(pb.MemoryKind.values()) - {pb.MEMORY_KIND_UNSPECIFIED}
_MODALITIES = set(pb.Modality.values())
_SOURCE_TYPES = set(pb.SourceType.values())


class Violations:
    """Collects field violations; `raise_if_any()` raises them together."""

    def __init__(self) -> None:
        self.items: list[FieldViolation] = []

    def add(self, field: str, description: str) -> None:
        self.items.append(FieldViolation(field, description))

    def raise_if_any(self) -> None:
        if self.items:
            raise InvalidArgumentError(self.items)


def ts_seconds(ts: Timestamp) -> float:
    return ts.seconds + ts.nanos / 1e9


class Validator:
    """Validates requests against the configured limits."""

    def __init__(self, settings: Settings) -> None:
        self._lim = settings.limits
        self._dim = settings.memory.embedding_dim

    def namespace(self, v: Violations, field: str, value: str, required: bool = True) -> None:
        if not value:
            if required:
                v.add(field, "is required")
        elif not NAMESPACE_RE.match(value):
            v.add(
                field,
                "must be 1-128 characters of [A-Za-z0-9_.:/-], starting with a letter or digit",
            )

    def memory_id(self, v: Violations, field: str, value: str) -> None:
        if not value:
            v.add(field, "is required")
        elif not MEMORY_ID_RE.match(value):
            v.add(field, "must be 1-128 characters of [A-Za-z0-9_.:-]")

    def vector(self, v: Violations, field: str, values: Sized) -> None:
        n = len(values)
        if n == 0:
            return
        if n != self._dim:
            v.add(field, f"has {n} values; memory.embedding_dim is {self._dim}")
            return
        arr = np.array(values, dtype=np.float32)  # ~2 µs: the repeated field exposes a buffer
        if not np.isfinite(arr).all():
            v.add(field, "contains NaN or Inf")
        elif not np.any(arr):
            v.add(field, "is the zero vector, which has no direction")

    def _text(self, v: Violations, field: str, value: str) -> None:
        if len(value) > self._lim.max_text_chars:
            v.add(field, f"has {len(value)} characters; the maximum is {self._lim.max_text_chars}")

    def _short(self, v: Violations, field: str, value: str, limit: int = 128) -> None:
        if len(value) > limit:
            v.add(field, f"has {len(value)} characters; the maximum is {limit}")

    def _enum(self, v: Violations, field: str, value: int, allowed: set[int], name: str) -> None:
        if value not in allowed:
            v.add(field, f"{value} is not a known {name} value")

    def _tags(self, v: Violations, field: str, tags: Iterable[str]) -> None:
        tags = list(tags)
        if len(tags) > self._lim.max_tags:
            v.add(field, f"has {len(tags)} tags; the maximum is {self._lim.max_tags}")
        for i, t in enumerate(tags):
            if not t or len(t) > 64:
                v.add(f"{field}[{i}]", "must be 1-64 characters")

    def record(self, v: Violations, p: str, r: pb.MemoryRecord, now: float) -> None:
        self.namespace(v, f"{p}.namespace", r.namespace)
        if r.memory_id:
            self.memory_id(v, f"{p}.memory_id", r.memory_id)
        if r.kind == pb.MEMORY_KIND_UNSPECIFIED:
            v.add(f"{p}.kind", "is required")
        else:
            self._enum(v, f"{p}.kind", r.kind, _KINDS, "MemoryKind")
        self._enum(v, f"{p}.modality", r.modality, _MODALITIES, "Modality")
        self._enum(v, f"{p}.source_type", r.source_type, _SOURCE_TYPES, "SourceType")
        if not r.text and not r.vector and not r.blob.uri:
            v.add(f"{p}", "needs at least one of text, vector or blob.uri")
        self._text(v, f"{p}.text", r.text)
        self.vector(v, f"{p}.vector", r.vector)
        if r.HasField("importance") and not 1 <= r.importance <= 5:
            v.add(f"{p}.importance", f"{r.importance} is outside 1-5")
        for name in ("session_id", "topic", "group_id"):
            self._short(v, f"{p}.{name}", getattr(r, name))
        self._short(v, f"{p}.source.tool", r.source.tool)
        self._short(v, f"{p}.source.task_id", r.source.task_id)
        self._short(v, f"{p}.blob.uri", r.blob.uri, 2048)
        self._short(v, f"{p}.blob.mime_type", r.blob.mime_type)
        self._tags(v, f"{p}.tags", r.tags)
        created = ts_seconds(r.created_at) if r.HasField("created_at") else now
        if created > now + MAX_FUTURE_SECONDS:
            v.add(f"{p}.created_at", "is more than 5 minutes in the future")
        if created < 0:
            v.add(f"{p}.created_at", "is before 1970")
        if r.HasField("expires_at") and ts_seconds(r.expires_at) <= created:
            v.add(f"{p}.expires_at", "must be after created_at")

    def remember(self, v: Violations, p: str, req: spb.RememberRequest, now: float) -> None:
        if not req.HasField("record"):
            v.add(f"{p}record", "is required")
            return
        self.record(v, f"{p}record", req.record, now)
        if len(req.supersedes) > self._lim.max_supersedes:
            v.add(
                f"{p}supersedes",
                f"has {len(req.supersedes)} ids; the maximum is {self._lim.max_supersedes}",
            )
        for i, mid in enumerate(req.supersedes):
            self.memory_id(v, f"{p}supersedes[{i}]", mid)

    def remember_batch(self, v: Violations, req: spb.RememberBatchRequest, now: float) -> None:
        n = len(req.items)
        if not 1 <= n <= self._lim.max_batch_items:
            v.add("items", f"has {n} items; it must have 1-{self._lim.max_batch_items}")
        seen: dict[tuple[str, str], int] = {}
        for i, item in enumerate(req.items):
            self.remember(v, f"items[{i}].", item, now)
            r = item.record
            if r.memory_id:
                first = seen.setdefault((r.namespace, r.memory_id), i)
                if first != i:
                    v.add(
                        f"items[{i}].record.memory_id", f"repeats items[{first}].record.memory_id"
                    )

    def filter(self, v: Violations, p: str, f: spb.MemoryFilter) -> None:
        self._short(v, f"{p}.session_id", f.session_id)
        for i, k in enumerate(f.kinds):
            self._enum(v, f"{p}.kinds[{i}]", k, _KINDS, "MemoryKind")
        for i, m in enumerate(f.modalities):
            self._enum(
                v, f"{p}.modalities[{i}]", m, _MODALITIES - {pb.MODALITY_UNSPECIFIED}, "Modality"
            )
        self._tags(v, f"{p}.tags", f.tags)
        if f.min_importance > 5:
            v.add(f"{p}.min_importance", f"{f.min_importance} is outside 0-5")
        if (
            f.HasField("created_after")
            and f.HasField("created_before")
            and ts_seconds(f.created_after) >= ts_seconds(f.created_before)
        ):
            v.add(f"{p}.created_before", "must be after created_after")

    def recall(self, v: Violations, req: spb.RecallRequest) -> None:
        self.namespace(v, "namespace", req.namespace)
        if not req.query_text and not req.query_vector:
            v.add("query_text", "query_text or query_vector is required")
        self._text(v, "query_text", req.query_text)
        self.vector(v, "query_vector", req.query_vector)
        self._enum(v, "query_modality", req.query_modality, _MODALITIES, "Modality")
        if req.HasField("top_k") and not 1 <= req.top_k <= self._lim.max_top_k:
            v.add("top_k", f"{req.top_k} is outside 1-{self._lim.max_top_k}")
        self.filter(v, "filter", req.filter)

    def get(self, v: Violations, req: spb.GetRequest) -> None:
        self.namespace(v, "namespace", req.namespace)
        self.memory_id(v, "memory_id", req.memory_id)

    def forget(self, v: Violations, req: spb.ForgetRequest) -> None:
        self.namespace(v, "namespace", req.namespace)
        target = req.WhichOneof("target")
        if target is None:
            v.add("target", "memory_id or filter is required")
        elif target == "memory_id":
            self.memory_id(v, "memory_id", req.memory_id)
        else:
            self.filter(v, "filter", req.filter)
            if req.filter == spb.MemoryFilter() and not req.all:
                v.add("filter", "is empty; set all=true to forget the whole namespace")

    def stats(self, v: Violations, req: spb.StatsRequest) -> None:
        self.namespace(v, "namespace", req.namespace, required=False)
