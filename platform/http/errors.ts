/**
 * The one mapping from Hearth's errors to HTTP: status, `{"error", "code"}` body, Retry-After.
 */
import { HTTPException } from 'hono/http-exception';

import { HearthError, InvalidInputError } from '../../sdk/errors.js';

const STATUS: Record<string, number> = {
  INVALID_INPUT: 400,
  UNSUPPORTED: 400,
  UNAUTHENTICATED: 401,
  PERMISSION_DENIED: 403,
  FUNCTION_NOT_FOUND: 404,
  VERSION_NOT_FOUND: 404,
  JOB_NOT_FOUND: 404,
  PAYLOAD_TOO_LARGE: 413,
  IDEMPOTENCY_CONFLICT: 422,
  QUEUE_FULL: 429,
  CANCELLED: 499,
  HOOK_FAILED: 500,
  INFERENCE_FAILED: 500,
  INTERNAL: 500,
  UNAVAILABLE: 503,
  MODEL_LOAD_FAILED: 503,
  DEVICE_UNAVAILABLE: 503,
  DISPOSED: 503,
  DEADLINE_EXCEEDED: 504,
};

export interface HttpError {
  status: number;
  body: { error: string; code: string };
  headers: Record<string, string>;
}

/** The HTTP status of an error code (a job's recorded error, too). */
export function httpStatus(code: string): number {
  return STATUS[code] ?? 500;
}

export function toHttpResponse(error: unknown): HttpError {
  if (error instanceof HearthError) {
    const status = httpStatus(error.code);
    const headers: Record<string, string> = status === 429 || status === 503 ? { 'Retry-After': '1' } : {};
    return { status, body: { error: error.message, code: error.code }, headers };
  }
  // hono's own refusals of a request (a body that is not JSON, for one) are the caller's mistakes.
  if (error instanceof HTTPException && error.status === 400)
    return toHttpResponse(new InvalidInputError(error.message));
  return { status: 500, body: { error: 'internal error', code: 'INTERNAL' }, headers: {} };
}
