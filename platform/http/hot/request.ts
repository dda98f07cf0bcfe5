/**
 * A hot route's call as its handler sees it (the path's name and version, the headers, the body
 * read whole), the reply it answers, and what the call's headers and path say: its deadline, its
 * function's name.
 */
import { InvalidInputError } from '../../../sdk/errors.js';
import type { Caller } from '../../caller/index.js';
import type { Trace } from '../../kserve/index.js';

export interface Call {
  name: string;
  version: number | undefined;
  /** The query string's parameters. */
  query: URLSearchParams;
  header: (name: string) => string | undefined;
  body: Uint8Array;
  signal: AbortSignal;
  /** Who sent it (its key: what its shared memory regions belong to; its tenant: what it may call). */
  caller: Caller;
  /** Its trace, where the trace settings sampled it (KServe infer). */
  trace?: Trace;
}

export interface Reply {
  status: number;
  headers: Record<string, string>;
  body: Uint8Array;
}

/** What a hot route answers a call with. */
export type Handler = (call: Call) => Promise<Reply>;

const MAX_TIMEOUT_MS = 2 ** 31 - 1;

/** `Hearth-Timeout-Ms: 250` → an absolute deadline. */
export function deadlineOf(header: (name: string) => string | undefined): number | undefined {
  const raw = header('hearth-timeout-ms');
  if (raw === undefined) return undefined;
  const ms = Number(raw);
  // Past 2^31 - 1 ms (24.8 days) Node's timers fire at once: such a deadline would pass at once.
  if (!Number.isFinite(ms) || ms <= 0 || ms > MAX_TIMEOUT_MS)
    throw new InvalidInputError(`Hearth-Timeout-Ms must be a number of milliseconds from 1 to ${MAX_TIMEOUT_MS}`);
  return performance.now() + ms;
}

/** A path segment as a name, or the segment itself when it does not decode (for logs). */
export function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

export function decode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new InvalidInputError(`"${segment}" is not a valid URL path segment`);
  }
}
