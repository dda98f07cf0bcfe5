/**
 * What a caller is told of an error, and what only the log gets — shared by both transports, each of
 * which maps the code to its own status once (../http/errors.ts, ../grpc/status.ts).
 *
 * A caller gets the code, the message's first line (a TorchScript error's headline, never its
 * source and traceback) and the request id. The rest of a message goes to the node's log with the
 * request id, for admins. An error that is not one of Hearth's (a bug) is `INTERNAL` to the caller
 * and logged once, with its stack.
 */
import { HTTPException } from 'hono/http-exception';

import { HearthError, InvalidInputError } from '../../sdk/errors.js';
import { clipBytes } from '../../sdk/text.js';
/** What an error is logged through (a pino logger, or a child of one). */
export interface ErrorLog {
  warn(o: object, msg?: string): void;
  error(o: object, msg?: string): void;
}

export interface ErrorContext {
  requestId?: string;
  log?: ErrorLog;
  /**
   * Hears every failed call of a function — its own failures (model, hook) and the calls that ran
   * out of time or found it unavailable — with the whole message, of which the caller is told only
   * the headline, and the phase it failed in where known (setup, pre, forward, post).
   */
  onDetail?: (code: string, detail: string, phase?: string, version?: number) => boolean | undefined;
}

const VERSION = Symbol('hearth.failedVersion');

/** Marks an error with the function version whose call it failed (read back by versionOf). */
export function markVersion(error: unknown, version: number): void {
  if (error instanceof HearthError && (error as { [VERSION]?: number })[VERSION] === undefined)
    Object.defineProperty(error, VERSION, { value: version, enumerable: false });
}

function versionOf(error: HearthError): number | undefined {
  return (error as { [VERSION]?: number })[VERSION];
}

/** The codes of a function's own failures (its model or hook): they come after its name resolved. */
const FUNCTION_FAILURES = new Set(['INFERENCE_FAILED', 'HOOK_FAILED', 'MODEL_LOAD_FAILED']);

/** Whether `code` is a function's own failure (its model or hook), which only a resolved name can have. */
export function isFunctionFailure(code: string): boolean {
  return FUNCTION_FAILURES.has(code);
}
/** Failed calls that may come before a name resolves: logged only for a function this node serves. */
const CALL_FAILURES = new Set(['DEADLINE_EXCEEDED', 'UNAVAILABLE', 'RESOURCE_EXHAUSTED']);
const PHASES = new Set(['setup', 'pre', 'post']);

/** Where a call failed: a hook's phase (its error's reason), the forward for the model's errors. */
function phaseOf(error: HearthError): string | undefined {
  if (error.code === 'INFERENCE_FAILED') return 'forward';
  return error.reason !== undefined && PHASES.has(error.reason) ? error.reason : undefined;
}

/** Longest message a caller is sent, and longest detail the node's log is given (bytes). */
const MAX_MESSAGE = 1000;
const MAX_DETAIL = 8192;

/**
 * What the caller is told: the code, the headline, and the version whose call failed where one was
 * chosen (a canary's failures are told apart from the serving version's).
 */
export function callerError(
  error: unknown,
  context: ErrorContext = {},
): { code: string; message: string; version?: number } {
  // hono's own refusals of a request (a body that is not JSON, for one) are the caller's mistakes.
  if (error instanceof HTTPException && error.status === 400)
    return callerError(new InvalidInputError(error.message), context);
  const { requestId, log } = context;
  if (!(error instanceof HearthError)) {
    log?.error({ err: error, requestId }, 'unexpected error');
    return { code: 'INTERNAL', message: 'internal error' };
  }
  const newline = error.message.indexOf('\n');
  const first = headline(error.message);
  // Every failed call goes to the function's log (its receiver checks the function is served here
  // for CALL_FAILURES: a caller cannot make a log for a name that does not exist), within the
  // function's log budget; what that drops, the node's log drops too (its text is the tenant's).
  const kept =
    FUNCTION_FAILURES.has(error.code) || CALL_FAILURES.has(error.code)
      ? context.onDetail?.(error.code, error.message, phaseOf(error), versionOf(error)) !== false
      : true;
  if (error.code === 'INTERNAL') log?.error({ err: error, requestId }, 'internal error');
  else if (newline !== -1 && kept)
    log?.warn({ requestId, code: error.code, detail: clipBytes(error.message, MAX_DETAIL) }, first);
  const version = versionOf(error);
  return { code: error.code, message: first, ...(version === undefined ? {} : { version }) };
}

/** A message's first line, cut to `max` characters: what a caller (or a versions table) is shown. */
export function headline(message: string, max = MAX_MESSAGE): string {
  const newline = message.indexOf('\n');
  const line = newline === -1 ? message : message.slice(0, newline);
  return line.length > max ? `${line.slice(0, max)}…` : line;
}
