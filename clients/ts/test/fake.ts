/**
 * Test helpers: an in-process grpc-js server on a loopback port, handlers that fail, and
 * serialized google.rpc.Status values built with the wire writer.
 */

import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import {
  Metadata,
  Server,
  ServerCredentials,
  type ServiceDefinition,
  type StatusObject,
  type UntypedServiceImplementation,
  type status,
} from "@grpc/grpc-js";

/** A running in-process server. */
export interface Served {
  readonly target: string;
  stop(): void;
}

/** One service and the handlers it has (grpc-js answers the others UNIMPLEMENTED). */
export interface Registration {
  readonly definition: ServiceDefinition;
  readonly handlers: object;
}

/** Start a server on 127.0.0.1 with `services`. */
export async function serve(...services: Registration[]): Promise<Served> {
  const server = new Server();
  for (const s of services) {
    server.addService(s.definition, s.handlers as UntypedServiceImplementation);
  }
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync("127.0.0.1:0", ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    );
  });
  return { target: `127.0.0.1:${port}`, stop: () => server.forceShutdown() };
}

/** A handler's error: `code`, `details`, and the serialized status as its trailer. */
export function failure(code: status, details: string, rich?: Uint8Array): Partial<StatusObject> {
  const metadata = new Metadata();
  if (rich) metadata.set("grpc-status-details-bin", Buffer.from(rich));
  return { code, details, metadata };
}

/** A message whose fields 1..n are these strings ("" left out, as protobuf does). */
export function strings(...values: string[]): Uint8Array {
  const w = new BinaryWriter();
  values.forEach((v, i) => {
    if (v !== "") w.tag(i + 1, WireType.LengthDelimited).string(v);
  });
  return w.finish();
}

/** A google.protobuf.Any of `type` (a full name such as google.rpc.BadRequest). */
export function any(type: string, value: Uint8Array): Uint8Array {
  return new BinaryWriter()
    .tag(1, WireType.LengthDelimited)
    .string(`type.googleapis.com/${type}`)
    .tag(2, WireType.LengthDelimited)
    .bytes(value)
    .finish();
}

/** A detail whose field 1 repeats these violations (BadRequest, QuotaFailure, ...). */
export function violations(type: string, ...each: string[][]): Uint8Array {
  const w = new BinaryWriter();
  for (const v of each) w.tag(1, WireType.LengthDelimited).bytes(strings(...v));
  return any(type, w.finish());
}

/** A serialized google.rpc.Status. */
export function rpcStatus(code: number, message: string, ...details: Uint8Array[]): Uint8Array {
  const w = new BinaryWriter().tag(1, WireType.Varint).int32(code);
  w.tag(2, WireType.LengthDelimited).string(message);
  for (const d of details) w.tag(3, WireType.LengthDelimited).bytes(d);
  return w.finish();
}
