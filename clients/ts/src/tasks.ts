/**
 * `Task`: an agent task's budget, as a few methods around LedgerService and AgentService.Step
 * (clients/python/pocketd/tasks.py).
 *
 *     const t = await client.task("ticket-4411", { totalMicros: 100_000 }, "alice", { goal });
 *     await t.spend("model_input_tokens", 1200, async (s) => {   // reserve; commit after
 *       s.actual = await callTheModel();                         // what it really cost
 *     });
 *     console.log((await t.status()).degradeLevel);
 *     const bill = await t.close();
 *
 * Every mutating call gets a fresh idempotency key and is retried with that same key on
 * UNAVAILABLE or DEADLINE_EXCEEDED (`TASK_RETRY`), so a retry never charges twice. A refused
 * reservation rejects with a `PocketdError` RESOURCE_EXHAUSTED whose `quotaViolations` name
 * the limit.
 */

import { randomUUID } from "node:crypto";

import type { Connection } from "./channel.js";
import { settings, TASK_RETRY, unary, type CallOptions, type UnaryMethod } from "./call.js";
import { enumValue, type EnumName } from "./enums.js";
import {
  AgentServiceService,
  RecallMode,
  StepRequest,
  type ModelUsage,
  type StepResponse,
} from "./gen/pocketd/v1/agent_service.js";
import {
  LedgerServiceService,
  SpendKind,
  TaskBudget,
  type CloseTaskRequest,
  type CommitRequest,
  type DeepPartial,
  type OpenTaskRequest,
  type RaiseBudgetRequest,
  type ReleaseRequest,
  type Reservation,
  type ReserveRequest,
  type TaskBill,
  type TaskStatus,
} from "./gen/pocketd/v1/ledger_service.js";

/**
 * What a reservation pays for: "model_input_tokens", "model_output_tokens", "tool_call" or
 * "memory".
 */
export type SpendKindName = Exclude<EnumName<typeof SpendKind, "SPEND_KIND_">, "unspecified">;

/** A task's budget, as LedgerService's TaskBudget with every field optional. */
export type Budget = DeepPartial<TaskBudget>;

/** The options of `Task.reserve` (and `Task.spend`). */
export interface ReserveOptions {
  /** With "tool_call": the tool's name (its cap applies). */
  readonly tool?: string;
  /** The final answer: it may use the emergency share. */
  readonly final?: boolean;
  /** How long the hold lasts; unset: the server's `ledger.reservation_ttl_seconds`. */
  readonly ttlSeconds?: number;
}

/** One tool call the agent ran this round. */
export interface ToolRun {
  readonly tool: string;
  /** The arguments it was called with. */
  readonly params: Readonly<Record<string, unknown>>;
  readonly result: string;
}

/** `Task.step`'s fields (all optional). */
export interface StepFields {
  /** The user's new input this round, and whether it carries an image. */
  readonly input?: string;
  readonly image?: boolean;
  /** The last action (as JSON) and what it observed, and whether that brought a new medium. */
  readonly action?: string;
  readonly observation?: string;
  readonly media?: boolean;
  /** The model calls since the last Step. */
  readonly usage?: readonly ModelUsage[];
  /** The tool calls run since the last Step. */
  readonly toolResults?: readonly ToolRun[];
  /** The model's raw output, to parse into this round's action (a round's second Step). */
  readonly rawOutput?: string;
  /** The tool schemas, when new or changed. */
  readonly tools?: readonly Readonly<Record<string, unknown>>[];
  /** The recall mode: true active, false auto, unset as before. */
  readonly activeRecall?: boolean;
}

/** One reservation held by `Task.spend`: set `actual` (default: the estimate) before it ends. */
export class Spend {
  actual: number;

  constructor(readonly reservation: Reservation) {
    this.actual = reservation.amountMicros;
  }
}

/** What a task needs of its client. */
export interface TaskOptions {
  readonly goal?: string;
  readonly sessionId?: string;
  readonly timeoutMs: number;
}

/** A fresh idempotency key. */
export function idempotencyKey(): string {
  return randomUUID().replaceAll("-", "");
}

function recallMode(active: boolean | undefined): RecallMode {
  if (active === undefined) return RecallMode.RECALL_MODE_UNSPECIFIED;
  return active ? RecallMode.RECALL_MODE_ACTIVE : RecallMode.RECALL_MODE_AUTO;
}

/** An open agent task; `PocketdClient.task` opens one. Close it to get its bill. */
export class Task {
  /** The round the next reservation belongs to (from 1; `step` moves it forward). */
  round = 1;
  /** The final bill, once `close` has returned it. */
  bill: TaskBill | undefined;

  constructor(
    private readonly conn: Connection,
    readonly taskId: string,
    readonly goal: string,
    private readonly timeoutMs: number,
  ) {}

  /** Open the task `taskId` with `budget` (or find it open with the same budget). */
  static async open(
    conn: Connection,
    taskId: string,
    budget: Budget,
    namespace: string,
    options: TaskOptions,
    call: CallOptions = {},
  ): Promise<Task> {
    const task = new Task(conn, taskId, options.goal ?? "", options.timeoutMs);
    const request: OpenTaskRequest = {
      taskId,
      namespace,
      sessionId: options.sessionId ?? "",
      budget: TaskBudget.fromPartial(budget),
    };
    await task.call(LedgerServiceService.openTask, request, call);
    return task;
  }

  /** The next round's number, made the current one. */
  nextRound(): number {
    this.round += 1;
    return this.round;
  }

  /** Hold `amount` micros of `kind` against every limit (0 for a tool call: the tool's cost). */
  async reserve(
    kind: SpendKindName,
    amount: number,
    options: ReserveOptions = {},
    call: CallOptions = {},
  ): Promise<Reservation> {
    const request: ReserveRequest = {
      taskId: this.taskId,
      round: this.round,
      kind: enumValue(SpendKind, "SPEND_KIND_", kind),
      estimateMicros: amount,
      tool: options.tool ?? "",
      final: options.final ?? false,
      ttlSeconds: options.ttlSeconds ?? 0,
      idempotencyKey: idempotencyKey(),
    };
    return this.call(LedgerServiceService.reserve, request, call);
  }

  /** Record a held reservation's actual amount. */
  async commit(
    reservation: Reservation,
    actual: number,
    call: CallOptions = {},
  ): Promise<TaskStatus> {
    const request: CommitRequest = {
      taskId: this.taskId,
      reservationId: reservation.reservationId,
      actualMicros: actual,
      idempotencyKey: idempotencyKey(),
    };
    return this.call(LedgerServiceService.commit, request, call);
  }

  /** Drop a held reservation. */
  async release(reservation: Reservation, call: CallOptions = {}): Promise<TaskStatus> {
    const request: ReleaseRequest = {
      taskId: this.taskId,
      reservationId: reservation.reservationId,
      idempotencyKey: idempotencyKey(),
    };
    return this.call(LedgerServiceService.release, request, call);
  }

  /**
   * Reserve `estimate`, run `body`, then commit the `Spend`'s `actual` (default: the estimate);
   * if `body` throws, release the hold and rethrow. Resolves to what `body` returned.
   */
  async spend<T>(
    kind: SpendKindName,
    estimate: number,
    body: (spend: Spend) => Promise<T> | T,
    options: ReserveOptions = {},
  ): Promise<T> {
    const spend = new Spend(await this.reserve(kind, estimate, options));
    let out: T;
    try {
      out = await body(spend);
    } catch (error) {
      await this.release(spend.reservation);
      throw error;
    }
    await this.commit(spend.reservation, spend.actual);
    return out;
  }

  /** Spent, held and remaining per limit, the round, the warnings and the degrade level. */
  async status(call: CallOptions = {}): Promise<TaskStatus> {
    return this.call(LedgerServiceService.status, { taskId: this.taskId }, call);
  }

  /** Add `addMicros` to the total (and resume a paused task). */
  async raiseBudget(addMicros: number, call: CallOptions = {}): Promise<TaskStatus> {
    const request: RaiseBudgetRequest = {
      taskId: this.taskId,
      addTotalMicros: addMicros,
      idempotencyKey: idempotencyKey(),
    };
    return this.call(LedgerServiceService.raiseBudget, request, call);
  }

  /**
   * AgentService.Step for `round`. A round's second call, with only `rawOutput`, parses the
   * model's answer into the action. At degrade level 4 the answer carries `failover`.
   */
  async step(
    round: number,
    fields: StepFields = {},
    call: CallOptions = {},
  ): Promise<StepResponse> {
    this.round = Math.max(this.round, round);
    const request = StepRequest.fromPartial({
      taskId: this.taskId,
      round,
      goal: this.goal,
      input: fields.input,
      inputHasImage: fields.image,
      previousActionJson: fields.action,
      observation: fields.observation,
      observationHasMedia: fields.media,
      usage: [...(fields.usage ?? [])],
      toolResults: (fields.toolResults ?? []).map((t) => ({
        tool: t.tool,
        paramsJson: JSON.stringify(t.params),
        result: t.result,
      })),
      rawModelOutput: fields.rawOutput,
      toolsJson: (fields.tools ?? []).map((t) => JSON.stringify(t)),
      idempotencyKey: idempotencyKey(),
      recallMode: recallMode(fields.activeRecall),
    });
    return this.call(AgentServiceService.step, request, call);
  }

  /** Close the task (its held reservations are released) and return its final bill. */
  async close(call: CallOptions = {}): Promise<TaskBill> {
    const request: CloseTaskRequest = { taskId: this.taskId, idempotencyKey: idempotencyKey() };
    this.bill = await this.call(LedgerServiceService.closeTask, request, call);
    return this.bill;
  }

  private call<Req, Res>(
    method: UnaryMethod<Req, Res>,
    request: Req,
    call: CallOptions,
  ): Promise<Res> {
    return unary(this.conn, method, request, settings(call, this.timeoutMs, TASK_RETRY));
  }
}
