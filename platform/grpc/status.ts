/** The one mapping from Hearth's errors to gRPC status codes. */
import { status as Status } from '@grpc/grpc-js';
import type { ServiceError } from '@grpc/grpc-js';

import { HearthError } from '../../sdk/errors.js';

const CODES: Record<string, Status> = {
  INVALID_INPUT: Status.INVALID_ARGUMENT,
  UNSUPPORTED: Status.UNIMPLEMENTED,
  IDEMPOTENCY_CONFLICT: Status.FAILED_PRECONDITION,
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
};

export function toGrpcStatus(error: unknown): Partial<ServiceError> {
  if (error instanceof HearthError) return { code: CODES[error.code] ?? Status.INTERNAL, details: error.message };
  return { code: Status.INTERNAL, details: 'internal error' };
}
