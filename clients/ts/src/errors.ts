/** `PocketdError`: a failed call, with its gRPC status and the server's rich error details. */

import { Metadata, status, type ServiceError } from "@grpc/grpc-js";

import {
  decodeStatus,
  NO_DETAILS,
  type ErrorDetails,
  type ErrorInfo,
  type FieldViolation,
  type PreconditionViolation,
  type QuotaViolation,
  type ResourceInfo,
} from "./status.js";

/** The trailer carrying the serialized google.rpc.Status. */
export const STATUS_DETAILS_KEY = "grpc-status-details-bin";

/**
 * A call that failed. `code` is the gRPC status code (`status.INVALID_ARGUMENT`, ...); the
 * details decoded from the `grpc-status-details-bin` trailer say which field was bad
 * (`fieldViolations`), which limit was hit (`quotaViolations`) or which precondition failed
 * (`preconditionViolations`).
 */
export class PocketdError extends Error {
  override readonly name = "PocketdError";
  /** The gRPC status code. */
  readonly code: status;
  /** The server's status message, as sent. */
  readonly details: string;
  /** The trailing metadata of the call. */
  readonly metadata: Metadata;
  /** google.rpc.BadRequest: one entry per bad field. */
  readonly fieldViolations: readonly FieldViolation[];
  /** google.rpc.QuotaFailure: the limits the call ran into. */
  readonly quotaViolations: readonly QuotaViolation[];
  /** google.rpc.PreconditionFailure: the preconditions that failed. */
  readonly preconditionViolations: readonly PreconditionViolation[];
  /** google.rpc.ErrorInfo: the reason, when the server gives one. */
  readonly errorInfo: ErrorInfo | undefined;
  /** google.rpc.ResourceInfo: what was not found. */
  readonly resourceInfo: ResourceInfo | undefined;

  constructor(
    code: status,
    details: string,
    metadata: Metadata = new Metadata(),
    rich: ErrorDetails = NO_DETAILS,
    options?: { cause?: unknown },
  ) {
    super(`${status[code] ?? code}: ${details}`, options);
    this.code = code;
    this.details = details;
    this.metadata = metadata;
    this.fieldViolations = rich.fieldViolations;
    this.quotaViolations = rich.quotaViolations;
    this.preconditionViolations = rich.preconditionViolations;
    this.errorInfo = rich.errorInfo;
    this.resourceInfo = rich.resourceInfo;
  }

  /** The status code's name, e.g. "INVALID_ARGUMENT". */
  get codeName(): string {
    return status[this.code] ?? String(this.code);
  }

  /** The violation naming `field`, if the server named it. */
  violation(field: string): FieldViolation | undefined {
    return this.fieldViolations.find((v) => v.field === field);
  }

  /** The error of a failed grpc-js call, with its rich details decoded. */
  static fromServiceError(err: ServiceError): PocketdError {
    const metadata = err.metadata ?? new Metadata();
    const [bin] = metadata.get(STATUS_DETAILS_KEY);
    let rich = NO_DETAILS;
    if (bin instanceof Uint8Array) {
      try {
        rich = decodeStatus(bin).details;
      } catch {
        // a malformed trailer: the status code and message still stand
      }
    }
    return new PocketdError(err.code, err.details, metadata, rich, { cause: err });
  }
}
