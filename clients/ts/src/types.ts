/**
 * Typed results (plain readonly objects, no protobuf in sight), as
 * clients/python/pocketd/types.py. Enum values are lower-case names ("fact", "image", "hot").
 */

import { enumName } from "./enums.js";
import {
  MemoryKind,
  Modality,
  ProcessingState,
  SourceType,
  Tier,
  type BlobRef,
  type MemoryRecord,
} from "./gen/pocketd/v1/memory.js";
import {
  GateDecision,
  type EndSessionResponse,
  type ListResponse,
  type MaintainResponse,
  type RecallResponse,
  type ReconcileResponse,
  type RememberResponse,
  type StatsResponse,
} from "./gen/pocketd/v1/memory_service.js";

/**
 * A memory's medium: where it lives (for bytes pocketd stores, "blob:sha256:<hex>"), its
 * sniffed type, size and hash, a recording's language, and its bytes (only from `get` with
 * `includeBlobData`; empty otherwise).
 */
export interface Blob {
  readonly uri: string;
  readonly mimeType: string;
  readonly sizeBytes: number;
  readonly sha256: string;
  readonly language: string;
  readonly data: Uint8Array;
}

/** One stored memory. */
export interface Memory {
  readonly memoryId: string;
  readonly namespace: string;
  readonly kind: string;
  readonly modality: string;
  readonly text: string;
  readonly importance: number;
  readonly sourceType: string;
  readonly sessionId: string;
  readonly createdAt: Date | undefined;
  readonly updatedAt: Date | undefined;
  readonly expiresAt: Date | undefined;
  /** "hot", "warm" or "cold". */
  readonly tier: string;
  readonly tags: readonly string[];
  readonly topic: string;
  readonly groupId: string;
  readonly obsolete: boolean;
  readonly supersededBy: string;
  /** Only with `includeVector`. */
  readonly vector: readonly number[];
  /** When it happened; who said it; its position in its session (undefined: none). */
  readonly occurredAt: Date | undefined;
  readonly speaker: string;
  readonly turn: number | undefined;
  /** Why it was superseded ("client", "reconcile", "value:<what changed>"). */
  readonly supersedeReason: string;
  /** What it was made from (a summary's sources). */
  readonly derivedFrom: readonly string[];
  /** The topic summary that replaced it in recall (it lives in the cold tier then). */
  readonly compressedInto: string;
  /** Its medium; undefined: none. */
  readonly blob: Blob | undefined;
  /** Where it stands in the media pipeline: "ready", "processing" or "failed". */
  readonly processingState: string;
  /** Why processing failed, or the warning it left (the alignment check's). */
  readonly processingNote: string;
  /** Its vectors in other spaces than the text encoder's, by space name (with `includeVector`). */
  readonly spaceVectors: Readonly<Record<string, readonly number[]>>;
}

/** How a hit was scored (see ScoreBreakdown in the proto). */
export interface Score {
  readonly vector: number;
  readonly bm25: number;
  readonly fused: number;
  readonly decay: number;
  readonly final: number;
  readonly vectorHit: boolean;
  readonly keywordHit: boolean;
  readonly exactHit: boolean;
  /** The space whose cosine `vector` is ("text", an image or client space; "": none). */
  readonly vectorSpace: string;
}

/** One Recall hit. */
export interface Hit {
  readonly memory: Memory;
  readonly score: Score;
  /** The pocket it was found in. */
  readonly pocket: string;
  /** With `contextTurns`: the neighbouring turns of its session, in turn order. */
  readonly context: readonly Memory[];
  /**
   * The other memories of its group (an image, its OCR text, caption and summary share a
   * groupId and come back once, as the best of them), best first.
   */
  readonly groupMemberIds: readonly string[];
}

/** What one step of the recall plan did. */
export interface PlanStepReport {
  readonly pocket: string;
  readonly depth: number;
  readonly method: string;
  readonly scanned: number;
  readonly costUnits: number;
}

/** A Recall's answer. */
export interface RecallResult {
  readonly hits: readonly Hit[];
  readonly vectorWeight: number;
  readonly keywordWeight: number;
  readonly tookMicros: number;
  readonly plan: readonly PlanStepReport[];
  readonly costUnits: number;
}

/** The write gate's verdict: `decision` is "stored", "merged" or "rejected". */
export interface RememberResult {
  readonly memoryId: string;
  readonly decision: string;
  readonly reason: string;
  readonly importance: number;
  readonly expiresAt: Date | undefined;
  /** Stored or merged (not rejected). */
  readonly stored: boolean;
  /** Where it landed ("hot", "warm"; "unspecified" when rejected). */
  readonly tier: string;
  /** The older memories it made obsolete, and why. */
  readonly superseded: readonly Supersession[];
  /**
   * "processing" while its medium is queued for reading (`memoryId` is the one it will be
   * stored under), "failed" when reading failed or the alignment check rejected it (`reason`
   * says why), "ready" otherwise.
   */
  readonly processingState: string;
  /** What the write left to know: the alignment check's disagreement, a table's rows left out. */
  readonly warnings: readonly string[];
}

/** An older memory a write made obsolete: which, by which, and the reason code. */
export interface Supersession {
  readonly memoryId: string;
  readonly supersededBy: string;
  readonly reason: string;
}

/** What reconciliation decided about one current memory. */
export interface ReconcileDecision {
  readonly memoryId: string;
  readonly text: string;
  /** Which fact (its index in the request). */
  readonly factIndex: number;
  /** Contradicted, so made obsolete (or, with dryRun, would be). */
  readonly supersede: boolean;
  /** Why, the reason code first. */
  readonly reason: string;
}

/** A Reconcile's answer: the stored facts' ids (none with dryRun) and the decisions. */
export interface ReconcileResult {
  readonly factIds: readonly string[];
  readonly decisions: readonly ReconcileDecision[];
  readonly applied: boolean;
}

/** An ended session: its summaries as the write gate judged them, and the turns moved to warm. */
export interface SessionEnd {
  readonly summaries: readonly RememberResult[];
  readonly turnsMoved: number;
}

/** What a maintenance run did (MaintainResponse in the proto). */
export interface MaintainReport {
  readonly sessionsEnded: number;
  readonly movedToWarm: number;
  readonly movedToCold: number;
  readonly topicsCompressed: number;
  readonly compressedRecords: number;
  readonly expired: number;
  readonly superseded: number;
  readonly resumed: number;
  readonly tookMicros: number;
}

/** One page of List; pass `nextPageToken` to `list` for the next ("" on the last). */
export interface Page {
  readonly memories: readonly Memory[];
  readonly nextPageToken: string;
}

/** One namespace's counts. */
export interface NamespaceStats {
  readonly namespace: string;
  readonly recordCount: number;
  readonly obsoleteCount: number;
  /** Records by tier name. */
  readonly tiers: Readonly<Record<string, number>>;
  /** Pocket sizes by name, listed when Stats names the namespace. */
  readonly pockets: Readonly<Record<string, number>>;
}

/** How far the warm indexes are behind the record store. */
export interface IndexStats {
  readonly headRevision: number;
  readonly indexedRevision: number;
  readonly snapshotRevision: number;
  readonly pending: number;
  readonly unsnapshotted: number;
  readonly catchingUp: boolean;
}

/** The media pipeline's queue (all namespaces), what it did since start-up, and the blobs held. */
export interface MediaStats {
  readonly pending: number;
  readonly processed: number;
  readonly failed: number;
  readonly blobs: number;
}

/** A Stats answer. */
export interface Stats {
  readonly namespaces: readonly NamespaceStats[];
  readonly pendingIndex: number;
  readonly index: IndexStats;
  readonly media: MediaStats;
}

/** A ProcessingState's name; unset reads as "ready", as the proto says. */
function processingState(value: ProcessingState): string {
  return value === ProcessingState.PROCESSING_STATE_UNSPECIFIED
    ? "ready"
    : enumName(ProcessingState, "PROCESSING_STATE_", value);
}

function toBlob(b: BlobRef): Blob {
  return {
    uri: b.uri,
    mimeType: b.mimeType,
    sizeBytes: b.sizeBytes,
    sha256: b.sha256,
    language: b.language,
    data: b.data,
  };
}

/** A MemoryRecord as a `Memory`. */
export function toMemory(r: MemoryRecord): Memory {
  return {
    memoryId: r.memoryId,
    namespace: r.namespace,
    kind: enumName(MemoryKind, "MEMORY_KIND_", r.kind),
    modality: enumName(Modality, "MODALITY_", r.modality),
    text: r.text,
    importance: r.importance ?? 0,
    sourceType: enumName(SourceType, "SOURCE_TYPE_", r.sourceType),
    sessionId: r.sessionId,
    createdAt: r.createdAt,
    updatedAt: r.updatedAt,
    expiresAt: r.expiresAt,
    tier: enumName(Tier, "TIER_", r.tier),
    tags: r.tags,
    topic: r.topic,
    groupId: r.groupId,
    obsolete: r.obsolete,
    supersededBy: r.supersededBy,
    vector: r.vector,
    occurredAt: r.occurredAt,
    speaker: r.speaker,
    turn: r.turn,
    supersedeReason: r.supersedeReason,
    derivedFrom: r.derivedFrom,
    compressedInto: r.compressedInto,
    blob: r.blob === undefined ? undefined : toBlob(r.blob),
    processingState: processingState(r.processingState),
    processingNote: r.processingNote,
    spaceVectors: Object.fromEntries(r.spaceVectors.map((v) => [v.space, v.values])),
  };
}

/** A RecallResponse as a `RecallResult`. */
export function toRecallResult(r: RecallResponse): RecallResult {
  return {
    hits: r.hits.flatMap((h) =>
      h.record === undefined
        ? []
        : [
            {
              memory: toMemory(h.record),
              score: {
                vector: h.score?.vector ?? 0,
                bm25: h.score?.bm25 ?? 0,
                fused: h.score?.fused ?? 0,
                decay: h.score?.decay ?? 0,
                final: h.score?.final ?? 0,
                vectorHit: h.score?.vectorHit ?? false,
                keywordHit: h.score?.keywordHit ?? false,
                exactHit: h.score?.exactHit ?? false,
                vectorSpace: h.score?.vectorSpace ?? "",
              },
              pocket: h.pocket,
              context: h.context.map(toMemory),
              groupMemberIds: h.groupMemberIds,
            },
          ],
    ),
    vectorWeight: r.vectorWeight,
    keywordWeight: r.keywordWeight,
    tookMicros: r.tookMicros,
    plan: r.plan.map((p) => ({
      pocket: p.pocket,
      depth: p.depth,
      method: p.method,
      scanned: p.scanned,
      costUnits: p.costUnits,
    })),
    costUnits: r.costUnits,
  };
}

/** A RememberResponse as a `RememberResult`. */
export function toRememberResult(r: RememberResponse): RememberResult {
  const decision = enumName(GateDecision, "GATE_DECISION_", r.decision);
  return {
    memoryId: r.memoryId,
    decision,
    reason: r.reason,
    importance: r.importance,
    expiresAt: r.expiresAt,
    stored: decision === "stored" || decision === "merged",
    tier: enumName(Tier, "TIER_", r.tier),
    superseded: r.superseded.map((x) => ({
      memoryId: x.memoryId,
      supersededBy: x.supersededBy,
      reason: x.reason,
    })),
    processingState: processingState(r.processingState),
    warnings: r.warnings,
  };
}

/** A ReconcileResponse as a `ReconcileResult`. */
export function toReconcileResult(r: ReconcileResponse): ReconcileResult {
  return {
    factIds: r.factIds,
    decisions: r.decisions.map((d) => ({
      memoryId: d.memoryId,
      text: d.text,
      factIndex: d.factIndex,
      supersede: d.supersede,
      reason: d.reason,
    })),
    applied: r.applied,
  };
}

/** An EndSessionResponse as a `SessionEnd`. */
export function toSessionEnd(r: EndSessionResponse): SessionEnd {
  return { summaries: r.summaries.map(toRememberResult), turnsMoved: r.turnsMoved };
}

/** A MaintainResponse as a `MaintainReport`. */
export function toMaintainReport(r: MaintainResponse): MaintainReport {
  return {
    sessionsEnded: r.sessionsEnded,
    movedToWarm: r.movedToWarm,
    movedToCold: r.movedToCold,
    topicsCompressed: r.topicsCompressed,
    compressedRecords: r.compressedRecords,
    expired: r.expired,
    superseded: r.superseded,
    resumed: r.resumed,
    tookMicros: r.tookMicros,
  };
}

/** A ListResponse as a `Page`. */
export function toPage(r: ListResponse): Page {
  return { memories: r.records.map(toMemory), nextPageToken: r.nextPageToken };
}

/** A StatsResponse as `Stats`. */
export function toStats(r: StatsResponse): Stats {
  const index = r.index;
  return {
    namespaces: r.namespaces.map((n) => ({
      namespace: n.namespace,
      recordCount: n.recordCount,
      obsoleteCount: n.obsoleteCount,
      tiers: Object.fromEntries(
        n.tiers.map((t) => [enumName(Tier, "TIER_", t.tier), t.recordCount]),
      ),
      pockets: Object.fromEntries(n.pockets.map((p) => [p.name, p.size])),
    })),
    pendingIndex: r.pendingIndex,
    index: {
      headRevision: index?.headRevision ?? 0,
      indexedRevision: index?.indexedRevision ?? 0,
      snapshotRevision: index?.snapshotRevision ?? 0,
      pending: index?.pending ?? 0,
      unsnapshotted: index?.unsnapshotted ?? 0,
      catchingUp: index?.catchingUp ?? false,
    },
    media: {
      pending: r.media?.pending ?? 0,
      processed: r.media?.processed ?? 0,
      failed: r.media?.failed ?? 0,
      blobs: r.media?.blobs ?? 0,
    },
  };
}
