/**
 * Decoding of the `grpc-status-details-bin` trailer: a `google.rpc.Status` whose `details` are
 * `google.protobuf.Any`s packing the rich error details pocketd sends (server/api/errors.py):
 * BadRequest, QuotaFailure, PreconditionFailure, ErrorInfo and ResourceInfo.
 *
 * A small reader over the wire format instead of generated google.rpc stubs: every field read
 * here is a string, a nested message or the status code, and unknown fields and detail types
 * are skipped, so newer details never break an older client.
 */

import { BinaryReader, WireType } from "@bufbuild/protobuf/wire";

/** One bad field of a request (google.rpc.BadRequest.FieldViolation). */
export interface FieldViolation {
  /** The field's path in the request, e.g. `top_k` or `items[3].record.text`. */
  readonly field: string;
  readonly description: string;
  readonly reason: string;
}

/** One limit a call ran into (google.rpc.QuotaFailure.Violation). */
export interface QuotaViolation {
  /** The limit: a ledger limit ("total", "round", "tool:search") or a server setting. */
  readonly subject: string;
  readonly description: string;
}

/** One unmet precondition (google.rpc.PreconditionFailure.Violation). */
export interface PreconditionViolation {
  readonly type: string;
  /** The field the precondition is about. */
  readonly subject: string;
  readonly description: string;
}

/** Why the call failed, as a machine-readable reason (google.rpc.ErrorInfo). */
export interface ErrorInfo {
  readonly reason: string;
  readonly domain: string;
}

/** The resource a NOT_FOUND is about (google.rpc.ResourceInfo). */
export interface ResourceInfo {
  readonly resourceType: string;
  readonly resourceName: string;
  readonly owner: string;
  readonly description: string;
}

/** The rich details of a status, by kind; empty lists when the status carries none. */
export interface ErrorDetails {
  readonly fieldViolations: readonly FieldViolation[];
  readonly quotaViolations: readonly QuotaViolation[];
  readonly preconditionViolations: readonly PreconditionViolation[];
  readonly errorInfo?: ErrorInfo;
  readonly resourceInfo?: ResourceInfo;
}

/** A decoded google.rpc.Status. */
export interface RpcStatus {
  readonly code: number;
  readonly message: string;
  readonly details: ErrorDetails;
}

type Fields = Map<number, (Uint8Array | number)[]>;

const utf8 = new TextDecoder();

/** Every length-delimited (as bytes) and varint (as int32) field of a message, by number. */
function scan(bytes: Uint8Array): Fields {
  const reader = new BinaryReader(bytes);
  const out: Fields = new Map();
  while (reader.pos < reader.len) {
    const [no, wireType] = reader.tag();
    let value: Uint8Array | number;
    if (wireType === WireType.LengthDelimited) {
      value = reader.bytes();
    } else if (wireType === WireType.Varint) {
      value = reader.int32();
    } else {
      reader.skip(wireType, no);
      continue;
    }
    const seen = out.get(no);
    if (seen) seen.push(value);
    else out.set(no, [value]);
  }
  return out;
}

/** The messages (or strings, as bytes) of a repeated length-delimited field. */
function messages(fields: Fields, no: number): Uint8Array[] {
  return (fields.get(no) ?? []).filter((v): v is Uint8Array => v instanceof Uint8Array);
}

function text(fields: Fields, no: number): string {
  const [first] = messages(fields, no);
  return first ? utf8.decode(first) : "";
}

/** A message whose fields 1..n are all strings, as a record named by `names` in field order. */
function strings<K extends string>(bytes: Uint8Array, names: readonly K[]): Record<K, string> {
  const fields = scan(bytes);
  const out = {} as Record<K, string>;
  names.forEach((name, i) => {
    out[name] = text(fields, i + 1);
  });
  return out;
}

/** The violations (field 1 of the detail) of a BadRequest, QuotaFailure or PreconditionFailure. */
function violations<K extends string>(
  detail: Uint8Array,
  names: readonly K[],
): Record<K, string>[] {
  return messages(scan(detail), 1).map((v) => strings(v, names));
}

const TYPE_PREFIX = "type.googleapis.com/";

/** The rich details packed in a list of `google.protobuf.Any` (as bytes). */
export function decodeDetails(anys: readonly Uint8Array[]): ErrorDetails {
  const fieldViolations: FieldViolation[] = [];
  const quotaViolations: QuotaViolation[] = [];
  const preconditionViolations: PreconditionViolation[] = [];
  let errorInfo: ErrorInfo | undefined;
  let resourceInfo: ResourceInfo | undefined;
  for (const any of anys) {
    const fields = scan(any);
    const type = text(fields, 1).slice(TYPE_PREFIX.length);
    const value = messages(fields, 2)[0] ?? new Uint8Array();
    switch (type) {
      case "google.rpc.BadRequest":
        fieldViolations.push(...violations(value, ["field", "description", "reason"] as const));
        break;
      case "google.rpc.QuotaFailure":
        quotaViolations.push(...violations(value, ["subject", "description"] as const));
        break;
      case "google.rpc.PreconditionFailure":
        preconditionViolations.push(
          ...violations(value, ["type", "subject", "description"] as const),
        );
        break;
      case "google.rpc.ErrorInfo":
        errorInfo = strings(value, ["reason", "domain"] as const);
        break;
      case "google.rpc.ResourceInfo":
        resourceInfo = strings(value, [
          "resourceType",
          "resourceName",
          "owner",
          "description",
        ] as const);
        break;
      default: // a detail this client does not know: skipped
    }
  }
  return { fieldViolations, quotaViolations, preconditionViolations, errorInfo, resourceInfo };
}

/** A serialized google.rpc.Status (the value of the `grpc-status-details-bin` trailer). */
export function decodeStatus(bytes: Uint8Array): RpcStatus {
  const fields = scan(bytes);
  const code = fields.get(1)?.find((v): v is number => typeof v === "number") ?? 0;
  return { code, message: text(fields, 2), details: decodeDetails(messages(fields, 3)) };
}

/** Details of a status without any. */
export const NO_DETAILS: ErrorDetails = Object.freeze({
  fieldViolations: [],
  quotaViolations: [],
  preconditionViolations: [],
});
