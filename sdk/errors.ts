/**
 * Hearth's errors: one base class with a stable `code`, one subclass per way a call can fail.
 * Transports map these to HTTP statuses and gRPC codes in one place each; clients map error bodies
 * back to these classes.
 */

export interface HearthErrorOptions {
  cause?: unknown;
  /** A finer-grained reason inside the code, e.g. the engine's ERR_SHAPE or ERR_DTYPE. */
  reason?: string;
}

export class HearthError extends Error {
  override readonly name: string = 'HearthError';
  readonly code: string = 'INTERNAL';
  readonly reason: string | undefined;

  constructor(message: string, options: HearthErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.reason = options.reason;
  }
}

/** The request's inputs are wrong: dtype, shape, byte size, count, or a value the model rejects. */
export class InvalidInputError extends HearthError {
  override readonly name = 'InvalidInputError';
  override readonly code = 'INVALID_INPUT';
}

/** A model file could not be loaded or warmed up: not TorchScript, truncated, or it failed its warm-up. */
export class ModelLoadError extends HearthError {
  override readonly name = 'ModelLoadError';
  override readonly code = 'MODEL_LOAD_FAILED';
}

/** The requested device does not exist or cannot be used (no CUDA, bad index). */
export class DeviceUnavailableError extends HearthError {
  override readonly name = 'DeviceUnavailableError';
  override readonly code = 'DEVICE_UNAVAILABLE';
}

/** The model failed while running for a reason that is not the caller's input. */
export class InferenceError extends HearthError {
  override readonly name = 'InferenceError';
  override readonly code = 'INFERENCE_FAILED';
}

/** The model or instance was disposed before the call. */
export class DisposedError extends HearthError {
  override readonly name = 'DisposedError';
  override readonly code = 'DISPOSED';
}

/** The pool's queue is at its maxQueueSize; retry later (HTTP 429 with Retry-After). */
export class QueueFullError extends HearthError {
  override readonly name = 'QueueFullError';
  override readonly code = 'QUEUE_FULL';
}

/** The request's deadline passed before it could run (HTTP 504). */
export class DeadlineExceededError extends HearthError {
  override readonly name = 'DeadlineExceededError';
  override readonly code = 'DEADLINE_EXCEEDED';
}

/** The caller cancelled the request (its AbortSignal fired). */
export class CancelledError extends HearthError {
  override readonly name = 'CancelledError';
  override readonly code = 'CANCELLED';
}

/** The pool is not serving: draining, stopped, or failed to load (HTTP 503). */
export class UnavailableError extends HearthError {
  override readonly name = 'UnavailableError';
  override readonly code = 'UNAVAILABLE';
}

/** A function's hook failed: it threw, returned the wrong tensors, ran past its deadline or out of memory. */
export class HookError extends HearthError {
  override readonly name = 'HookError';
  override readonly code = 'HOOK_FAILED';
}

/** No function has that name (HTTP 404). */
export class FunctionNotFoundError extends HearthError {
  override readonly name = 'FunctionNotFoundError';
  override readonly code = 'FUNCTION_NOT_FOUND';
}

/** The function has no such version (HTTP 404). */
export class VersionNotFoundError extends HearthError {
  override readonly name = 'VersionNotFoundError';
  override readonly code = 'VERSION_NOT_FOUND';
}

/** No job has that id, or its record has expired (HTTP 404). */
export class JobNotFoundError extends HearthError {
  override readonly name = 'JobNotFoundError';
  override readonly code = 'JOB_NOT_FOUND';
}

/** No API key, or an unknown one (HTTP 401). */
export class UnauthenticatedError extends HearthError {
  override readonly name = 'UnauthenticatedError';
  override readonly code = 'UNAUTHENTICATED';
}

/** The API key's scope does not allow this call (HTTP 403). */
export class PermissionDeniedError extends HearthError {
  override readonly name = 'PermissionDeniedError';
  override readonly code = 'PERMISSION_DENIED';
}

/** The request body is over the limit (HTTP 413). */
export class PayloadTooLargeError extends HearthError {
  override readonly name = 'PayloadTooLargeError';
  override readonly code = 'PAYLOAD_TOO_LARGE';
}

/** An idempotency key reused with a different request (HTTP 422): the key names one request only. */
export class IdempotencyConflictError extends HearthError {
  override readonly name = 'IdempotencyConflictError';
  override readonly code = 'IDEMPOTENCY_CONFLICT';
}

/**
 * The call conflicts with the function's state (HTTP 409): traffic to a version that is not ready,
 * a rollback with nothing to roll back to. The message says what to do instead.
 */
export class ConflictError extends HearthError {
  override readonly name = 'ConflictError';
  override readonly code = 'CONFLICT';
}

/**
 * A repository load whose `file:` parameters could not be laid out as a model's files (a name that
 * is not `file:<version>/<name>`, a path component past 255 bytes): Triton's "failed to poll from
 * model repository", which it answers as INTERNAL (HTTP 500, gRPC INTERNAL) and its clients check.
 */
export class ModelPollError extends HearthError {
  override readonly name = 'ModelPollError';
  override readonly code = 'MODEL_POLL_FAILED';
}

/** A feature this node does not have (CUDA shared memory without a GPU); Triton's UNSUPPORTED (HTTP 400, gRPC UNIMPLEMENTED). */
export class UnsupportedError extends HearthError {
  override readonly name = 'UnsupportedError';
  override readonly code = 'UNSUPPORTED';
}

const BY_CODE: Record<string, new (message: string, options?: HearthErrorOptions) => HearthError> = {
  INVALID_INPUT: InvalidInputError,
  MODEL_LOAD_FAILED: ModelLoadError,
  DEVICE_UNAVAILABLE: DeviceUnavailableError,
  INFERENCE_FAILED: InferenceError,
  DISPOSED: DisposedError,
  QUEUE_FULL: QueueFullError,
  DEADLINE_EXCEEDED: DeadlineExceededError,
  CANCELLED: CancelledError,
  UNAVAILABLE: UnavailableError,
  HOOK_FAILED: HookError,
  FUNCTION_NOT_FOUND: FunctionNotFoundError,
  VERSION_NOT_FOUND: VersionNotFoundError,
  JOB_NOT_FOUND: JobNotFoundError,
  UNAUTHENTICATED: UnauthenticatedError,
  PERMISSION_DENIED: PermissionDeniedError,
  PAYLOAD_TOO_LARGE: PayloadTooLargeError,
  UNSUPPORTED: UnsupportedError,
  MODEL_POLL_FAILED: ModelPollError,
  IDEMPOTENCY_CONFLICT: IdempotencyConflictError,
  CONFLICT: ConflictError,
};

/** Any thrown value as a HearthError: itself, or an InferenceError carrying its message. */
export function toHearthError(error: unknown): HearthError {
  return error instanceof HearthError
    ? error
    : new InferenceError((error as Error)?.message ?? String(error), { cause: error });
}

/** An error body (`{"error", "code"}`, as every transport sends it) back as its class. */
export function errorFromBody(body: { error: string; code: string }): HearthError {
  const Class = BY_CODE[body.code] ?? HearthError;
  return new Class(body.error);
}
