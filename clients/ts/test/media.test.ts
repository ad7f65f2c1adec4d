/**
 * The media calls (issue 30) against an in-process fake MemoryService: what rememberImage,
 * rememberAudio, rememberTable and recallByImage put on the wire, their deadlines, and the
 * media fields the typed results read back. The server's own reading of media is tested by its
 * suites; the fake answers with every media field set.
 */

import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";

import { status, type ServerUnaryCall } from "@grpc/grpc-js";

import {
  MemoryKind,
  MemoryRecord,
  Modality,
  ProcessingState,
} from "../src/gen/pocketd/v1/memory.js";
import {
  GetResponse,
  MemoryServiceService,
  RecallResponse,
  RememberBatchResponse,
  RememberResponse,
  StatsResponse,
  type GetRequest,
  type MemoryServiceServer,
  type RecallRequest,
  type RememberBatchRequest,
  type RememberRequest,
} from "../src/gen/pocketd/v1/memory_service.js";
import { MEDIA_WAIT_TIMEOUT_MS, mediaInput, PocketdClient, PocketdError } from "../src/index.js";
import { failure, serve, type Served } from "./fake.js";

const PNG = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3, 4]);
const WAV = new TextEncoder().encode("RIFF$\0\0\0WAVEfmt ");
const SHA = "ab".repeat(32);

/** What the fake saw, reset before each test. */
const seen = {
  requests: [] as unknown[],
  // The deadline each call had left when it arrived, in ms.
  deadlines: [] as number[],
  unavailable: 0,
};

function note<Req, Res>(call: ServerUnaryCall<Req, Res>): boolean {
  seen.requests.push(call.request);
  const deadline = call.getDeadline();
  seen.deadlines.push((deadline instanceof Date ? deadline.getTime() : deadline) - Date.now());
  if (seen.unavailable === 0) return false;
  seen.unavailable -= 1;
  return true;
}

const fake: Partial<MemoryServiceServer> = {
  remember(call, callback) {
    if (note(call)) return callback(failure(status.UNAVAILABLE, "warming up"));
    const processingState = call.request.waitProcessed
      ? ProcessingState.PROCESSING_STATE_READY
      : ProcessingState.PROCESSING_STATE_PROCESSING;
    callback(
      null,
      RememberResponse.fromPartial({
        memoryId: "m-img",
        decision: 1,
        tier: 1,
        processingState,
        warnings: ["caption and image disagree (0.08 < 0.15)"],
      }),
    );
  },
  rememberBatch(call, callback) {
    if (note(call)) return callback(failure(status.UNAVAILABLE, "warming up"));
    const results = call.request.items.map(() => ({ memoryId: "m", decision: 1 }));
    callback(null, RememberBatchResponse.fromPartial({ results }));
  },
  recall(call, callback) {
    if (note(call)) return callback(failure(status.UNAVAILABLE, "warming up"));
    const record = MemoryRecord.fromPartial({
      memoryId: "m-ocr",
      modality: Modality.MODALITY_IMAGE,
      text: "Error E1234: refund declined",
      groupId: "g1",
      blob: { uri: `blob:sha256:${SHA}`, mimeType: "image/png", sha256: SHA },
    });
    const score = { final: 0.8, vector: 0.7, vectorHit: true, vectorSpace: "clip" };
    const hit = { record, score, groupMemberIds: ["m-img", "m-cap"] };
    callback(null, RecallResponse.fromPartial({ hits: [hit] }));
  },
  get(call, callback) {
    if (note(call)) return callback(failure(status.UNAVAILABLE, "warming up"));
    const record = MemoryRecord.fromPartial({
      memoryId: call.request.memoryId,
      modality: Modality.MODALITY_AUDIO,
      blob: {
        uri: `blob:sha256:${SHA}`,
        mimeType: "audio/wav",
        sizeBytes: WAV.length,
        sha256: SHA,
        language: "en",
        data: call.request.includeBlobData ? Buffer.from(WAV) : undefined,
      },
      processingState: ProcessingState.PROCESSING_STATE_FAILED,
      processingNote: "no speech model for zh",
      spaceVectors: [{ space: "mine", values: [0.5, 0.25] }],
    });
    callback(null, GetResponse.fromPartial({ record }));
  },
  stats(call, callback) {
    if (note(call)) return callback(failure(status.UNAVAILABLE, "warming up"));
    const media = { pending: 3, processed: 40, failed: 2, blobs: 37 };
    callback(null, StatsResponse.fromPartial({ media }));
  },
};

const bytesOf = (b: Uint8Array | undefined) => [...(b ?? [])];

describe("the media calls against a fake MemoryService", () => {
  let server: Served;
  let client: PocketdClient;

  before(async () => {
    server = await serve({ definition: MemoryServiceService, handlers: fake });
    client = new PocketdClient({ target: server.target, timeoutMs: 2_000 });
  });
  after(() => {
    client.close();
    server.stop();
  });
  beforeEach(() => {
    Object.assign(seen, { requests: [], deadlines: [], unavailable: 0 });
  });

  test("rememberImage sends the bytes, the caption and the fields", async () => {
    const when = new Date("2026-03-01T09:30:00Z");
    const r = await client.rememberImage("support", PNG, {
      caption: "the customer's refund error",
      sessionId: "s1",
      speaker: "user",
      occurredAt: when,
      tags: ["refund"],
      groupId: "g1",
    });
    assert.deepEqual(
      [r.memoryId, r.decision, r.stored, r.processingState, r.warnings],
      ["m-img", "stored", true, "processing", ["caption and image disagree (0.08 < 0.15)"]],
    );
    const sent = seen.requests[0] as RememberRequest;
    const rec = sent.record;
    assert.ok(rec);
    assert.deepEqual(
      [rec.namespace, rec.modality, rec.kind, rec.text],
      [
        "support",
        Modality.MODALITY_IMAGE,
        MemoryKind.MEMORY_KIND_OBSERVATION,
        "the customer's refund error",
      ],
    );
    assert.deepEqual(bytesOf(rec.blob?.data), [...PNG]);
    assert.deepEqual([rec.blob?.uri, rec.blob?.language], ["", ""]);
    assert.deepEqual(
      [rec.sessionId, rec.speaker, rec.tags, rec.groupId, rec.occurredAt?.getTime()],
      ["s1", "user", ["refund"], "g1", when.getTime()],
    );
    assert.equal(sent.waitProcessed, false);
    // Without wait, the client's own deadline (2 s here).
    const [left] = seen.deadlines;
    assert.ok(left !== undefined && left <= 2_000 && left > 1_000, String(left));
  });

  test("a write that waits for its medium waits at least MEDIA_WAIT_TIMEOUT_MS", async () => {
    const r = await client.rememberImage("support", PNG, { wait: true, kind: "fact" });
    assert.equal(r.processingState, "ready");
    const sent = seen.requests[0] as RememberRequest;
    assert.deepEqual([sent.waitProcessed, sent.record?.kind], [true, MemoryKind.MEMORY_KIND_FACT]);
    await client.rememberBatch([
      { namespace: "me", text: "a text" },
      mediaInput("me", "image", PNG, { wait: true }),
    ]);
    for (const left of seen.deadlines) {
      const near = left <= MEDIA_WAIT_TIMEOUT_MS && left > MEDIA_WAIT_TIMEOUT_MS - 5_000;
      assert.ok(near, String(left));
    }
    const batch = seen.requests[1] as RememberBatchRequest;
    assert.deepEqual(
      batch.items.map((i) => [i.record?.modality, i.waitProcessed]),
      [
        [Modality.MODALITY_TEXT, false],
        [Modality.MODALITY_IMAGE, true],
      ],
    );
  });

  test("rememberAudio names its language; rememberTable takes text", async () => {
    await client.rememberAudio("me", WAV, { language: "zh", caption: "voice note from Bob" });
    await client.rememberTable("me", "sku,price\nA-1,3.20\n", { caption: "price list" });
    const [audio, table] = (seen.requests as RememberRequest[]).map((r) => r.record);
    assert.deepEqual(
      [audio?.modality, bytesOf(audio?.blob?.data), audio?.blob?.language, audio?.text],
      [Modality.MODALITY_AUDIO, [...WAV], "zh", "voice note from Bob"],
    );
    assert.deepEqual(
      [table?.modality, Buffer.from(table?.blob?.data ?? []).toString(), table?.text],
      [Modality.MODALITY_TABLE, "sku,price\nA-1,3.20\n", "price list"],
    );
  });

  test("recallByImage sends the bytes or a held blob, and reads the group", async () => {
    const res = await client.recallByImage("support", PNG, {
      queryText: "the error code",
      topK: 3,
      tags: ["refund"],
    });
    await client.recallByImage("support", { sha256: SHA });
    const [byBytes, byHash] = seen.requests as RecallRequest[];
    assert.ok(byBytes && byHash);
    assert.deepEqual(bytesOf(byBytes.queryBlob?.data), [...PNG]);
    assert.deepEqual(
      [byBytes.queryModality, byBytes.queryText, byBytes.topK, byBytes.filter?.tags],
      [Modality.MODALITY_IMAGE, "the error code", 3, ["refund"]],
    );
    assert.deepEqual(
      [byHash.queryBlob?.sha256, byHash.queryBlob?.data.length, byHash.queryModality],
      [SHA, 0, Modality.MODALITY_IMAGE],
    );
    const hit = res.hits[0];
    assert.ok(hit);
    assert.deepEqual(hit.groupMemberIds, ["m-img", "m-cap"]);
    assert.deepEqual([hit.score.vectorSpace, hit.score.vectorHit], ["clip", true]);
    assert.deepEqual(
      [hit.memory.blob?.uri, hit.memory.blob?.sha256, hit.memory.blob?.mimeType],
      [`blob:sha256:${SHA}`, SHA, "image/png"],
    );
    assert.equal(hit.memory.processingState, "ready"); // unset on the wire reads as ready
  });

  test("recall carries space vectors; an image query is retried as a read", async () => {
    await client.recall("support", "refund", { spaceVectors: { mine: [0.5, 0.25] } });
    const spaces = seen.requests[0] as RecallRequest;
    assert.deepEqual(spaces.querySpaceVectors, [{ space: "mine", values: [0.5, 0.25] }]);
    assert.deepEqual(
      [spaces.queryModality, spaces.queryBlob],
      [Modality.MODALITY_UNSPECIFIED, undefined],
    );
    Object.assign(seen, { requests: [], unavailable: 2 });
    assert.equal((await client.recallByImage("support", PNG)).hits.length, 1);
    assert.equal(seen.requests.length, 3);
  });

  test("get with the blob's bytes, and the media queue's stats", async () => {
    const bare = await client.get("me", "m-audio");
    const full = await client.get("me", "m-audio", { includeBlobData: true });
    const stats = await client.stats();
    assert.deepEqual(
      (seen.requests.slice(0, 2) as GetRequest[]).map((r) => r.includeBlobData),
      [false, true],
    );
    assert.equal(bare.blob?.data.length, 0);
    assert.deepEqual(
      [full.blob?.mimeType, full.blob?.sizeBytes, full.blob?.language, bytesOf(full.blob?.data)],
      ["audio/wav", WAV.length, "en", [...WAV]],
    );
    assert.deepEqual(
      [full.modality, full.processingState, full.processingNote, full.spaceVectors],
      ["audio", "failed", "no speech model for zh", { mine: [0.5, 0.25] }],
    );
    assert.deepEqual(stats.media, { pending: 3, processed: 40, failed: 2, blobs: 37 });
  });

  test("a media write is never retried", async () => {
    seen.unavailable = 1;
    await assert.rejects(
      client.rememberImage("n", PNG),
      (e: unknown) => e instanceof PocketdError && e.code === status.UNAVAILABLE,
    );
    assert.equal(seen.requests.length, 1);
  });

  test("bad media arguments are refused before sending", async () => {
    const calls: [() => Promise<unknown>, RegExp][] = [
      // @ts-expect-error: an image is bytes, not a path
      [() => client.rememberImage("n", "shot.png"), /not a string/],
      [() => client.rememberAudio("n", new Uint8Array()), /audio data: empty/],
      [() => client.recallByImage("n", { sha256: "" }), /bytes or a held blob's sha256/],
      [() => client.recall("n", "", { imageData: PNG, imageSha256: SHA }), /not both/],
    ];
    for (const [call, message] of calls) {
      await assert.rejects(call(), message);
    }
    assert.equal(seen.requests.length, 0);
  });
});
