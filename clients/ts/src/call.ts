/**
 * One unary call as a promise: its deadline, its metadata (`x-request-id`), its retries with
 * backoff, and its error as a `PocketdError`.
 *
 * Retries follow the Python client. Recall, Get and Stats are retried on UNAVAILABLE
 * (`READ_RETRY`, as its gRPC retry policy); writes are not, since repeating a write without a
 * client-chosen id could store it twice. A task's calls carry an idempotency key and are
 * retried with that same key on UNAVAILABLE and DEADLINE_EXCEEDED (`TASK_RETRY`). Each attempt
 * has its own deadline.
 */

import { setTimeout as sleep } from "node:timers/promises";

import { status, type ServiceError } from "@grpc/grpc-js";

import type { Connection } from "./channel.js";
import { PocketdError } from "./errors.js";

/** A unary method of a generated service definition. */
export interface UnaryMethod<Req, Res> {
  readonly path: string;
  readonly requestSerialize: (value: Req) => Buffer;
  readonly responseDeserialize: (value: Buffer) => Res;
}

/** When and how often a failed call is tried again. */
export interface RetryPolicy {
  /** Attempts in all, the first included (1: never retried). */
  readonly maxAttempts: number;
  /** The wait before the first retry; each next one is `multiplier` times longer. */
  readonly initialBackoffMs: number;
  readonly multiplier: number;
  readonly maxBackoffMs: number;
  /** The status codes worth another attempt. */
  readonly codes: readonly status[];
}

/** Never retried: writes without an idempotency key. */
export const NO_RETRY: RetryPolicy = Object.freeze({
  maxAttempts: 1,
  initialBackoffMs: 0,
  multiplier: 1,
  maxBackoffMs: 0,
  codes: [],
});

/** Recall, Get and Stats: the Python client's gRPC retry policy (4 attempts from 50 ms). */
export const READ_RETRY: RetryPolicy = Object.freeze({
  maxAttempts: 4,
  initialBackoffMs: 50,
  multiplier: 2,
  maxBackoffMs: 1000,
  codes: [status.UNAVAILABLE],
});

/**
 * A task's calls, each with its idempotency key: as the Python `Task`'s (3 attempts, waits of up
 * to 100 ms and 200 ms).
 */
export const TASK_RETRY: RetryPolicy = Object.freeze({
  maxAttempts: 3,
  initialBackoffMs: 100,
  multiplier: 2,
  maxBackoffMs: 1000,
  codes: [status.UNAVAILABLE, status.DEADLINE_EXCEEDED],
});

/** Per-call options every method takes as its last argument. */
export interface CallOptions {
  /** This call's deadline in milliseconds (default: the client's `timeoutMs`). */
  readonly timeoutMs?: number;
  /** Sent as metadata `x-request-id`; the server's log line and metrics name the call by it. */
  readonly requestId?: string;
}

/** What `unary` needs besides the method and the request. */
export interface CallSettings extends CallOptions {
  readonly timeoutMs: number;
  readonly retry: RetryPolicy;
}

/** The settings of one call: its own options over the client's default deadline. */
export function settings(call: CallOptions, timeoutMs: number, retry: RetryPolicy): CallSettings {
  return { timeoutMs: call.timeoutMs ?? timeoutMs, requestId: call.requestId, retry };
}

/**
 * The wait before retry number `attempt` (from 1): exponential and capped, with jitter in its
 * upper half.
 */
export function backoffMs(
  policy: RetryPolicy,
  attempt: number,
  random: () => number = Math.random,
): number {
  const full = Math.min(
    policy.maxBackoffMs,
    policy.initialBackoffMs * policy.multiplier ** (attempt - 1),
  );
  return full / 2 + (random() * full) / 2;
}

/** Whether a failed attempt number `attempt` (from 1) is tried again under `policy`. */
export function retryable(policy: RetryPolicy, error: unknown, attempt: number): boolean {
  return (
    attempt < policy.maxAttempts &&
    error instanceof PocketdError &&
    policy.codes.includes(error.code)
  );
}

function once<Req, Res>(
  conn: Connection,
  method: UnaryMethod<Req, Res>,
  request: Req,
  settings: CallSettings,
): Promise<Res> {
  const metadata = conn.metadata();
  if (settings.requestId) metadata.set("x-request-id", settings.requestId);
  const deadline = Date.now() + settings.timeoutMs;
  return new Promise((resolve, reject) => {
    conn.client.makeUnaryRequest(
      method.path,
      method.requestSerialize,
      method.responseDeserialize,
      request,
      metadata,
      { deadline },
      (err: ServiceError | null, value?: Res) => {
        if (err) reject(PocketdError.fromServiceError(err));
        else if (value === undefined) reject(new PocketdError(status.INTERNAL, "no response"));
        else resolve(value);
      },
    );
  });
}

/**
 * Call `method` with `request`, retried under `settings.retry`. A retry sends the very same
 * request, so an idempotency key in it is reused.
 */
export async function unary<Req, Res>(
  conn: Connection,
  method: UnaryMethod<Req, Res>,
  request: Req,
  settings: CallSettings,
): Promise<Res> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await once(conn, method, request, settings);
    } catch (error) {
      if (!retryable(settings.retry, error, attempt)) throw error;
      await sleep(backoffMs(settings.retry, attempt));
    }
  }
}
