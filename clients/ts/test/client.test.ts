/**
 * The client against an in-process fake MemoryService: which calls are retried on UNAVAILABLE,
 * the metadata each call carries, deadlines, and errors with their details.
 */

import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";

import { status, type ServerUnaryCall } from "@grpc/grpc-js";

import {
  EndSessionResponse,
  ExplainResponse,
  ListResponse,
  MaintainResponse,
  MemoryServiceService,
  RecallResponse,
  ReconcileResponse,
  RememberResponse,
  StatsResponse,
  UnsupersedeResponse,
  type MemoryServiceServer,
} from "../src/gen/pocketd/v1/memory_service.js";
import { backoffMs } from "../src/call.js";
import {
  batchTimeoutMs,
  MAINTAIN_TIMEOUT_MS,
  PocketdClient,
  PocketdError,
  READ_RETRY,
  TASK_RETRY,
} from "../src/index.js";
import { failure, rpcStatus, serve, violations, type Served } from "./fake.js";

/** What the fake saw, reset before each test. */
const seen = {
  calls: 0,
  failFirst: 0,
  metadata: [] as Record<string, unknown>[],
  requests: [] as unknown[],
  // The deadline each call had left when it arrived, in ms (Infinity: none).
  deadlines: [] as number[],
};

function note<Req, Res>(call: ServerUnaryCall<Req, Res>): boolean {
  seen.calls += 1;
  seen.metadata.push(call.metadata.getMap());
  seen.requests.push(call.request);
  const deadline = call.getDeadline(); // a Date, or ms since the epoch (Infinity: none)
  seen.deadlines.push((deadline instanceof Date ? deadline.getTime() : deadline) - Date.now());
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
    callback(
      null,
      RememberResponse.fromPartial({
        memoryId: "m1",
        decision: 1,
        importance: 60,
        tier: 2,
        superseded: [{ memoryId: "m0", supersededBy: "m1", reason: "value:negation" }],
      }),
    );
  },
  reconcile(call, callback) {
    if (note(call)) return callback(failure(status.UNAVAILABLE, "warming up"));
    const decisions = [{ memoryId: "m0", text: "3.2", factIndex: 0, supersede: true, reason: "x" }];
    const applied = !call.request.dryRun;
    callback(
      null,
      ReconcileResponse.fromPartial({ factIds: applied ? ["f1"] : [], decisions, applied }),
    );
  },
  unsupersede(call, callback) {
    if (note(call)) return callback(failure(status.UNAVAILABLE, "warming up"));
    const restored = call.request.memoryIds.slice(0, 1);
    callback(null, UnsupersedeResponse.fromPartial({ restored }));
  },
  endSession(call, callback) {
    if (note(call)) return callback(failure(status.UNAVAILABLE, "warming up"));
    const summaries = [{ memoryId: "s1", decision: 1, tier: 2 }];
    callback(null, EndSessionResponse.fromPartial({ summaries, turnsMoved: 3 }));
  },
  maintain(call, callback) {
    if (note(call)) return callback(failure(status.UNAVAILABLE, "warming up"));
    const report = { topicsCompressed: 1, compressedRecords: 6, expired: 2, tookMicros: 9 };
    callback(null, MaintainResponse.fromPartial(report));
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
    Object.assign(seen, { calls: 0, failFirst: 0, metadata: [], requests: [], deadlines: [] });
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
      [ok.memoryId, ok.decision, ok.stored, ok.importance, ok.tier],
      ["m1", "stored", true, 60, "warm"],
    );
    assert.deepEqual(ok.superseded, [
      { memoryId: "m0", supersededBy: "m1", reason: "value:negation" },
    ]);
  });

  test("the lifecycle calls send their requests and type their answers", async () => {
    const dry = await client.reconcile(
      "shop",
      [{ text: "The price is 4.0 dollars", topic: "pricing" }, "The shop opens at nine"],
      { dryRun: true },
    );
    assert.deepEqual([dry.applied, dry.factIds], [false, []]);
    assert.deepEqual(dry.decisions[0], {
      memoryId: "m0",
      text: "3.2",
      factIndex: 0,
      supersede: true,
      reason: "x",
    });
    type SentFact = { topic: string; sourceType: number; kind: number };
    const sent = seen.requests[0] as { facts: SentFact[] };
    assert.deepEqual(
      sent.facts.map((f) => [f.topic, f.sourceType, f.kind]),
      [
        ["pricing", 1, 2], // official_document, fact
        ["", 1, 2],
      ],
    );
    assert.deepEqual(await client.unsupersede("shop", ["m0", "m9"]), ["m0"]);
    const ended = await client.endSession("me", "s1");
    assert.equal(ended.turnsMoved, 3);
    assert.deepEqual(
      ended.summaries.map((x) => [x.memoryId, x.decision, x.tier]),
      [["s1", "stored", "warm"]],
    );
    const report = await client.maintain();
    assert.deepEqual(
      [report.topicsCompressed, report.compressedRecords, report.expired, report.movedToCold],
      [1, 6, 2, 0],
    );
    assert.deepEqual(seen.requests[3], { namespace: "" });
    // A maintenance run waits at least MAINTAIN_TIMEOUT_MS; the others the client's 5 s.
    const [, unsupersede, , maintain] = seen.deadlines;
    assert.ok(unsupersede !== undefined && unsupersede <= 5_000 && unsupersede > 3_000);
    assert.ok(maintain !== undefined && maintain <= MAINTAIN_TIMEOUT_MS && maintain > 55_000);
  });

  test("the lifecycle calls (writes) are never retried", async () => {
    const calls: (() => Promise<unknown>)[] = [
      () => client.reconcile("shop", ["The price is 4.0 dollars"]),
      () => client.unsupersede("shop", ["m0"]),
      () => client.endSession("me", "s1"),
      () => client.maintain("shop"),
    ];
    for (const call of calls) {
      Object.assign(seen, { calls: 0, failFirst: 1 });
      await assert.rejects(
        call(),
        (e: unknown) => e instanceof PocketdError && e.code === status.UNAVAILABLE,
      );
      assert.equal(seen.calls, 1);
    }
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
