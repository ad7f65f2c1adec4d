/**
 * The client against an in-process fake MemoryService: which calls are retried on UNAVAILABLE,
 * the metadata each call carries, deadlines, and errors with their details.
 */

import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";

import { status, type ServerUnaryCall } from "@grpc/grpc-js";

import {
  ExplainResponse,
  ListResponse,
  MemoryServiceService,
  RecallResponse,
  RememberResponse,
  StatsResponse,
  type MemoryServiceServer,
} from "../src/gen/pocketd/v1/memory_service.js";
import { backoffMs } from "../src/call.js";
import {
  batchTimeoutMs,
  PocketdClient,
  PocketdError,
  READ_RETRY,
  TASK_RETRY,
} from "../src/index.js";
import { failure, rpcStatus, serve, violations, type Served } from "./fake.js";

/** What the fake saw, reset before each test. */
const seen = { calls: 0, failFirst: 0, metadata: [] as Record<string, unknown>[] };

function note<Req, Res>(call: ServerUnaryCall<Req, Res>): boolean {
  seen.calls += 1;
  seen.metadata.push(call.metadata.getMap());
  return seen.calls <= seen.failFirst;
}

const fake: Partial<MemoryServiceServer> = {
  recall(call, callback) {
    if (note(call)) return callback(failure(status.UNAVAILABLE, "warming up"));
    if (call.request.topK === 0) {
      const rich = rpcStatus(
        status.INVALID_ARGUMENT,
        "top_k: 0 is outside 1-100",
        violations("google.rpc.BadRequest", ["top_k", "0 is outside 1-100"]),
      );
      return callback(failure(status.INVALID_ARGUMENT, "top_k: 0 is outside 1-100", rich));
    }
    const record = {
      memoryId: "m1",
      namespace: call.request.namespace,
      text: "Alice uses Android",
      kind: 1,
      tier: 1,
    };
    callback(
      null,
      RecallResponse.fromPartial({ hits: [{ record, score: { final: 0.9, keywordHit: true } }] }),
    );
  },
  remember(call, callback) {
    if (note(call)) return callback(failure(status.UNAVAILABLE, "warming up"));
    callback(null, RememberResponse.fromPartial({ memoryId: "m1", decision: 1, importance: 60 }));
  },
  stats(call, callback) {
    if (note(call)) return callback(failure(status.UNAVAILABLE, "warming up"));
    callback(null, StatsResponse.fromPartial({ pendingIndex: 2 }));
  },
  get(call) {
    note(call); // never answers: the client's deadline ends it
  },
  list(call, callback) {
    if (note(call)) return callback(failure(status.UNAVAILABLE, "warming up"));
    callback(null, ListResponse.fromPartial({ nextPageToken: "p2" }));
  },
  explain(call, callback) {
    if (note(call)) return callback(failure(status.UNAVAILABLE, "warming up"));
    callback(null, ExplainResponse.fromPartial({}));
  },
};

describe("the client against a fake MemoryService", () => {
  let server: Served;
  let client: PocketdClient;

  before(async () => {
    server = await serve({ definition: MemoryServiceService, handlers: fake });
    client = new PocketdClient({ target: server.target, token: "t0ken" });
  });
  after(() => {
    client.close();
    server.stop();
  });
  beforeEach(() => {
    Object.assign(seen, { calls: 0, failFirst: 0, metadata: [] });
  });

  test("Recall is retried on UNAVAILABLE until it succeeds", async () => {
    seen.failFirst = 2;
    const r = await client.recall("alice", "which phone?");
    assert.equal(seen.calls, 3);
    assert.equal(r.hits.length, 1);
    assert.equal(r.hits[0]?.memory.text, "Alice uses Android");
    assert.equal(r.hits[0]?.memory.kind, "preference");
    assert.equal(r.hits[0]?.memory.tier, "hot");
    assert.equal(r.hits[0]?.score.keywordHit, true);
  });

  test("Recall gives up after 4 attempts", async () => {
    seen.failFirst = 10;
    await assert.rejects(client.recall("alice", "x"), (e: unknown) => {
      assert.ok(e instanceof PocketdError);
      assert.equal(e.code, status.UNAVAILABLE);
      assert.equal(e.details, "warming up");
      return true;
    });
    assert.equal(seen.calls, 4);
  });

  test("Stats is retried too", async () => {
    seen.failFirst = 2;
    assert.equal((await client.stats()).pendingIndex, 2);
    assert.equal(seen.calls, 3);
  });

  test("List and Explain (reads) are retried too", async () => {
    seen.failFirst = 2;
    assert.equal((await client.list("alice")).nextPageToken, "p2");
    assert.equal(seen.calls, 3);
    Object.assign(seen, { calls: 0, failFirst: 2, metadata: [] });
    await client.explain("alice", "which phone?");
    assert.equal(seen.calls, 3);
  });

  test("Remember (a write) is never retried", async () => {
    seen.failFirst = 1;
    await assert.rejects(
      client.remember("alice", "Alice uses Android"),
      (e: unknown) => e instanceof PocketdError && e.code === status.UNAVAILABLE,
    );
    assert.equal(seen.calls, 1);
    const ok = await client.remember("alice", "Alice uses Android", { kind: "preference" });
    assert.deepEqual(
      [ok.memoryId, ok.decision, ok.stored, ok.importance],
      ["m1", "stored", true, 60],
    );
  });

  test("an error with details is not retried, and names the field", async () => {
    await assert.rejects(client.recall("alice", "x", { topK: 0 }), (e: unknown) => {
      assert.ok(e instanceof PocketdError);
      assert.equal(e.code, status.INVALID_ARGUMENT);
      assert.deepEqual(
        e.fieldViolations.map((v) => v.field),
        ["top_k"],
      );
      return true;
    });
    assert.equal(seen.calls, 1);
  });

  test("every call carries the token, and the request id when given", async () => {
    await client.stats("", { requestId: "req-42" });
    await client.stats();
    assert.equal(seen.metadata[0]?.authorization, "Bearer t0ken");
    assert.equal(seen.metadata[0]?.["x-request-id"], "req-42");
    assert.equal(seen.metadata[1]?.authorization, "Bearer t0ken");
    assert.equal(seen.metadata[1]?.["x-request-id"], undefined);
  });

  test("a call that outlives its deadline fails with DEADLINE_EXCEEDED, once", async () => {
    const started = Date.now();
    await assert.rejects(
      client.get("alice", "m1", {}, { timeoutMs: 300 }),
      (e: unknown) => e instanceof PocketdError && e.code === status.DEADLINE_EXCEEDED,
    );
    assert.ok(Date.now() - started < 5_000);
    assert.equal(seen.calls, 1);
  });

  test("an enum name the proto lacks is refused before sending", async () => {
    await assert.rejects(
      // @ts-expect-error: not a MemoryKindName
      client.remember("alice", "x", { kind: "opinion" }),
      /"opinion": expected one of unspecified, preference, fact/,
    );
    assert.equal(seen.calls, 0);
  });

  test("a batch's deadline grows with its size", () => {
    assert.equal(batchTimeoutMs(5_000, 10), 5_000);
    assert.equal(batchTimeoutMs(5_000, 400), 20_000);
  });
});

describe("the retry policies", () => {
  test("back off exponentially, capped, with jitter in the upper half", () => {
    const waits = (random: number) =>
      [1, 2, 3, 6].map((n) => backoffMs(READ_RETRY, n, () => random));
    assert.deepEqual(waits(1), [50, 100, 200, 1000]);
    assert.deepEqual(waits(0), [25, 50, 100, 500]);
    assert.deepEqual(
      [1, 2].map((n) => backoffMs(TASK_RETRY, n, () => 1)),
      [100, 200],
    );
  });

  test("retry only UNAVAILABLE on reads; UNAVAILABLE and DEADLINE_EXCEEDED on task calls", () => {
    assert.deepEqual(READ_RETRY.codes, [status.UNAVAILABLE]);
    assert.deepEqual(TASK_RETRY.codes, [status.UNAVAILABLE, status.DEADLINE_EXCEEDED]);
    assert.deepEqual([READ_RETRY.maxAttempts, TASK_RETRY.maxAttempts], [4, 3]);
  });
});
