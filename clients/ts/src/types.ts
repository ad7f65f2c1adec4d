/**
 * Typed results (plain readonly objects, no protobuf in sight), as
 * clients/python/pocketd/types.py. Enum values are lower-case names ("fact", "image", "hot").
 */

import { enumName } from "./enums.js";
import {
  MemoryKind,
  Modality,
  SourceType,
  Tier,
  type MemoryRecord,
} from "./gen/pocketd/v1/memory.js";
import {
  GateDecision,
  type ListResponse,
  type RecallResponse,
  type RememberResponse,
  type StatsResponse,
} from "./gen/pocketd/v1/memory_service.js";

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
}

/** One Recall hit. */
export interface Hit {
  readonly memory: Memory;
  readonly score: Score;
  /** The pocket it was found in. */
  readonly pocket: string;
  /** With `contextTurns`: the neighbouring turns of its session, in turn order. */
  readonly context: readonly Memory[];
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

/** A Stats answer. */
export interface Stats {
  readonly namespaces: readonly NamespaceStats[];
  readonly pendingIndex: number;
  readonly index: IndexStats;
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
              },
              pocket: h.pocket,
              context: h.context.map(toMemory),
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
  };
}
