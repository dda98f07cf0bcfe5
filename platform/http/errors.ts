/**
 * The one mapping from Hearth's errors to HTTP: status, `{"error", "code"}` body, Retry-After.
 */
import type { ErrorContext } from '../errors/index.js';
import { callerError } from '../errors/index.js';

const STATUS: Record<string, number> = {
  INVALID_INPUT: 400,
  UNSUPPORTED: 400,
  UNAUTHENTICATED: 401,
  PERMISSION_DENIED: 403,
  FUNCTION_NOT_FOUND: 404,
  VERSION_NOT_FOUND: 404,
  JOB_NOT_FOUND: 404,
  CONFLICT: 409,
  PAYLOAD_TOO_LARGE: 413,
  IDEMPOTENCY_CONFLICT: 422,
  QUEUE_FULL: 429,
  CANCELLED: 499,
  HOOK_FAILED: 500,
  INFERENCE_FAILED: 500,
  INTERNAL: 500,
  MODEL_POLL_FAILED: 500,
  UNAVAILABLE: 503,
  MODEL_LOAD_FAILED: 503,
  DEVICE_UNAVAILABLE: 503,
  DISPOSED: 503,
  DEADLINE_EXCEEDED: 504,
};

export interface HttpError {
  status: number;
  body: { error: string; code: string; request_id?: string };
  headers: Record<string, string>;
}

/** The HTTP status of an error code (a job's recorded error, too). */
export function httpStatus(code: string): number {
  return STATUS[code] ?? 500;
}

/** The response to an error; see ../errors/caller-error.ts for what the caller is told and what is logged. */
export function toHttpResponse(error: unknown, context: ErrorContext = {}): HttpError {
  const { code, message, version } = callerError(error, context);
  const status = httpStatus(code);
  const headers: Record<string, string> = status === 429 || status === 503 ? { 'Retry-After': '1' } : {};
  // Which version failed the call (as a success names the version that answered it).
  if (version !== undefined) headers['hearth-version'] = String(version);
  const body = { error: message, code, ...(context.requestId ? { request_id: context.requestId } : {}) };
  return { status, body, headers };
}
