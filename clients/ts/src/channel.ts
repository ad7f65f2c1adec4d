/**
 * The channel to pocketd: plaintext or TLS (with an optional client certificate for mTLS),
 * carrying the bearer token if there is one (as clients/python/pocketd/requests.py
 * `open_channel`).
 *
 * Over TLS the token travels as call credentials. A plaintext channel cannot carry call
 * credentials, so there the token is added to each call's metadata, and only to a loopback
 * target (127.0.0.0/8, ::1, localhost, a unix socket) unless `allowInsecureToken` says
 * otherwise: anything else would send the token in the clear over a network.
 */

import { Client, credentials, Metadata, type ChannelCredentials } from "@grpc/grpc-js";

/** TLS for the channel, as PEM. */
export interface TlsOptions {
  /** The CA that signed the server's certificate; unset: the system's roots. */
  readonly rootCertificates?: Buffer | string;
  /** For mTLS: the client's private key, with `certificateChain`. */
  readonly privateKey?: Buffer | string;
  /** For mTLS: the client's certificate chain, with `privateKey`. */
  readonly certificateChain?: Buffer | string;
}

/** How to reach pocketd. */
export interface ChannelOptions {
  /** `host:port` (or any grpc-js target: `dns:///host:port`, `unix:/path`). */
  readonly target: string;
  /** The bearer token (`auth.tokens` on the server), sent as `authorization: Bearer <token>`. */
  readonly token?: string;
  /** Connect over TLS; unset: plaintext. */
  readonly tls?: TlsOptions;
  /** Send the token over plaintext to a host that is not loopback (never needed with `tls`). */
  readonly allowInsecureToken?: boolean;
  /** The largest message sent or received. */
  readonly maxMessageBytes: number;
}

/** A channel and the metadata every call on it carries. */
export interface Connection {
  readonly client: Client;
  /** A fresh copy of the metadata each call starts from (the token, on plaintext). */
  metadata(): Metadata;
}

/** The host part of a grpc-js target, lower-cased ("" for a unix socket). */
export function targetHost(target: string): string {
  let rest = target.trim();
  if (/^unix(-abstract)?:/.test(rest)) return "";
  rest = rest.replace(/^(dns|ipv4|ipv6):(\/\/[^/]*\/)?/, "");
  if (rest.startsWith("[")) {
    const end = rest.indexOf("]");
    return (end < 0 ? rest.slice(1) : rest.slice(1, end)).toLowerCase();
  }
  const colon = rest.lastIndexOf(":");
  // One colon: host:port. More than one, unbracketed: a bare IPv6 address.
  const host = colon >= 0 && rest.indexOf(":") === colon ? rest.slice(0, colon) : rest;
  return host.toLowerCase();
}

/** Whether a target stays on this machine: a unix socket, localhost, 127.0.0.0/8 or ::1. */
export function isLoopback(target: string): boolean {
  const host = targetHost(target);
  return (
    host === "" ||
    host === "localhost" ||
    host.endsWith(".localhost") ||
    host === "::1" ||
    /^127(\.\d{1,3}){3}$/.test(host)
  );
}

function pem(value: Buffer | string | undefined): Buffer | null {
  if (value === undefined) return null;
  return typeof value === "string" ? Buffer.from(value) : value;
}

function bearer(token: string): Metadata {
  const md = new Metadata();
  md.set("authorization", `Bearer ${token}`);
  return md;
}

/**
 * The channel credentials for `options`; throws when a token would go in the clear to a host
 * that is not loopback without `allowInsecureToken`.
 */
export function channelCredentials(options: ChannelOptions): ChannelCredentials {
  const { tls, token, target } = options;
  if (tls === undefined) {
    if (token && !isLoopback(target) && !options.allowInsecureToken) {
      throw new Error(
        `refusing to send a bearer token over plaintext to ${target}: ` +
          "give `tls`, or `allowInsecureToken: true` on a network you trust",
      );
    }
    return credentials.createInsecure();
  }
  const ssl = credentials.createSsl(
    pem(tls.rootCertificates),
    pem(tls.privateKey),
    pem(tls.certificateChain),
  );
  if (!token) return ssl;
  const md = bearer(token);
  const callCreds = credentials.createFromMetadataGenerator((_params, callback) =>
    callback(null, md.clone()),
  );
  return credentials.combineChannelCredentials(ssl, callCreds);
}

/** Open a (lazily connecting) channel to pocketd. */
export function openChannel(options: ChannelOptions): Connection {
  const creds = channelCredentials(options);
  const client = new Client(options.target, creds, {
    "grpc.max_send_message_length": options.maxMessageBytes,
    "grpc.max_receive_message_length": options.maxMessageBytes,
  });
  const base = options.tls === undefined && options.token ? bearer(options.token) : new Metadata();
  return { client, metadata: () => base.clone() };
}
