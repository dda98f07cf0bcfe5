/** The one mapping from Hearth's errors to gRPC status codes. */

import type { ServiceError } from '@grpc/grpc-js';
import { status as Status } from '@grpc/grpc-js';

import type { ErrorContext } from '../errors/index.js';
import { callerError } from '../errors/index.js';

const CODES: Record<string, Status> = {
  INVALID_INPUT: Status.INVALID_ARGUMENT,
  UNSUPPORTED: Status.UNIMPLEMENTED,
  IDEMPOTENCY_CONFLICT: Status.FAILED_PRECONDITION,
  CONFLICT: Status.FAILED_PRECONDITION,
  UNAUTHENTICATED: Status.UNAUTHENTICATED,
  PERMISSION_DENIED: Status.PERMISSION_DENIED,
  FUNCTION_NOT_FOUND: Status.NOT_FOUND,
  VERSION_NOT_FOUND: Status.NOT_FOUND,
  JOB_NOT_FOUND: Status.NOT_FOUND,
  PAYLOAD_TOO_LARGE: Status.RESOURCE_EXHAUSTED,
  QUEUE_FULL: Status.RESOURCE_EXHAUSTED,
  CANCELLED: Status.CANCELLED,
  UNAVAILABLE: Status.UNAVAILABLE,
  MODEL_LOAD_FAILED: Status.UNAVAILABLE,
  DEVICE_UNAVAILABLE: Status.UNAVAILABLE,
  DISPOSED: Status.UNAVAILABLE,
  DEADLINE_EXCEEDED: Status.DEADLINE_EXCEEDED,
  // Triton answers a load whose files cannot be laid out with INTERNAL; its examples check for it.
  MODEL_POLL_FAILED: Status.INTERNAL,
};

/** The status of an error; see ../errors/caller-error.ts for what the caller is told and what is logged. */
export function toGrpcStatus(error: unknown, context: ErrorContext = {}): Partial<ServiceError> {
  const { code, message } = callerError(error, context);
  return { code: CODES[code] ?? Status.INTERNAL, details: message };
}
