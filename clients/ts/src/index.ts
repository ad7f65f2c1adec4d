/**
 * pocketd's TypeScript client.
 *
 *     import { PocketdClient } from "@pocketd/client";
 *     const pocket = new PocketdClient({ target: "127.0.0.1:50051" });
 *     await pocket.remember("alice", "Alice only uses Android phones", { kind: "preference" });
 *     for (const hit of (await pocket.recall("alice", "which phone does she use?")).hits) {
 *       console.log(hit.score.final, hit.memory.text);
 *     }
 *     pocket.close();
 */

export {
  BATCH_MS_PER_ITEM,
  batchTimeoutMs,
  DEFAULT_TARGET,
  DEFAULT_TIMEOUT_MS,
  MAINTAIN_TIMEOUT_MS,
  MAX_MESSAGE_BYTES,
  MEDIA_WAIT_TIMEOUT_MS,
  PocketdClient,
  writeTimeoutMs,
  type ClientOptions,
  type TaskStartOptions,
} from "./client.js";
export { NO_RETRY, READ_RETRY, TASK_RETRY, type CallOptions, type RetryPolicy } from "./call.js";
export { isLoopback, type TlsOptions } from "./channel.js";
export { PocketdError, STATUS_DETAILS_KEY } from "./errors.js";
export {
  decodeStatus,
  type ErrorDetails,
  type ErrorInfo,
  type FieldViolation,
  type PreconditionViolation,
  type QuotaViolation,
  type ResourceInfo,
  type RpcStatus,
} from "./status.js";
export type {
  AudioOptions,
  ExplainOptions,
  Fact,
  FilterOptions,
  ForgetFilter,
  ImageRecallOptions,
  ListOptions,
  MediaModality,
  MediaOptions,
  MemoryFields,
  MemoryInput,
  MemoryKindName,
  ModalityName,
  RecallOptions,
  SourceTypeName,
  SpaceVectors,
} from "./requests.js";
export { mediaInput } from "./requests.js";
export {
  idempotencyKey,
  Spend,
  Task,
  type Budget,
  type ReserveOptions,
  type SpendKindName,
  type StepFields,
  type ToolRun,
} from "./tasks.js";
export type {
  Blob,
  Hit,
  IndexStats,
  MaintainReport,
  MediaStats,
  Memory,
  NamespaceStats,
  Page,
  PlanStepReport,
  RecallResult,
  ReconcileDecision,
  ReconcileResult,
  RememberResult,
  Score,
  SessionEnd,
  Stats,
  Supersession,
} from "./types.js";
// The protobuf messages the task helper and `explain` answer with.
export type {
  FailoverPlan,
  ModelUsage,
  StepAction,
  StepResponse,
} from "./gen/pocketd/v1/agent_service.js";
export type {
  LimitState,
  Reservation,
  TaskBill,
  TaskBudget,
  TaskStatus,
  ToolBudget,
} from "./gen/pocketd/v1/ledger_service.js";
export { FailoverAction } from "./gen/pocketd/v1/ledger_service.js";
export type { ExplainResponse } from "./gen/pocketd/v1/memory_service.js";
