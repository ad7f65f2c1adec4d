/**
 * The task helper against an in-process fake LedgerService and AgentService: idempotency keys
 * fresh per call and reused across retries, reserve-then-commit, release on failure, the bill.
 */

import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";

import { status } from "@grpc/grpc-js";

import {
  AgentServiceService,
  StepResponse,
  type AgentServiceServer,
  type StepRequest,
} from "../src/gen/pocketd/v1/agent_service.js";
import {
  LedgerServiceService,
  Reservation,
  SpendKind,
  TaskBill,
  TaskStatus,
  type LedgerServiceServer,
} from "../src/gen/pocketd/v1/ledger_service.js";
import { PocketdClient, PocketdError } from "../src/index.js";
import { failure, serve, type Served } from "./fake.js";

interface Seen {
  /** Each call as "Method key" (the request's idempotency key, "" when it has none). */
  calls: string[];
  /** How many of the next Reserve calls fail with UNAVAILABLE. */
  reserveFailures: number;
  opened?: { taskId: string; namespace: string; total: number; searchCost: number };
  reserved?: { round: number; kind: SpendKind; tool: string; amount: number };
  committed?: number;
  step?: StepRequest;
}

const seen: Seen = { calls: [], reserveFailures: 0 };
const open = (taskId: string) => TaskStatus.fromPartial({ taskId, state: "open" });

const ledger: Partial<LedgerServiceServer> = {
  openTask({ request }, callback) {
    seen.calls.push("OpenTask ");
    seen.opened = {
      taskId: request.taskId,
      namespace: request.namespace,
      total: request.budget?.totalMicros ?? 0,
      searchCost: request.budget?.tools.search?.costPerCallMicros ?? 0,
    };
    callback(null, open(request.taskId));
  },
  reserve({ request }, callback) {
    seen.calls.push(`Reserve ${request.idempotencyKey}`);
    if (seen.reserveFailures-- > 0) return callback(failure(status.UNAVAILABLE, "ledger busy"));
    seen.reserved = {
      round: request.round,
      kind: request.kind,
      tool: request.tool,
      amount: request.estimateMicros,
    };
    callback(
      null,
      Reservation.fromPartial({ reservationId: "r1", amountMicros: request.estimateMicros }),
    );
  },
  commit({ request }, callback) {
    seen.calls.push(`Commit ${request.idempotencyKey}`);
    seen.committed = request.actualMicros;
    callback(null, open(request.taskId));
  },
  release({ request }, callback) {
    seen.calls.push(`Release ${request.idempotencyKey}`);
    callback(null, open(request.taskId));
  },
  status({ request }, callback) {
    seen.calls.push("Status ");
    callback(null, TaskStatus.fromPartial({ taskId: request.taskId, degradeLevel: 1 }));
  },
  closeTask({ request }, callback) {
    seen.calls.push(`CloseTask ${request.idempotencyKey}`);
    const spent = seen.committed ?? 0;
    callback(
      null,
      TaskBill.fromPartial({
        status: { taskId: request.taskId, state: "closed", spentMicros: spent },
      }),
    );
  },
};

const agent: Partial<AgentServiceServer> = {
  step({ request }, callback) {
    seen.calls.push(`Step ${request.idempotencyKey}`);
    seen.step = request;
    callback(null, StepResponse.fromPartial({ tier: "simple", model: "small" }));
  },
};

/** The keys of the calls to `method`, in order. */
const keys = (method: string) =>
  seen.calls.filter((c) => c.startsWith(`${method} `)).map((c) => c.slice(method.length + 1));

describe("the task helper against a fake ledger", () => {
  let server: Served;
  let client: PocketdClient;

  before(async () => {
    server = await serve(
      { definition: LedgerServiceService, handlers: ledger },
      { definition: AgentServiceService, handlers: agent },
    );
    client = new PocketdClient({ target: server.target });
  });
  after(() => {
    client.close();
    server.stop();
  });
  beforeEach(() => {
    Object.assign(seen, {
      calls: [],
      reserveFailures: 0,
      opened: undefined,
      reserved: undefined,
      committed: undefined,
      step: undefined,
    });
  });

  const budget = { totalMicros: 100_000, tools: { search: { costPerCallMicros: 500 } } };

  test("opens with its budget, spends, and closes with the bill", async () => {
    const t = await client.task("t-1", budget, "alice", { goal: "find the order" });
    assert.deepEqual(seen.opened, {
      taskId: "t-1",
      namespace: "alice",
      total: 100_000,
      searchCost: 500,
    });
    const out = await t.spend(
      "tool_call",
      700,
      (s) => {
        s.actual = 500;
        return "ran";
      },
      { tool: "search" },
    );
    assert.equal(out, "ran");
    assert.deepEqual(seen.reserved, {
      round: 1,
      kind: SpendKind.SPEND_KIND_TOOL_CALL,
      tool: "search",
      amount: 700,
    });
    assert.equal(seen.committed, 500);
    assert.equal((await t.status()).degradeLevel, 1);
    const bill = await t.close();
    assert.equal(bill.status?.spentMicros, 500);
    assert.equal(t.bill, bill);
  });

  test("a retried call reuses its idempotency key; each call has its own", async () => {
    const t = await client.task("t-2", budget, "alice");
    seen.reserveFailures = 2;
    const r = await t.reserve("model_input_tokens", 1200);
    await t.commit(r, 1100);
    await t.close();
    const [first, second, third, ...rest] = keys("Reserve");
    assert.equal(rest.length, 0);
    assert.match(first ?? "", /^[0-9a-f]{32}$/);
    assert.equal(second, first);
    assert.equal(third, first);
    const all = [first, ...keys("Commit"), ...keys("CloseTask")];
    assert.equal(new Set(all).size, 3);
  });

  test("a task call gives up after 3 attempts", async () => {
    const t = await client.task("t-3", budget, "alice");
    seen.reserveFailures = 5;
    await assert.rejects(
      t.reserve("memory", 10),
      (e: unknown) => e instanceof PocketdError && e.code === status.UNAVAILABLE,
    );
    assert.equal(keys("Reserve").length, 3);
  });

  test("spend releases the hold when its body throws", async () => {
    const t = await client.task("t-4", budget, "alice");
    await assert.rejects(
      t.spend("model_output_tokens", 300, () => Promise.reject(new Error("model down"))),
      /model down/,
    );
    assert.equal(keys("Release").length, 1);
    assert.equal(keys("Commit").length, 0);
  });

  test("step sends the round, the goal, the usage and the tool results", async () => {
    const t = await client.task("t-5", budget, "alice", { goal: "where is my order?" });
    const plan = await t.step(2, {
      usage: [{ model: "small", inputTokens: 400, outputTokens: 30 }],
      toolResults: [{ tool: "search", params: { q: "88123" }, result: "shipped" }],
      tools: [{ name: "search" }],
      activeRecall: true,
    });
    assert.equal(plan.tier, "simple");
    assert.equal(t.round, 2);
    const s = seen.step;
    assert.ok(s);
    assert.equal(s.goal, "where is my order?");
    assert.equal(s.round, 2);
    assert.deepEqual(s.usage, [{ model: "small", inputTokens: 400, outputTokens: 30 }]);
    assert.deepEqual(s.toolResults, [
      { tool: "search", paramsJson: '{"q":"88123"}', result: "shipped" },
    ]);
    assert.deepEqual(s.toolsJson, ['{"name":"search"}']);
    assert.equal(s.recallMode, 2);
    assert.match(s.idempotencyKey, /^[0-9a-f]{32}$/);
  });

  test("an unknown spend kind is refused before sending", async () => {
    const t = await client.task("t-6", budget, "alice");
    // @ts-expect-error: not a SpendKindName
    await assert.rejects(t.reserve("gpu", 1), /"gpu": expected one of/);
    assert.equal(keys("Reserve").length, 0);
  });
});
