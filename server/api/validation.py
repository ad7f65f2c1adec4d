"""Request validation: every rule names the field path it checks.

Violations are collected (not raised at the first) so a client sees every problem at once, then
raised as one `InvalidArgumentError`, which `server.api.errors` turns into INVALID_ARGUMENT with a
`google.rpc.BadRequest` detail. A request is validated whole before anything is stored, and every
repeated and string field has a cap (`limits.*`, or the fixed lengths of `server.api.fields`), so
no request can cost more than its caps allow.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence, Sized

from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp

from pocketd.v1 import memory_pb2 as pb
from pocketd.v1 import memory_service_pb2 as spb
from server.api import fields as f
from server.core.errors import FieldViolation, InvalidArgumentError
from server.core.memory.model import PASSAGES, TEXT_SPACE
from server.core.routing.policies import POLICIES
from server.core.settings import Settings

MAX_FUTURE_SECONDS = 300.0
MAX_ID_CHARS = 128
MAX_TAG_CHARS = 64
MAX_LABEL_CHARS = 128
MAX_URI_CHARS = 2048
MAX_SCORE = 10.0
MAX_DEPTH = 10_000
MAX_SPEAKER_CHARS = 64
MAX_TURN = 10_000_000
MAX_CONTEXT_TURNS = 8
MAX_UNSUPERSEDE_IDS = 1024
MAX_SPACES = 8
MAX_SPACE_DIM = 8192

_KINDS = set(pb.MemoryKind.values()) - {pb.MEMORY_KIND_UNSPECIFIED}
_MODALITIES = set(pb.Modality.values())
_SOURCE_TYPES = set(pb.SourceType.values())


# Longer than any token List makes (they are sealed and checked by the servicer).
PAGE_TOKEN_CHARS = 128


class Violations:
    """Collects field violations; `raise_if_any()` raises them together."""

    def __init__(self) -> None:
        self.items: list[FieldViolation] = []

    def add(self, field: str, description: str) -> None:
        self.items.append(FieldViolation(field, description))

    def add_if(self, field: str, problem: str | None) -> None:
        if problem is not None:
            self.add(field, problem)

    def raise_if_any(self) -> None:
        if self.items:
            raise InvalidArgumentError(self.items)


class Validator:
    """Validates requests against the configured limits."""

    def __init__(self, settings: Settings) -> None:
        self._lim = settings.limits
        self._dim = settings.memory.embedding_dim
        m = settings.media
        self._max_media = max(m.image.max_bytes, m.audio.max_bytes, m.table.max_bytes)

    def namespace(self, v: Violations, field: str, value: str, required: bool = True) -> None:
        if not value:
            if required:
                v.add(field, "is required")
        elif not f.matches(f.NAMESPACE_RE, value):
            v.add(field, f.NAMESPACE_RULE)

    def memory_id(self, v: Violations, field: str, value: str) -> None:
        if not value:
            v.add(field, "is required")
        elif not f.matches(f.MEMORY_ID_RE, value):
            v.add(field, f.MEMORY_ID_RULE)

    def _session_id(self, v: Violations, field: str, value: str) -> None:
        if value and not f.matches(f.SESSION_ID_RE, value):
            v.add(field, f.SESSION_ID_RULE)

    def vector(self, v: Violations, field: str, values: Sized) -> None:
        if len(values):
            v.add_if(field, f.vector_problem(values, self._dim))

    def _chars(self, v: Violations, field: str, value: str, limit: int) -> None:
        v.add_if(field, f.length_problem(value, limit))

    def _label(self, v: Violations, field: str, value: str, limit: int = MAX_LABEL_CHARS) -> None:
        if value:
            v.add_if(field, f.label_problem(value, limit))

    def _enum(self, v: Violations, field: str, value: int, allowed: set[int], name: str) -> None:
        if value not in allowed:
            v.add(field, f"{value} is not a known {name} value")

    def _count(self, v: Violations, field: str, n: int, limit: int, what: str) -> bool:
        """Check a repeated field's length; False (and nothing else checked) when over."""
        if n > limit:
            v.add(field, f"has {n} {what}; the maximum is {limit}")
            return False
        return True

    def _tags(self, v: Violations, field: str, tags: Collection[str]) -> None:
        if self._count(v, field, len(tags), self._lim.max_tags, "tags"):
            for i, t in enumerate(tags):
                v.add_if(f"{field}[{i}]", f.label_problem(t, MAX_TAG_CHARS))

    def _time(self, v: Violations, field: str, msg: Message, name: str) -> float | None:
        """Check the timestamp `msg.name` if set; its seconds, or None (unset or out of range)."""
        if not msg.HasField(name):
            return None
        ts: Timestamp = getattr(msg, name)
        problem = f.timestamp_problem(ts)
        v.add_if(f"{field}.{name}" if field else name, problem)
        return None if problem else f.seconds(ts)

    def _blob(self, v: Violations, p: str, b: pb.BlobRef) -> None:
        if b.data:
            # The sniffed type's own limit (media.image, .audio, .table) is checked once the
            # bytes are read; this bounds what validation lets through at all.
            if len(b.data) > self._max_media:
                v.add(
                    f"{p}.data",
                    f"has {len(b.data)} bytes; the largest medium allowed is"
                    f" {self._max_media} (media.*.max_bytes)",
                )
            if b.language and not f.matches(f.LANGUAGE_RE, b.language):
                v.add(f"{p}.language", f.LANGUAGE_RULE)
            return
        if b.language:
            v.add(f"{p}.language", "is only for a recording sent as data")
        if b.uri:
            v.add_if(f"{p}.uri", f.uri_problem(b.uri, MAX_URI_CHARS))
        elif b.mime_type or b.sha256 or b.size_bytes:
            v.add(f"{p}.uri", "is required when any other blob field is set")
        if b.mime_type and not f.matches(f.MIME_RE, b.mime_type):
            v.add(f"{p}.mime_type", "must be a MIME type such as image/png (type/subtype)")
        if b.sha256 and not f.matches(f.SHA256_RE, b.sha256):
            v.add(f"{p}.sha256", "must be 64 lower-case hex digits")

    def _space_vectors(self, v: Violations, p: str, vectors: Sequence[pb.SpaceVector]) -> None:
        """At most `MAX_SPACES`, each a named space other than the text encoder's, once, with a
        usable vector of at most `MAX_SPACE_DIM` values (each space's own dimension is the
        engine's to check: the first vector stored fixes it)."""
        if not self._count(v, p, len(vectors), MAX_SPACES, "spaces"):
            return
        seen: set[str] = set()
        for i, sv in enumerate(vectors):
            if not f.matches(f.SPACE_RE, sv.space) or sv.space in (TEXT_SPACE, PASSAGES):
                v.add(f"{p}[{i}].space", f.SPACE_RULE)
            elif sv.space in seen:
                v.add(f"{p}[{i}].space", f"repeats space {sv.space!r}")
            seen.add(sv.space)
            if not 1 <= len(sv.values) <= MAX_SPACE_DIM:
                v.add(f"{p}[{i}].values", f"has {len(sv.values)} values; 1-{MAX_SPACE_DIM} allowed")
            else:
                v.add_if(f"{p}[{i}].values", f.vector_problem(sv.values, len(sv.values)))

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
        if not r.text and not r.vector and not r.blob.uri and not r.blob.data:
            v.add(f"{p}", "needs at least one of text, vector, blob.data or blob.uri")
        self._space_vectors(v, f"{p}.space_vectors", r.space_vectors)
        self._chars(v, f"{p}.text", r.text, self._lim.max_text_chars)
        self.vector(v, f"{p}.vector", r.vector)
        if r.HasField("importance") and not 1 <= r.importance <= 5:
            v.add(f"{p}.importance", f"{r.importance} is outside 1-5")
        self._session_id(v, f"{p}.session_id", r.session_id)
        if r.group_id and not f.matches(f.MEMORY_ID_RE, r.group_id):
            v.add(f"{p}.group_id", f.MEMORY_ID_RULE)
        self._label(v, f"{p}.topic", r.topic)
        self._label(v, f"{p}.source.tool", r.source.tool)
        self._session_id(v, f"{p}.source.task_id", r.source.task_id)
        self._blob(v, f"{p}.blob", r.blob)
        self._tags(v, f"{p}.tags", r.tags)
        self._label(v, f"{p}.speaker", r.speaker, MAX_SPEAKER_CHARS)
        if r.HasField("turn"):
            if not r.session_id:
                v.add(f"{p}.turn", "needs a session_id: a turn is a position in a session")
            elif r.turn > MAX_TURN:
                v.add(f"{p}.turn", f"{r.turn} is above {MAX_TURN}")
        event = None
        for name in ("created_at", "occurred_at"):
            t = self._time(v, p, r, name)
            if t is not None and t > now + MAX_FUTURE_SECONDS:
                v.add(f"{p}.{name}", "is more than 5 minutes ahead of the server's clock")
            event = t if t is not None else event
        expires = self._time(v, p, r, "expires_at")
        if expires is not None and expires <= (now if event is None else event):
            v.add(f"{p}.expires_at", "must be after the event time (occurred_at) and now")

    def remember(self, v: Violations, p: str, req: spb.RememberRequest, now: float) -> None:
        if not req.HasField("record"):
            v.add(f"{p}record", "is required")
            return
        self.record(v, f"{p}record", req.record, now)
        n = len(req.supersedes)
        if self._count(v, f"{p}supersedes", n, self._lim.max_supersedes, "ids"):
            for i, mid in enumerate(req.supersedes):
                self.memory_id(v, f"{p}supersedes[{i}]", mid)

    def remember_batch(self, v: Violations, req: spb.RememberBatchRequest, now: float) -> None:
        n = len(req.items)
        if not 1 <= n <= self._lim.max_batch_items:
            v.add("items", f"has {n} items; it must have 1-{self._lim.max_batch_items}")
            return
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

    def filter(self, v: Violations, p: str, flt: spb.MemoryFilter) -> None:
        self._session_id(v, f"{p}.session_id", flt.session_id)
        cap = self._lim.max_filter_values
        if self._count(v, f"{p}.kinds", len(flt.kinds), cap, "entries"):
            for i, k in enumerate(flt.kinds):
                self._enum(v, f"{p}.kinds[{i}]", k, _KINDS, "MemoryKind")
        if self._count(v, f"{p}.modalities", len(flt.modalities), cap, "entries"):
            known = _MODALITIES - {pb.MODALITY_UNSPECIFIED}
            for i, m in enumerate(flt.modalities):
                self._enum(v, f"{p}.modalities[{i}]", m, known, "Modality")
        self._tags(v, f"{p}.tags", flt.tags)
        if flt.min_importance > 5:
            v.add(f"{p}.min_importance", f"{flt.min_importance} is outside 0-5")
        after = self._time(v, p, flt, "created_after")
        before = self._time(v, p, flt, "created_before")
        if after is not None and before is not None and after >= before:
            v.add(f"{p}.created_before", "must be after created_after")

    def recall(self, v: Violations, req: spb.RecallRequest) -> None:
        self.namespace(v, "namespace", req.namespace)
        has_blob = req.HasField("query_blob")
        if not (req.query_text or req.query_vector or has_blob or req.query_space_vectors):
            v.add(
                "query_text",
                "query_text, query_vector, query_blob or query_space_vectors is required",
            )
        if has_blob:
            b = req.query_blob
            if b.data:
                if len(b.data) > self._max_media:
                    v.add("query_blob.data", f"has {len(b.data)} bytes; at most {self._max_media}")
            elif not b.sha256:
                v.add("query_blob", "needs data (the image's bytes) or sha256 (a held blob)")
            elif not f.matches(f.SHA256_RE, b.sha256):
                v.add("query_blob.sha256", "must be 64 lower-case hex digits")
        self._space_vectors(v, "query_space_vectors", req.query_space_vectors)
        self._chars(v, "query_text", req.query_text, self._lim.max_query_chars)
        self.vector(v, "query_vector", req.query_vector)
        self._enum(v, "query_modality", req.query_modality, _MODALITIES, "Modality")
        if req.HasField("top_k") and not 1 <= req.top_k <= self._lim.max_top_k:
            v.add("top_k", f"{req.top_k} is outside 1-{self._lim.max_top_k}")
        if req.HasField("min_score") and not 0.0 <= req.min_score <= MAX_SCORE:
            v.add("min_score", f"{req.min_score} is outside 0-{MAX_SCORE:g}")
        self.filter(v, "filter", req.filter)
        self._time(v, "", req, "as_of")
        if req.context_turns > MAX_CONTEXT_TURNS:
            v.add("context_turns", f"{req.context_turns} is above {MAX_CONTEXT_TURNS}")
        if self._count(v, "plan", len(req.plan), self._lim.max_plan_steps, "steps"):
            for i, step in enumerate(req.plan):
                if not f.matches(f.POCKET_RE, step.pocket):
                    v.add(f"plan[{i}].pocket", f"{step.pocket[:64]!r} {f.POCKET_RULE}")
                if step.depth > MAX_DEPTH:
                    v.add(f"plan[{i}].depth", f"{step.depth} is above {MAX_DEPTH}")
        if req.route_policy and req.route_policy not in POLICIES:
            v.add("route_policy", f"{req.route_policy[:32]!r} is not one of {', '.join(POLICIES)}")
        elif req.route_policy and req.plan:
            v.add("route_policy", "is set with a plan; a plan is not routed")

    def explain(self, v: Violations, req: spb.ExplainRequest) -> None:
        inner = Violations()
        self.recall(inner, req.recall)
        if req.recall.plan:
            inner.add("plan", "must be empty: Explain chooses the plans")
        if req.recall.route_policy and not any(i.field == "route_policy" for i in inner.items):
            inner.add("route_policy", "must be empty: Explain takes `policies`")
        for item in inner.items:
            v.add(f"recall.{item.field}", item.description)
        if len(req.policies) > len(POLICIES):
            v.add("policies", f"{len(req.policies)} named; there are {len(POLICIES)}")
            return
        seen: set[str] = set()
        for i, p in enumerate(req.policies):
            if p not in POLICIES:
                v.add(f"policies[{i}]", f"{p[:32]!r} is not one of {', '.join(POLICIES)}")
            elif p in seen:
                v.add(f"policies[{i}]", f"{p!r} is named twice")
            seen.add(p)

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

    def list(self, v: Violations, req: spb.ListRequest) -> None:
        self.namespace(v, "namespace", req.namespace)
        self.filter(v, "filter", req.filter)
        if req.HasField("page_size") and not 1 <= req.page_size <= self._lim.max_page_size:
            v.add("page_size", f"{req.page_size} is outside 1-{self._lim.max_page_size}")
        if len(req.page_token) > PAGE_TOKEN_CHARS:
            v.add("page_token", "is not a next_page_token of List")

    def stats(self, v: Violations, req: spb.StatsRequest) -> None:
        self.namespace(v, "namespace", req.namespace, required=False)

    def reconcile(self, v: Violations, req: spb.ReconcileRequest) -> None:
        self.namespace(v, "namespace", req.namespace)
        n, cap = len(req.facts), self._lim.max_batch_items
        if not 1 <= n <= cap:
            v.add("facts", f"has {n} facts; it must have 1-{cap}")
            return
        for i, fact in enumerate(req.facts):
            p = f"facts[{i}]"
            if not fact.text:
                v.add(f"{p}.text", "is required")
            self._chars(v, f"{p}.text", fact.text, self._lim.max_text_chars)
            self._label(v, f"{p}.topic", fact.topic)
            self._enum(v, f"{p}.source_type", fact.source_type, _SOURCE_TYPES, "SourceType")
            if fact.kind != pb.MEMORY_KIND_UNSPECIFIED:
                self._enum(v, f"{p}.kind", fact.kind, _KINDS, "MemoryKind")
            self.vector(v, f"{p}.vector", fact.vector)

    def unsupersede(self, v: Violations, req: spb.UnsupersedeRequest) -> None:
        self.namespace(v, "namespace", req.namespace)
        n = len(req.memory_ids)
        if not 1 <= n <= MAX_UNSUPERSEDE_IDS:
            v.add("memory_ids", f"has {n} ids; it must have 1-{MAX_UNSUPERSEDE_IDS}")
            return
        for i, mid in enumerate(req.memory_ids):
            self.memory_id(v, f"memory_ids[{i}]", mid)

    def end_session(self, v: Violations, req: spb.EndSessionRequest) -> None:
        self.namespace(v, "namespace", req.namespace)
        if not req.session_id:
            v.add("session_id", "is required")
        self._session_id(v, "session_id", req.session_id)

    def maintain(self, v: Violations, req: spb.MaintainRequest) -> None:
        self.namespace(v, "namespace", req.namespace, required=False)
