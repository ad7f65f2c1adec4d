/**
 * Live tests against a running pocketd: only when POCKETD_TARGET is set (with POCKETD_TOKEN
 * when the server has auth), skipped otherwise. tests/e2e/test_client_ts.py runs them against
 * a real server.
 */

import assert from "node:assert/strict";
import { createHash, randomUUID } from "node:crypto";
import { readFile } from "node:fs/promises";
import { after, describe, test } from "node:test";

import { status } from "@grpc/grpc-js";

import { DEFAULT_TARGET, PocketdClient, PocketdError } from "../src/index.js";

const target = process.env.POCKETD_TARGET ?? "";
const token = process.env.POCKETD_TOKEN || undefined;
const skip = target ? false : "POCKETD_TARGET is unset";

if (skip) {
  console.log(
    "pocketd live tests SKIPPED: set POCKETD_TARGET=host:port (and POCKETD_TOKEN) to run them",
  );
} else {
  console.log(`pocketd live tests against ${target}${token ? " with a token" : ""}`);
}

describe("live: a real pocketd", () => {
  const namespace = `ts-live-${randomUUID().slice(0, 8)}`;
  // A loaded machine's first calls can be slow (the encoder warms up): generous deadlines.
  const client = new PocketdClient({ target: target || DEFAULT_TARGET, token, timeoutMs: 60_000 });
  after(() => client.close());

  test("live: remember then recall round trip", { skip }, async () => {
    const stored = await client.remember(namespace, "Alice only uses Android phones", {
      kind: "preference",
      tags: ["phone"],
    });
    assert.ok(stored.stored, `${stored.decision}: ${stored.reason}`);
    const found = await client.recall(namespace, "which phone does Alice use?");
    const hit = found.hits.find((h) => h.memory.memoryId === stored.memoryId);
    assert.ok(hit, "the memory just stored is recalled");
    assert.equal(hit.memory.text, "Alice only uses Android phones");
    assert.equal(hit.memory.kind, "preference");
    assert.deepEqual(hit.memory.tags, ["phone"]);
    const got = await client.get(namespace, stored.memoryId, {}, { requestId: "ts-live-get" });
    assert.equal(got.text, "Alice only uses Android phones");
    const stats = await client.stats(namespace);
    assert.equal(stats.namespaces[0]?.recordCount, 1);
  });

  test("live: a bad request names the field", { skip }, async () => {
    await assert.rejects(client.recall(namespace, "anything", { topK: 0 }), (e: unknown) => {
      assert.ok(e instanceof PocketdError, String(e));
      assert.equal(e.code, status.INVALID_ARGUMENT);
      assert.ok(e.violation("top_k"), JSON.stringify(e.fieldViolations));
      return true;
    });
  });

  test("live: reconcile, unsupersede, end a session and maintain", { skip }, async () => {
    const ns = `${namespace}-life`;
    const old = await client.remember(ns, "The product price is 3.2 dollars", { topic: "pricing" });
    const fact = { text: "The product price is 4.0 dollars", topic: "pricing" };
    const dry = await client.reconcile(ns, [fact], { dryRun: true });
    assert.deepEqual([dry.applied, dry.factIds], [false, []]);
    assert.ok(dry.decisions.some((d) => d.memoryId === old.memoryId && d.supersede));
    const done = await client.reconcile(ns, [fact]);
    assert.equal(done.factIds.length, 1);
    const gone = await client.get(ns, old.memoryId);
    assert.deepEqual([gone.obsolete, gone.supersedeReason], [true, "reconcile"]);
    assert.deepEqual(await client.unsupersede(ns, [old.memoryId]), [old.memoryId]);
    await assert.rejects(client.endSession(ns, "no-such-session"), (e: unknown) => {
      assert.ok(e instanceof PocketdError, String(e));
      assert.equal(e.code, status.NOT_FOUND);
      assert.ok(e.violation("session_id"), JSON.stringify(e.fieldViolations));
      return true;
    });
    const report = await client.maintain(ns);
    assert.ok(report.tookMicros >= 0);
  });

  // test/fixtures/error-e1234.png: "Refund failed: E1234" in DejaVu Sans, 300 × 48 px.
  test("live: a screenshot remembered, then found by its code", { skip }, async () => {
    const ns = `${namespace}-media`;
    const shot = await readFile(new URL("../../test/fixtures/error-e1234.png", import.meta.url));
    const r = await client.rememberImage(ns, shot, { sessionId: "s1", wait: true });
    assert.deepEqual([r.decision, r.processingState], ["stored", "ready"], r.reason);
    const found = await client.recall(ns, "error code E1234", { topK: 5 });
    const hit = found.hits.find(
      (h) => h.memory.memoryId === r.memoryId || h.groupMemberIds.includes(r.memoryId),
    );
    assert.ok(hit, `the screenshot ${r.memoryId} is recalled by its code`);
    assert.match(hit.memory.text, /E1234/);
    const got = await client.get(ns, r.memoryId, { includeBlobData: true });
    assert.equal(got.modality, "image");
    assert.equal(got.blob?.mimeType, "image/png");
    assert.equal(got.blob?.sha256, createHash("sha256").update(shot).digest("hex"));
    assert.deepEqual(Buffer.from(got.blob?.data ?? []), shot);
  });

  test("live: a task opened, reserved, committed, stepped and closed", { skip }, async () => {
    const budget = { totalMicros: 100_000, tools: { search: { costPerCallMicros: 500 } } };
    const taskId = `ts-live-${randomUUID().slice(0, 8)}`;
    const t = await client.task(taskId, budget, namespace, { goal: "Where is my order 88123?" });
    const held = await t.reserve("tool_call", 0, { tool: "search" });
    assert.equal(held.amountMicros, 500);
    const committed = await t.commit(held, 400);
    assert.equal(committed.spentMicros, 400);
    const spent = await t.spend("model_input_tokens", 1_000, (s) => {
      s.actual = 800;
      return s.reservation.reservationId;
    });
    assert.ok(spent);
    const plan = await t.step(1, { input: "Where is my order 88123?" });
    assert.ok(plan.tier, "a tier is routed");
    assert.ok(plan.budget, "the budget's state comes back");
    const bill = await t.close();
    assert.equal(bill.status?.state, "closed");
    assert.ok((bill.status?.spentMicros ?? 0) >= 1_200, JSON.stringify(bill.status));
  });
});
