/**
 * Request messages from plain options, as clients/python/pocketd/requests.py builds them from
 * keyword arguments. Enum values take lower-case names ("fact", "image"); times are `Date`s.
 */

import { enumValue, type EnumName } from "./enums.js";
import { MemoryKind, Modality, SourceType } from "./gen/pocketd/v1/memory.js";
import {
  ExplainRequest,
  ForgetRequest,
  ListRequest,
  MemoryFilter,
  RecallRequest,
  ReconcileRequest,
  RememberRequest,
} from "./gen/pocketd/v1/memory_service.js";

/** A memory's kind: "preference", "fact", "summary", "episode", "skill", "observation". */
export type MemoryKindName = Exclude<EnumName<typeof MemoryKind, "MEMORY_KIND_">, "unspecified">;
/** A memory's medium: "text", "image", "audio", "table" (or "unspecified"). */
export type ModalityName = EnumName<typeof Modality, "MODALITY_">;
/** Where a memory came from: "official_document", "tool_result", "user_statement", ... */
export type SourceTypeName = EnumName<typeof SourceType, "SOURCE_TYPE_">;

/** A memory's fields besides its namespace and text (all optional). */
export interface MemoryFields {
  /** Default "fact". */
  readonly kind?: MemoryKindName | MemoryKind;
  readonly vector?: readonly number[];
  /** Default "text". */
  readonly modality?: ModalityName | Modality;
  readonly sessionId?: string;
  /** 0-100; unset: the server's write gate scores it. */
  readonly importance?: number;
  readonly sourceType?: SourceTypeName | SourceType;
  readonly tags?: readonly string[];
  readonly topic?: string;
  readonly groupId?: string;
  /** Chosen by the client to upsert; unset: the server makes one. */
  readonly memoryId?: string;
  /** When it happened (the event time); unset: now. */
  readonly occurredAt?: Date;
  /** The v1 name of the event time, still accepted. */
  readonly createdAt?: Date;
  /** Who said it ("user", "assistant", a name). */
  readonly speaker?: string;
  /** Its position in its session; unset: next. */
  readonly turn?: number;
  /** When it stops being returned; unset: `write_policy.expire_after_days` after it is stored. */
  readonly expiresAt?: Date;
  readonly blobUri?: string;
  readonly blobMimeType?: string;
  /**
   * The medium's bytes, which pocketd stores and reads (OCR, a transcript, a linearised
   * table); the server sniffs their type.
   */
  readonly blobData?: Uint8Array;
  /** A recording's language: "en", "zh" or "auto" (unset: the server's default). */
  readonly blobLanguage?: string;
  /**
   * Wait, up to the call's deadline (at least `MEDIA_WAIT_TIMEOUT_MS`), until the medium is
   * read and stored; otherwise the reply comes once it is durable, `processingState`
   * "processing".
   */
  readonly waitProcessed?: boolean;
  /** Vectors in other spaces than the text encoder's, by space name (a client's own space). */
  readonly spaceVectors?: SpaceVectors;
  /** The user asked to remember it: the write gate keeps it. */
  readonly remember?: boolean;
  /** It records how an error was resolved: the write gate keeps it. */
  readonly errorResolved?: boolean;
  /** The ids of the memories it replaces (marked obsolete). */
  readonly supersedes?: readonly string[];
}

/** Vectors by space name ("clip", a client's own space); each space is searched with its own. */
export type SpaceVectors = Readonly<Record<string, readonly number[]>>;

/** The options of `rememberImage`, `rememberAudio` and `rememberTable`. */
export interface MediaOptions
  extends Omit<
    MemoryFields,
    "modality" | "blobUri" | "blobMimeType" | "blobData" | "blobLanguage" | "waitProcessed"
  > {
  /**
   * The client's text about the medium: kept as an image's description (without one, the OCR
   * text is), or a recording's transcript of your own.
   */
  readonly caption?: string;
  /**
   * Reply once the medium is read (what the gate and the alignment check decided), waiting at
   * least `MEDIA_WAIT_TIMEOUT_MS`; otherwise once it is durable, `processingState` "processing".
   */
  readonly wait?: boolean;
}

/** The options of `rememberAudio`. */
export interface AudioOptions extends MediaOptions {
  /** "en", "zh" or "auto"; unset: the server's `media.speech.default_language`. */
  readonly language?: string;
}

/** One memory to write (an item of `rememberBatch`). */
export interface MemoryInput extends MemoryFields {
  readonly namespace: string;
  readonly text?: string;
}

/** Which memories a Recall, List or Forget considers. */
export interface FilterOptions {
  readonly sessionId?: string;
  readonly kinds?: readonly (MemoryKindName | MemoryKind)[];
  readonly modalities?: readonly (ModalityName | Modality)[];
  readonly tags?: readonly string[];
  readonly createdAfter?: Date;
  readonly createdBefore?: Date;
  readonly minImportance?: number;
}

/** The options of a Recall besides its namespace and text. */
export interface RecallOptions extends FilterOptions {
  readonly vector?: readonly number[];
  readonly topK?: number;
  /** The query is an image (its `vector` in the image space). */
  readonly image?: boolean;
  readonly includeObsolete?: boolean;
  readonly includeExpired?: boolean;
  /** Search the cold archive too (compressed originals, memories of low retention). */
  readonly includeCold?: boolean;
  /** The relevance floor; unset: the server's 0.1. */
  readonly minScore?: number;
  /** Recall as the memory stood at this time. */
  readonly asOf?: Date;
  /** The neighbouring turns of each hit's session to return with it (0-8). */
  readonly contextTurns?: number;
  /** An explicit plan: the pockets to search and how deep. */
  readonly plan?: readonly { readonly pocket: string; readonly depth: number }[];
  /** "full", "heuristic", "learned" or "hybrid"; unset: the server's. */
  readonly routePolicy?: string;
  /** Query by image: its bytes (see `recallByImage`). */
  readonly imageData?: Uint8Array;
  /** Query by image: the sha256 of a blob pocketd holds (a memory's `blob.sha256`). */
  readonly imageSha256?: string;
  /** Query vectors by space name. */
  readonly spaceVectors?: SpaceVectors;
}

/** The options of `recallByImage`: a Recall's, and words to add to the image. */
export interface ImageRecallOptions extends Omit<RecallOptions, "imageData" | "imageSha256"> {
  readonly queryText?: string;
}

/** The options of a List besides its namespace. */
export interface ListOptions extends FilterOptions {
  readonly pageSize?: number;
  /** The `nextPageToken` of the page before. */
  readonly pageToken?: string;
}

/** A Forget by filter: `all: true` forgets the whole namespace when the filter is empty. */
export interface ForgetFilter extends FilterOptions {
  readonly all?: boolean;
}

/** The options of an Explain: a Recall's, and the policies to explain. */
export interface ExplainOptions extends RecallOptions {
  /** The routing policies to explain; empty: all. */
  readonly policies?: readonly string[];
  /** Also run each policy's plan and return its result. */
  readonly run?: boolean;
}

/** An authoritative fact to reconcile memory against (a plain string: its text, no topic). */
export interface Fact {
  readonly text: string;
  /** Only memories of this topic, or of none and about the same thing, are weighed. */
  readonly topic?: string;
  /** Default "official_document". */
  readonly sourceType?: SourceTypeName | SourceType;
  readonly vector?: readonly number[];
  /** Default "fact". */
  readonly kind?: MemoryKindName | MemoryKind;
}

const kind = (k: MemoryKindName | MemoryKind): MemoryKind =>
  enumValue(MemoryKind, "MEMORY_KIND_", k);
const modality = (m: ModalityName | Modality): Modality => enumValue(Modality, "MODALITY_", m);

/** `data` as the Buffer the generated messages hold, without a copy. */
function buffer(data: Uint8Array): Buffer {
  return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
}

const spaceVectors = (v: SpaceVectors = {}) =>
  Object.entries(v).map(([space, values]) => ({ space, values: [...values] }));

/**
 * The medium's bytes; a table may come as text (UTF-8). Empty bytes, or a string for an image
 * or a recording (more likely a path than the file), are refused before anything is sent.
 */
function mediaBytes(data: Uint8Array | string, what: string, textOk: boolean): Uint8Array {
  if (typeof data === "string") {
    if (textOk) return new TextEncoder().encode(data);
    throw new TypeError(`${what}: the file's bytes, not a string (a path? read the file first)`);
  }
  if (!(data instanceof Uint8Array)) throw new TypeError(`${what}: a Uint8Array expected`);
  if (data.byteLength === 0) throw new RangeError(`${what}: empty`);
  return data;
}

/** The media write kinds of `mediaInput`. */
export type MediaModality = "image" | "audio" | "table";

/**
 * One image, recording or table to write: its bytes in the blob, the caption as its text, an
 * observation unless `kind` says otherwise (an item of `rememberBatch` too).
 */
export function mediaInput(
  namespace: string,
  modality: MediaModality,
  data: Uint8Array | string,
  o: AudioOptions = {},
): MemoryInput {
  const { caption, wait, language, ...fields } = o;
  return {
    kind: "observation",
    ...fields,
    namespace,
    text: caption,
    modality,
    blobData: mediaBytes(data, `${modality} data`, modality === "table"),
    blobLanguage: language,
    waitProcessed: wait,
  };
}

/** The RememberRequest of one memory. */
export function rememberRequest(m: MemoryInput): RememberRequest {
  return RememberRequest.fromPartial({
    record: {
      memoryId: m.memoryId,
      namespace: m.namespace,
      sessionId: m.sessionId,
      kind: kind(m.kind ?? "fact"),
      modality: modality(m.modality ?? "text"),
      text: m.text,
      sourceType: enumValue(SourceType, "SOURCE_TYPE_", m.sourceType ?? "unspecified"),
      tags: [...(m.tags ?? [])],
      topic: m.topic,
      groupId: m.groupId,
      speaker: m.speaker,
      turn: m.turn,
      occurredAt: m.occurredAt,
      vector: [...(m.vector ?? [])],
      importance: m.importance,
      createdAt: m.createdAt,
      expiresAt: m.expiresAt,
      blob:
        m.blobUri || m.blobData
          ? {
              uri: m.blobUri,
              mimeType: m.blobMimeType,
              data: m.blobData ? buffer(m.blobData) : undefined,
              language: m.blobLanguage,
            }
          : undefined,
      spaceVectors: spaceVectors(m.spaceVectors),
    },
    hints: { remember: m.remember, errorResolved: m.errorResolved },
    supersedes: [...(m.supersedes ?? [])],
    waitProcessed: m.waitProcessed,
  });
}

/** The MemoryFilter of filter options. */
export function memoryFilter(f: FilterOptions): MemoryFilter {
  return MemoryFilter.fromPartial({
    sessionId: f.sessionId,
    kinds: (f.kinds ?? []).map(kind),
    modalities: (f.modalities ?? []).map(modality),
    tags: [...(f.tags ?? [])],
    createdAfter: f.createdAfter,
    createdBefore: f.createdBefore,
    minImportance: f.minImportance,
  });
}

/** The RecallRequest of a query. */
export function recallRequest(
  namespace: string,
  text: string,
  o: RecallOptions = {},
): RecallRequest {
  if (o.imageData !== undefined && o.imageSha256) {
    throw new RangeError("query by image: the image's bytes or a held blob's sha256, not both");
  }
  const image =
    o.imageData !== undefined
      ? { data: buffer(mediaBytes(o.imageData, "imageData", false)) }
      : o.imageSha256
        ? { sha256: o.imageSha256 }
        : undefined;
  return RecallRequest.fromPartial({
    namespace,
    queryText: text,
    queryVector: [...(o.vector ?? [])],
    queryModality: o.image || image ? Modality.MODALITY_IMAGE : Modality.MODALITY_UNSPECIFIED,
    queryBlob: image,
    querySpaceVectors: spaceVectors(o.spaceVectors),
    topK: o.topK,
    filter: memoryFilter(o),
    includeObsolete: o.includeObsolete,
    includeExpired: o.includeExpired,
    includeCold: o.includeCold,
    minScore: o.minScore,
    asOf: o.asOf,
    contextTurns: o.contextTurns,
    plan: (o.plan ?? []).map((p) => ({ pocket: p.pocket, depth: p.depth })),
    routePolicy: o.routePolicy,
  });
}

/** The RecallRequest of a query by image: its bytes, or a held blob's `{ sha256 }`. */
export function imageRecallRequest(
  namespace: string,
  image: Uint8Array | { readonly sha256: string },
  o: ImageRecallOptions = {},
): RecallRequest {
  const { queryText, ...options } = o;
  if (image instanceof Uint8Array) {
    return recallRequest(namespace, queryText ?? "", { ...options, imageData: image });
  }
  if (!image.sha256) {
    throw new RangeError("query by image: give the image's bytes or a held blob's sha256");
  }
  return recallRequest(namespace, queryText ?? "", { ...options, imageSha256: image.sha256 });
}

/** The ListRequest of one page. */
export function listRequest(namespace: string, o: ListOptions = {}): ListRequest {
  return ListRequest.fromPartial({
    namespace,
    filter: memoryFilter(o),
    pageSize: o.pageSize,
    pageToken: o.pageToken,
  });
}

/** The ForgetRequest of one memory (by id) or of every memory matching a filter. */
export function forgetRequest(namespace: string, target: string | ForgetFilter): ForgetRequest {
  if (typeof target === "string") return ForgetRequest.fromPartial({ namespace, memoryId: target });
  return ForgetRequest.fromPartial({ namespace, filter: memoryFilter(target), all: target.all });
}

/** The ExplainRequest of the Recall that `recallRequest` makes of the same arguments. */
export function explainRequest(
  namespace: string,
  text: string,
  o: ExplainOptions = {},
): ExplainRequest {
  return ExplainRequest.fromPartial({
    recall: recallRequest(namespace, text, o),
    policies: [...(o.policies ?? [])],
    run: o.run,
  });
}

/** The ReconcileRequest of authoritative facts; `dryRun`: decide only. */
export function reconcileRequest(
  namespace: string,
  facts: readonly (Fact | string)[],
  dryRun = false,
): ReconcileRequest {
  return ReconcileRequest.fromPartial({
    namespace,
    facts: facts.map((f) => {
      const fact: Fact = typeof f === "string" ? { text: f } : f;
      return {
        text: fact.text,
        topic: fact.topic,
        sourceType: enumValue(SourceType, "SOURCE_TYPE_", fact.sourceType ?? "official_document"),
        vector: [...(fact.vector ?? [])],
        kind: kind(fact.kind ?? "fact"),
      };
    }),
    dryRun,
  });
}
