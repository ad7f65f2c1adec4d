/**
 * `PocketdClient`: pocketd's MemoryService as promises, and `task` for the agent-loop services
 * (clients/python/pocketd/client.py).
 *
 * Every call has a deadline (`timeoutMs`, default 5 s; a batch's and a reconciliation's grow
 * with their size, `maintain` waits at least `MAINTAIN_TIMEOUT_MS`, and a write that waits for
 * its medium to be read at least `MEDIA_WAIT_TIMEOUT_MS`). Recall, Get and Stats
 * are retried on UNAVAILABLE; writes are not, since repeating a write without a client-chosen
 * `memoryId` could store it twice. A failed call rejects with a `PocketdError`
 * carrying the status and the server's rich details.
 */

import {
  NO_RETRY,
  READ_RETRY,
  settings,
  unary,
  type CallOptions,
  type RetryPolicy,
  type UnaryMethod,
} from "./call.js";
import { openChannel, type Connection, type TlsOptions } from "./channel.js";
import { MemoryRecord } from "./gen/pocketd/v1/memory.js";
import {
  EndSessionRequest,
  GetRequest,
  MaintainRequest,
  MemoryServiceService,
  RememberBatchRequest,
  StatsRequest,
  UnsupersedeRequest,
  type ExplainResponse,
} from "./gen/pocketd/v1/memory_service.js";
import {
  explainRequest,
  forgetRequest,
  imageRecallRequest,
  listRequest,
  mediaInput,
  recallRequest,
  reconcileRequest,
  rememberRequest,
  type AudioOptions,
  type ExplainOptions,
  type Fact,
  type ForgetFilter,
  type ImageRecallOptions,
  type ListOptions,
  type MediaOptions,
  type MemoryFields,
  type MemoryInput,
  type RecallOptions,
} from "./requests.js";
import { Task, type Budget } from "./tasks.js";
import {
  toMaintainReport,
  toMemory,
  toPage,
  toRecallResult,
  toReconcileResult,
  toRememberResult,
  toSessionEnd,
  toStats,
  type MaintainReport,
  type Memory,
  type Page,
  type RecallResult,
  type ReconcileResult,
  type RememberResult,
  type SessionEnd,
  type Stats,
} from "./types.js";

/** Where the client connects without a `target`. */
export const DEFAULT_TARGET = "127.0.0.1:50051";
/** Every call's deadline unless the client or the call says otherwise (as the Python client's). */
export const DEFAULT_TIMEOUT_MS = 5_000;
/** The largest message sent or received (as the Python client's). */
export const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;
/** A RememberBatch's deadline per item: the server encodes a few hundred texts a second. */
export const BATCH_MS_PER_ITEM = 50;

/**
 * The least a Maintain waits (a run may take a while, and one under way is waited for): the
 * server's own cap on a call, `server.max_call_seconds`, by default.
 */
export const MAINTAIN_TIMEOUT_MS = 60_000;

/** The deadline of a RememberBatch of `items`: at least `timeoutMs`, and 50 ms per item. */
export function batchTimeoutMs(timeoutMs: number, items: number): number {
  return Math.max(timeoutMs, items * BATCH_MS_PER_ITEM);
}

/**
 * The least a write that waits for its medium to be read (`wait`, `waitProcessed`) waits: OCR
 * takes about a second an image on two cores and a transcript a fraction of the recording's
 * length, behind whatever the queue holds, so as long as the server lets a call run
 * (`server.max_call_seconds`, 60 s by default).
 */
export const MEDIA_WAIT_TIMEOUT_MS = 60_000;

/**
 * The deadline of a write of `items`: `timeoutMs`, or at least `MEDIA_WAIT_TIMEOUT_MS` when one
 * of them waits for its medium to be read.
 */
export function writeTimeoutMs(timeoutMs: number, items: readonly MemoryInput[]): number {
  const wait = items.some((i) => i.waitProcessed);
  return wait ? Math.max(timeoutMs, MEDIA_WAIT_TIMEOUT_MS) : timeoutMs;
}

/** How the client connects and how long its calls may take. */
export interface ClientOptions {
  /** `host:port`; default 127.0.0.1:50051. */
  readonly target?: string;
  /** The bearer token (`auth.tokens` on the server). */
  readonly token?: string;
  /** Connect over TLS (with a client certificate for mTLS); unset: plaintext. */
  readonly tls?: TlsOptions;
  /**
   * Send `token` over plaintext to a host that is not loopback. Without it, a token and no
   * `tls` to such a host is refused: the token would cross the network in the clear.
   */
  readonly allowInsecureToken?: boolean;
  /** Every call's deadline in milliseconds; default 5000. */
  readonly timeoutMs?: number;
  /** The largest message sent or received; default 16 MiB. */
  readonly maxMessageBytes?: number;
}

/** The options of `PocketdClient.task`. */
export interface TaskStartOptions {
  /** The task's goal: required by its first Step. */
  readonly goal?: string;
  readonly sessionId?: string;
}

const M = MemoryServiceService;

/** A pocketd client over one channel. Call `close()` when done. */
export class PocketdClient {
  /** Every call's deadline unless the call gives its own. */
  readonly timeoutMs: number;
  private readonly conn: Connection;

  constructor(options: ClientOptions = {}) {
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.conn = openChannel({
      target: options.target ?? DEFAULT_TARGET,
      token: options.token,
      tls: options.tls,
      allowInsecureToken: options.allowInsecureToken,
      maxMessageBytes: options.maxMessageBytes ?? MAX_MESSAGE_BYTES,
    });
  }

  /** Store one memory; `fields` are a `MemoryInput`'s (kind, vector, importance, ...). */
  async remember(
    namespace: string,
    text = "",
    fields: MemoryFields = {},
    call: CallOptions = {},
  ): Promise<RememberResult> {
    return this.rememberOne({ ...fields, namespace, text }, call);
  }

  /**
   * Store an image (PNG, JPEG, GIF, WebP or BMP bytes: a screenshot, a photo): pocketd keeps
   * it, reads its text (OCR) and, with an image space, its vector. `caption` is kept as its
   * description (without one, the OCR text is); the reply comes once it is durable,
   * `processingState` "processing", or with `wait` once it is read. An observation unless
   * `kind` says otherwise; never retried.
   */
  async rememberImage(
    namespace: string,
    data: Uint8Array,
    options: MediaOptions = {},
    call: CallOptions = {},
  ): Promise<RememberResult> {
    return this.rememberOne(mediaInput(namespace, "image", data, options), call);
  }

  /**
   * Store a recording (WAV, FLAC, OGG, MP3 or M4A bytes: a voice note): pocketd keeps it and
   * transcribes it in `language` ("en", "zh", "auto"); the rest as `rememberImage`.
   */
  async rememberAudio(
    namespace: string,
    data: Uint8Array,
    options: AudioOptions = {},
    call: CallOptions = {},
  ): Promise<RememberResult> {
    return this.rememberOne(mediaInput(namespace, "audio", data, options), call);
  }

  /**
   * Store a table (CSV, TSV or Markdown, as bytes or text): pocketd keeps it and linearises it
   * into "column: value" rows, its column names as tags (rows left out are counted in the
   * reply's `warnings`); the rest as `rememberImage`.
   */
  async rememberTable(
    namespace: string,
    data: Uint8Array | string,
    options: MediaOptions = {},
    call: CallOptions = {},
  ): Promise<RememberResult> {
    return this.rememberOne(mediaInput(namespace, "table", data, options), call);
  }

  /** Store many memories in one transaction; the deadline grows with the batch. */
  async rememberBatch(
    items: readonly MemoryInput[],
    call: CallOptions = {},
  ): Promise<RememberResult[]> {
    const request = RememberBatchRequest.fromPartial({ items: items.map(rememberRequest) });
    const timeoutMs = writeTimeoutMs(
      batchTimeoutMs(call.timeoutMs ?? this.timeoutMs, items.length),
      items,
    );
    const response = await this.call(M.rememberBatch, request, { ...call, timeoutMs }, NO_RETRY);
    return response.results.map(toRememberResult);
  }

  /** Hybrid search over a namespace (retried on UNAVAILABLE). */
  async recall(
    namespace: string,
    text = "",
    options: RecallOptions = {},
    call: CallOptions = {},
  ): Promise<RecallResult> {
    const request = recallRequest(namespace, text, options);
    return toRecallResult(await this.call(M.recall, request, call, READ_RETRY));
  }

  /**
   * Recall by an image: its bytes, or `{ sha256 }` naming a blob pocketd holds (a memory's
   * `blob.sha256`). The server encodes it into its image space (FAILED_PRECONDITION without
   * one) and weighs the vector channel as for an image query; `queryText` may add words.
   * Retried on UNAVAILABLE, as `recall`.
   */
  async recallByImage(
    namespace: string,
    image: Uint8Array | { readonly sha256: string },
    options: ImageRecallOptions = {},
    call: CallOptions = {},
  ): Promise<RecallResult> {
    const request = imageRecallRequest(namespace, image, options);
    return toRecallResult(await this.call(M.recall, request, call, READ_RETRY));
  }

  /**
   * The plan each routing policy would choose for this Recall (`options` as `recall`'s), with
   * the route features; `run`: also each plan's result.
   */
  async explain(
    namespace: string,
    text = "",
    options: ExplainOptions = {},
    call: CallOptions = {},
  ): Promise<ExplainResponse> {
    return this.call(M.explain, explainRequest(namespace, text, options), call, READ_RETRY);
  }

  /** One page of List; pass its `nextPageToken` as `pageToken` for the next. */
  async list(namespace: string, options: ListOptions = {}, call: CallOptions = {}): Promise<Page> {
    return toPage(await this.call(M.list, listRequest(namespace, options), call, READ_RETRY));
  }

  /**
   * One memory by id (retried on UNAVAILABLE); `includeBlobData`: its medium's bytes too (in
   * `blob.data`).
   */
  async get(
    namespace: string,
    memoryId: string,
    options: { readonly includeVector?: boolean; readonly includeBlobData?: boolean } = {},
    call: CallOptions = {},
  ): Promise<Memory> {
    const request = GetRequest.fromPartial({
      namespace,
      memoryId,
      includeVector: options.includeVector,
      includeBlobData: options.includeBlobData,
    });
    const response = await this.call(M.get, request, call, READ_RETRY);
    return toMemory(response.record ?? MemoryRecord.fromPartial({}));
  }

  /**
   * Forget one memory by id, or every memory matching a filter (`{ all: true }` for the whole
   * namespace); resolves to how many were forgotten.
   */
  async forget(
    namespace: string,
    target: string | ForgetFilter,
    call: CallOptions = {},
  ): Promise<number> {
    const response = await this.call(M.forget, forgetRequest(namespace, target), call, NO_RETRY);
    return response.forgottenCount;
  }

  /** Counts per namespace ("": every namespace of the caller) and the index's progress. */
  async stats(namespace = "", call: CallOptions = {}): Promise<Stats> {
    const request = StatsRequest.fromPartial({ namespace });
    return toStats(await this.call(M.stats, request, call, READ_RETRY));
  }

  /**
   * Store authoritative facts (a plain string: a fact without a topic) and mark the current
   * memories on their topic that they contradict obsolete (reason "reconcile"); `dryRun`: only
   * say what would be marked. The deadline grows with the facts; never retried.
   */
  async reconcile(
    namespace: string,
    facts: readonly (Fact | string)[],
    options: { readonly dryRun?: boolean } = {},
    call: CallOptions = {},
  ): Promise<ReconcileResult> {
    const request = reconcileRequest(namespace, facts, options.dryRun);
    const timeoutMs = batchTimeoutMs(call.timeoutMs ?? this.timeoutMs, facts.length);
    const response = await this.call(M.reconcile, request, { ...call, timeoutMs }, NO_RETRY);
    return toReconcileResult(response);
  }

  /** Make obsolete memories current again; resolves to the ids that were obsolete. */
  async unsupersede(
    namespace: string,
    memoryIds: readonly string[],
    call: CallOptions = {},
  ): Promise<string[]> {
    const request = UnsupersedeRequest.fromPartial({ namespace, memoryIds: [...memoryIds] });
    return (await this.call(M.unsupersede, request, call, NO_RETRY)).restored;
  }

  /** End a session: its turns are summarised into warm memories and move to warm. */
  async endSession(
    namespace: string,
    sessionId: string,
    call: CallOptions = {},
  ): Promise<SessionEnd> {
    const request = EndSessionRequest.fromPartial({ namespace, sessionId });
    return toSessionEnd(await this.call(M.endSession, request, call, NO_RETRY));
  }

  /**
   * Run the lifecycle maintenance now over `namespace` ("": every namespace the token sees,
   * which it must grant all of); waits at least `MAINTAIN_TIMEOUT_MS`, never retried.
   */
  async maintain(namespace = "", call: CallOptions = {}): Promise<MaintainReport> {
    const request = MaintainRequest.fromPartial({ namespace });
    const timeoutMs = Math.max(call.timeoutMs ?? this.timeoutMs, MAINTAIN_TIMEOUT_MS);
    const response = await this.call(M.maintain, request, { ...call, timeoutMs }, NO_RETRY);
    return toMaintainReport(response);
  }

  /**
   * Open the agent task `taskId` with `budget`, charged to `namespace`; `Task.step` runs its
   * rounds and `Task.close` returns its bill.
   */
  task(
    taskId: string,
    budget: Budget,
    namespace: string,
    options: TaskStartOptions = {},
    call: CallOptions = {},
  ): Promise<Task> {
    return Task.open(
      this.conn,
      taskId,
      budget,
      namespace,
      { ...options, timeoutMs: this.timeoutMs },
      call,
    );
  }

  /** Close the channel; calls in flight fail. */
  close(): void {
    this.conn.client.close();
  }

  private async rememberOne(item: MemoryInput, call: CallOptions): Promise<RememberResult> {
    const timeoutMs = writeTimeoutMs(call.timeoutMs ?? this.timeoutMs, [item]);
    const response = await this.call(
      M.remember,
      rememberRequest(item),
      { ...call, timeoutMs },
      NO_RETRY,
    );
    return toRememberResult(response);
  }

  private call<Req, Res>(
    method: UnaryMethod<Req, Res>,
    request: Req,
    call: CallOptions,
    retry: RetryPolicy,
  ): Promise<Res> {
    return unary(this.conn, method, request, settings(call, this.timeoutMs, retry));
  }
}
