"""Conversions between the wire messages (pocketd.v1) and the domain model. Only called on
requests that passed validation."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
from google.protobuf.timestamp_pb2 import Timestamp

from pocketd.v1 import memory_pb2 as pb
from pocketd.v1 import memory_service_pb2 as spb
from server.api.fields import MAX_SECONDS, MIN_SECONDS
from server.api.fields import seconds as ts_seconds
from server.core.memory.lifecycle.reconcile import ReconcileResult
from server.core.memory.lifecycle.session_end import SessionEndResult
from server.core.memory.model import (
    Blob,
    GateDecision,
    Hit,
    Kind,
    MaintainReport,
    MediaInput,
    MemoryFilter,
    Modality,
    NewMemory,
    Page,
    PlanStep,
    PocketStats,
    RecallQuery,
    RecallResult,
    Record,
    Source,
    SourceType,
    SpaceVector,
    Stats,
    Vector,
    WriteHints,
    WriteResult,
    unit,
)
from server.core.tenancy import Tenant

# A List position: event time, turn, record key.
Position = tuple[float, int, int]


def _vec(values: object) -> Vector | None:
    arr = np.array(values, dtype=np.float32)
    return arr if arr.size else None


def timestamp(seconds: float, into: Timestamp) -> None:
    """Write a time; validation keeps stored times in range, and one stored before it did (by an
    older version) is clamped into the range rather than failing every read of the record."""
    seconds = 0.0 if math.isnan(seconds) else min(max(seconds, MIN_SECONDS), MAX_SECONDS + 0.999)
    whole = int(seconds // 1)
    into.seconds = whole
    into.nanos = min(round((seconds - whole) * 1e9), 999_999_999)


def new_memory(req: spb.RememberRequest, tenant: Tenant) -> NewMemory:
    r = req.record
    rec = Record(
        memory_id=r.memory_id,
        namespace=tenant.scope(r.namespace),
        kind=Kind(r.kind),
        modality=Modality(r.modality or pb.MODALITY_TEXT),
        session_id=r.session_id,
        text=r.text,
        blob=Blob(r.blob.uri, r.blob.mime_type, r.blob.size_bytes, r.blob.sha256)
        if r.blob.uri and not r.blob.data
        else None,
        source=Source(
            r.source.tool,
            r.source.round,
            tenant.scope(r.source.task_id) if r.source.task_id else "",
        ),
        source_type=SourceType(r.source_type),
        expires_at=ts_seconds(r.expires_at) if r.HasField("expires_at") else None,
        topic=r.topic,
        tags=tuple(r.tags),
        group_id=r.group_id,
        speaker=r.speaker,
        space_vectors=tuple(
            SpaceVector.of(sv.space, unit(np.array(sv.values, dtype=np.float32)))
            for sv in r.space_vectors
        ),
    )
    event = next((getattr(r, n) for n in ("occurred_at", "created_at") if r.HasField(n)), None)
    return NewMemory(
        record=rec,
        vector=_vec(r.vector),
        explicit_importance=r.importance if r.HasField("importance") else None,
        hints=WriteHints(req.hints.remember, req.hints.error_resolved),
        supersedes=tuple(req.supersedes),
        client_memory_id=bool(r.memory_id),
        created_at=None if event is None else ts_seconds(event),
        turn=r.turn if r.HasField("turn") else None,
        media=MediaInput(r.blob.data, r.blob.language, req.wait_processed) if r.blob.data else None,
    )


def write_result(res: WriteResult) -> spb.RememberResponse:
    out = spb.RememberResponse(
        memory_id=res.memory_id,
        decision=int(res.decision),  # type: ignore[arg-type]
        reason=res.reason,
        importance=res.importance,
        tier=int(res.tier),  # type: ignore[arg-type]
        superseded=[
            spb.Supersession(memory_id=x.memory_id, superseded_by=x.superseded_by, reason=x.reason)
            for x in res.superseded
        ],
        processing_state=int(res.processing),  # type: ignore[arg-type]
        warnings=list(res.warnings),
    )
    if res.expires_at is not None and res.decision != GateDecision.REJECTED:
        timestamp(res.expires_at, out.expires_at)
    return out


def memory_filter(f: spb.MemoryFilter) -> MemoryFilter:
    return MemoryFilter(
        session_id=f.session_id,
        kinds=tuple(Kind(k) for k in dict.fromkeys(f.kinds)),
        modalities=tuple(Modality(m) for m in dict.fromkeys(f.modalities)),
        tags=tuple(f.tags),
        created_after=ts_seconds(f.created_after) if f.HasField("created_after") else None,
        created_before=ts_seconds(f.created_before) if f.HasField("created_before") else None,
        min_importance=f.min_importance,
    )


def recall_query(req: spb.RecallRequest, tenant: Tenant) -> RecallQuery:
    return RecallQuery(
        namespace=tenant.scope(req.namespace),
        text=req.query_text,
        vector=_vec(req.query_vector),
        image_query=req.query_modality == pb.MODALITY_IMAGE or req.HasField("query_blob"),
        top_k=req.top_k if req.HasField("top_k") else 0,
        filter=memory_filter(req.filter),
        include_obsolete=req.include_obsolete,
        include_expired=req.include_expired,
        include_vectors=req.include_vectors,
        include_cold=req.include_cold,
        min_score=req.min_score if req.HasField("min_score") else None,
        plan=[PlanStep(s.pocket, s.depth) for s in req.plan] if req.plan else None,
        as_of=ts_seconds(req.as_of) if req.HasField("as_of") else None,
        context_turns=req.context_turns,
        route_policy=req.route_policy,
        space_vectors={
            sv.space: unit(np.array(sv.values, dtype=np.float32)) for sv in req.query_space_vectors
        },
        image=req.query_blob.data,
        image_sha256=req.query_blob.sha256 if not req.query_blob.data else "",
    )


def _wire(tenant: Tenant, scoped: str) -> str:
    return tenant.unscope(scoped) or ""


def record_pb(rec: Record, tenant: Tenant, vector: Vector | None = None) -> pb.MemoryRecord:
    out = pb.MemoryRecord(
        memory_id=rec.memory_id,
        namespace=_wire(tenant, rec.namespace),
        session_id=rec.session_id,
        kind=int(rec.kind),  # type: ignore[arg-type]
        modality=int(rec.modality),  # type: ignore[arg-type]
        text=rec.text,
        source=pb.MemorySource(
            tool=rec.source.tool,
            round=rec.source.round,
            task_id=_wire(tenant, rec.source.task_id) if rec.source.task_id else "",
        ),
        source_type=int(rec.source_type),  # type: ignore[arg-type]
        importance=rec.importance,
        topic=rec.topic,
        tags=list(rec.tags),
        obsolete=rec.obsolete,
        superseded_by=rec.superseded_by,
        supersede_reason=rec.supersede_reason,
        derived_from=list(rec.derived_from),
        compressed_into=rec.compressed_into,
        group_id=rec.group_id,
        tier=int(rec.tier),  # type: ignore[arg-type]
        speaker=rec.speaker,
        processing_state=int(rec.processing),  # type: ignore[arg-type]
        processing_note=rec.processing_note,
    )
    for sv in rec.space_vectors:
        out.space_vectors.add(space=sv.space, values=sv.vector.tolist())
    if rec.turn >= 0:
        out.turn = rec.turn
    if rec.blob is not None:
        out.blob.CopyFrom(
            pb.BlobRef(
                uri=rec.blob.uri,
                mime_type=rec.blob.mime_type,
                size_bytes=rec.blob.size_bytes,
                sha256=rec.blob.sha256,
            )
        )
    timestamp(rec.created_at, out.occurred_at)
    timestamp(rec.stored_at or rec.created_at, out.created_at)
    timestamp(rec.updated_at, out.updated_at)
    if rec.expires_at is not None:
        timestamp(rec.expires_at, out.expires_at)
    out.access.access_count = rec.access_count
    if rec.last_accessed_at is not None:
        timestamp(rec.last_accessed_at, out.access.last_accessed_at)
    if vector is not None:
        out.vector.extend(vector.tolist())
    return out


def hit_pb(hit: Hit, tenant: Tenant) -> spb.RecallHit:
    s = hit.score
    return spb.RecallHit(
        record=record_pb(hit.record, tenant, hit.vector),
        score=pb.ScoreBreakdown(
            vector=s.vector,
            bm25=s.bm25,
            fused=s.fused,
            decay=s.decay,
            final=s.final,
            vector_hit=s.vector_hit,
            keyword_hit=s.keyword_hit,
            exact_hit=s.exact_hit,
            vector_space=s.space,
        ),
        pocket=hit.pocket,
        context=[record_pb(r, tenant) for r in hit.context],
        group_member_ids=list(hit.group_members),
    )


def recall_response(res: RecallResult, tenant: Tenant) -> spb.RecallResponse:
    return spb.RecallResponse(
        hits=[hit_pb(h, tenant) for h in res.hits],
        vector_weight=res.vector_weight,
        keyword_weight=res.keyword_weight,
        vector_candidates=res.vector_candidates,
        keyword_candidates=res.keyword_candidates,
        took_micros=res.took_micros,
        plan=[
            spb.PlanStepReport(
                pocket=r.pocket,
                depth=r.depth,
                method=r.method,
                scanned=r.scanned,
                cost_units=r.cost_units,
                best_cosine=r.best,
            )
            for r in res.plan
        ],
        cost_units=res.cost_units,
        keyword_cost_units=res.keyword_cost_units,
    )


def list_response(page: Page, tenant: Tenant, seal: Callable[[Position], str]) -> spb.ListResponse:
    return spb.ListResponse(
        records=[record_pb(r, tenant) for r in page.records],
        next_page_token="" if page.next_after is None else seal(page.next_after),
    )


def pocket_pb(p: PocketStats) -> spb.PocketStats:
    out = spb.PocketStats(
        name=p.name,
        kind=int(p.kind),  # type: ignore[arg-type]
        tier=int(p.tier),  # type: ignore[arg-type]
        modality=int(p.modality),  # type: ignore[arg-type]
        bucket=p.bucket,
        size=p.size,
        method=p.method,
        cost_per_vector=p.cost_per_vector,
        search_cost=p.search_cost,
        radius=p.radius,
    )
    timestamp(p.oldest, out.oldest)
    timestamp(p.newest, out.newest)
    if p.centroid is not None:
        out.centroid.extend(p.centroid.tolist())
    return out


def stats_response(st: Stats, tenant: Tenant) -> spb.StatsResponse:
    """The tenant's namespaces that its token grants; the server's own figures (the index's
    revisions, what is pending) only for an admin token."""
    out = spb.StatsResponse()
    for n in st.namespaces:
        name = tenant.unscope(n.namespace)
        if name is None or not tenant.may_use(name):
            continue
        out.namespaces.append(
            spb.NamespaceStats(
                namespace=name,
                record_count=n.record_count,
                obsolete_count=n.obsolete_count,
                tiers=[spb.TierStats(tier=int(t.tier), record_count=t.count) for t in n.tiers],  # type: ignore[arg-type]
                pockets=[pocket_pb(p) for p in n.pockets],
            )
        )
    if not tenant.admin:
        return out
    m = st.media
    out.media.CopyFrom(
        spb.MediaStats(pending=m.pending, processed=m.processed, failed=m.failed, blobs=m.blobs)
    )
    out.pending_index = st.pending_index
    out.index.CopyFrom(
        spb.IndexStats(
            head_revision=st.index.head_rev,
            indexed_revision=st.index.indexed_rev,
            snapshot_revision=st.index.snapshot_rev,
            pending=st.index.pending,
            unsnapshotted=st.index.unsnapshotted,
            catching_up=st.index.catching_up,
        )
    )
    return out


def authoritative_fact(f: spb.AuthoritativeFact, namespace: str) -> NewMemory:
    """One fact of a Reconcile, as the write it becomes (`namespace` as the core keeps it): an
    official document's fact unless it says otherwise."""
    return NewMemory(
        record=Record(
            memory_id="",
            namespace=namespace,
            kind=Kind(f.kind or pb.MEMORY_KIND_FACT),
            text=f.text,
            topic=f.topic,
            source_type=SourceType(f.source_type or pb.SOURCE_TYPE_OFFICIAL_DOCUMENT),
        ),
        vector=_vec(f.vector),
    )


def reconcile_response(res: ReconcileResult) -> spb.ReconcileResponse:
    return spb.ReconcileResponse(
        fact_ids=res.fact_ids,
        decisions=[
            spb.ReconcileDecision(
                memory_id=d.memory_id,
                text=d.text,
                fact_index=d.fact_index,
                supersede=d.supersede,
                reason=d.reason,
            )
            for d in res.decisions
        ],
        applied=res.applied,
    )


def end_session_response(res: SessionEndResult) -> spb.EndSessionResponse:
    return spb.EndSessionResponse(
        summaries=[write_result(r) for r in res.summaries], turns_moved=res.moved
    )


def maintain_response(reports: Sequence[MaintainReport]) -> spb.MaintainResponse:
    """One reply for the runs of one Maintain (one per namespace when the caller's token sees
    only some of them), their counts and times added up."""
    return spb.MaintainResponse(
        sessions_ended=sum(r.sessions_ended for r in reports),
        moved_to_warm=sum(r.moved_to_warm for r in reports),
        moved_to_cold=sum(r.moved_to_cold for r in reports),
        topics_compressed=sum(r.topics_compressed for r in reports),
        compressed_records=sum(r.compressed_records for r in reports),
        expired=sum(r.expired for r in reports),
        superseded=sum(r.superseded for r in reports),
        resumed=sum(r.resumed for r in reports),
        took_micros=sum(r.took_micros for r in reports),
    )
