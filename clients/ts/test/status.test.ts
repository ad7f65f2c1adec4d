/** Decoding the rich error details of `grpc-status-details-bin`, with no server. */

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { Metadata, status, type ServiceError } from "@grpc/grpc-js";

import { decodeStatus, PocketdError } from "../src/index.js";
import { any, rpcStatus, strings, violations } from "./fake.js";

/**
 * A google.rpc.Status serialized by Python's protobuf (googleapis-common-protos), as the server
 * builds them in server/api/errors.py: INVALID_ARGUMENT with ErrorInfo, a BadRequest of two
 * fields, a QuotaFailure and a PreconditionFailure.
 */
const FROM_PYTHON = [
  "08031219746f705f6b3a2030206973206f75747369646520312d3130301a400a28747970652e676f6f676c65",
  "617069732e636f6d2f676f6f676c652e7270632e4572726f72496e666f12140a054c494d4954120b706f636b",
  "6574642e6465761a6c0a29747970652e676f6f676c65617069732e636f6d2f676f6f676c652e7270632e4261",
  "6452657175657374123f0a1b0a05746f705f6b121230206973206f75747369646520312d3130300a200a1469",
  "74656d735b315d2e7265636f72642e746578741208697320656d7074791a5d0a2b747970652e676f6f676c65",
  "617069732e636f6d2f676f6f676c652e7270632e51756f74614661696c757265122e0a2c0a0b746f6f6c3a73",
  "6561726368121d746f6f6c207365617263682069732061742069747320322063616c6c731a610a3274797065",
  "2e676f6f676c65617069732e636f6d2f676f6f676c652e7270632e507265636f6e646974696f6e4661696c75",
  "7265122b0a290a0b5441534b5f434c4f53454412077461736b5f69641a117461736b20743120697320636c6f",
  "736564",
].join("");

/** The same status, built with the test's own writer. */
const BUILT = rpcStatus(
  status.INVALID_ARGUMENT,
  "top_k: 0 is outside 1-100",
  any("google.rpc.ErrorInfo", strings("LIMIT", "pocketd.dev")),
  violations(
    "google.rpc.BadRequest",
    ["top_k", "0 is outside 1-100"],
    ["items[1].record.text", "is empty"],
  ),
  violations("google.rpc.QuotaFailure", ["tool:search", "tool search is at its 2 calls"]),
  violations("google.rpc.PreconditionFailure", ["TASK_CLOSED", "task_id", "task t1 is closed"]),
);

function serviceError(code: status, details: string, trailer?: Uint8Array): ServiceError {
  const metadata = new Metadata();
  if (trailer) metadata.set("grpc-status-details-bin", Buffer.from(trailer));
  return Object.assign(new Error(details), { code, details, metadata });
}

describe("status details", () => {
  test("the test's writer encodes as Python's protobuf does", () => {
    assert.equal(Buffer.from(BUILT).toString("hex"), FROM_PYTHON);
  });

  test("a status from the Python protos decodes whole", () => {
    const s = decodeStatus(Buffer.from(FROM_PYTHON, "hex"));
    assert.equal(s.code, status.INVALID_ARGUMENT);
    assert.equal(s.message, "top_k: 0 is outside 1-100");
    assert.deepEqual(s.details.fieldViolations, [
      { field: "top_k", description: "0 is outside 1-100", reason: "" },
      { field: "items[1].record.text", description: "is empty", reason: "" },
    ]);
    assert.deepEqual(s.details.quotaViolations, [
      { subject: "tool:search", description: "tool search is at its 2 calls" },
    ]);
    assert.deepEqual(s.details.preconditionViolations, [
      { type: "TASK_CLOSED", subject: "task_id", description: "task t1 is closed" },
    ]);
    assert.deepEqual(s.details.errorInfo, { reason: "LIMIT", domain: "pocketd.dev" });
    assert.equal(s.details.resourceInfo, undefined);
  });

  test("unknown detail types and fields are skipped", () => {
    const debug = any("google.rpc.DebugInfo", strings("frame 1", "boom"));
    const info = any("google.rpc.ResourceInfo", strings("memory", "m1", "", "memory m1 not found"));
    const s = decodeStatus(rpcStatus(status.NOT_FOUND, "memory m1 not found", debug, info));
    assert.equal(s.code, status.NOT_FOUND);
    assert.deepEqual(s.details.fieldViolations, []);
    assert.deepEqual(s.details.resourceInfo, {
      resourceType: "memory",
      resourceName: "m1",
      owner: "",
      description: "memory m1 not found",
    });
  });

  test("PocketdError carries the code, the message and the details of the trailer", () => {
    const e = PocketdError.fromServiceError(
      serviceError(status.INVALID_ARGUMENT, "top_k: 0 is outside 1-100", BUILT),
    );
    assert.ok(e instanceof Error);
    assert.equal(e.name, "PocketdError");
    assert.equal(e.code, status.INVALID_ARGUMENT);
    assert.equal(e.codeName, "INVALID_ARGUMENT");
    assert.equal(e.details, "top_k: 0 is outside 1-100");
    assert.equal(e.message, "INVALID_ARGUMENT: top_k: 0 is outside 1-100");
    assert.equal(e.violation("top_k")?.description, "0 is outside 1-100");
    assert.equal(e.quotaViolations[0]?.subject, "tool:search");
    assert.equal(e.preconditionViolations[0]?.type, "TASK_CLOSED");
  });

  test("a status without details, or with a malformed trailer, keeps its code", () => {
    const plain = PocketdError.fromServiceError(serviceError(status.UNAVAILABLE, "down"));
    assert.equal(plain.code, status.UNAVAILABLE);
    assert.deepEqual(plain.fieldViolations, []);
    const bad = PocketdError.fromServiceError(
      serviceError(status.INTERNAL, "oops", Uint8Array.of(0x0a, 0xff)),
    );
    assert.equal(bad.code, status.INTERNAL);
    assert.deepEqual(bad.fieldViolations, []);
  });
});
