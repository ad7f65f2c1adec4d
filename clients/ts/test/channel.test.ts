/** The token rule: never in the clear to a host that is not loopback, unless allowed. */

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { isLoopback, PocketdClient } from "../src/index.js";

describe("loopback targets", () => {
  test("loopback names, addresses and sockets", () => {
    for (const t of [
      "127.0.0.1:50051",
      "127.1.2.3:1",
      "localhost:50051",
      "LOCALHOST:50051",
      "[::1]:50051",
      "dns:///localhost:50051",
      "ipv4:127.0.0.1:50051",
      "ipv6:[::1]:50051",
      "unix:/run/pocketd.sock",
      "localhost",
    ]) {
      assert.ok(isLoopback(t), t);
    }
  });

  test("other hosts", () => {
    for (const t of [
      "10.0.0.5:50051",
      "pocketd.internal:50051",
      "dns:///pocketd.example:443",
      "[2001:db8::1]:50051",
      "127.0.0.1.example:50051",
      "localhost.example:50051",
      "0.0.0.0:50051",
    ]) {
      assert.ok(!isLoopback(t), t);
    }
  });
});

describe("a token over plaintext", () => {
  // Constructing a client opens no connection: these tests send nothing anywhere.
  test("is refused to a host that is not loopback", () => {
    assert.throws(
      () => new PocketdClient({ target: "10.0.0.5:50051", token: "secret" }),
      /refusing to send a bearer token over plaintext to 10\.0\.0\.5:50051/,
    );
  });

  test("is allowed to loopback, with allowInsecureToken, or over TLS", () => {
    const clients = [
      new PocketdClient({ target: "127.0.0.1:50051", token: "secret" }),
      new PocketdClient({ target: "10.0.0.5:50051", token: "secret", allowInsecureToken: true }),
      new PocketdClient({ target: "10.0.0.5:50051", token: "secret", tls: {} }),
      new PocketdClient({ target: "10.0.0.5:50051" }),
    ];
    for (const c of clients) c.close();
  });
});
