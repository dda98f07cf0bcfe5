/**
 * Asynchronous invocations: `POST /fn/{name}` with `Prefer: respond-async` is accepted as a job,
 * answered 202 at once, run through the same function path as a synchronous call, and kept with its
 * result for `resultTtlS`; an optional webhook hears the outcome. The port has an in-process adapter
 * (embedded default, ./memory.ts) and a BullMQ one (REDIS_URL, ./bull.ts) that survives a node's
 * death: another node's worker takes the stalled job over.
 *
 * A job's record (status, result, error) is Hearth's own, kept apart from the queue's: the queue
 * only delivers work, and its retention never decides what a caller can still read. An
 * idempotency key names the job (the same key gives the same job id), so a repeated submission
 * returns the first job, running or finished, for as long as its record is kept.
 */
import { createHash, randomUUID } from 'node:crypto';

import type { JobInfo, Reply } from '../../sdk/api/index.js';
import { HearthError, IdempotencyConflictError, InvalidInputError } from '../../sdk/errors.js';
import type { ErrorContext } from '../errors/index.js';
import { callerError } from '../errors/index.js';
import type { WebhookPolicy } from './webhook-policy.js';
import { checkWebhookUrl } from './webhook-policy.js';

export type JobStatus = 'queued' | 'running' | 'succeeded' | 'failed';

export interface JobRequest {
  function: string;
  version?: number;
  body: Uint8Array;
  contentType: string;
  /** Called with the outcome (Standard Webhooks signature). */
  webhook?: string;
  idempotencyKey?: string;
  /** Who submitted it (callerId of the API key; '' with no keys): the job, its key and its record are theirs. */
  owner?: string;
  /** The submitting request's id (x-request-id): in the record, the webhook and the logs. */
  requestId?: string;
}

export interface JobRecord {
  id: string;
  function: string;
  version?: number;
  status: JobStatus;
  /** Date.now() milliseconds. */
  createdAt: number;
  startedAt?: number;
  finishedAt?: number;
  /** Times the job was started: retries after transient failures, and takeovers after a node died. */
  attempts: number;
  /** The node that ran (or runs) it last. */
  node?: string;
  webhook?: string;
  /** The submitter (callerId); only they (or an admin key) may read the job. */
  owner?: string;
  /** The id of the request that submitted it. */
  requestId?: string;
  /** sha256 of the request (content type and body): a reused idempotency key must bring the same request. */
  requestHash?: string;
  result?: { contentType: string; body: Uint8Array; version: number };
  error?: { error: string; code: string };
  /** The webhook's delivery tries, oldest first (the last MAX_DELIVERIES). */
  deliveries?: WebhookDelivery[];
}

/** One try at a job's webhook: the receiver's status, or why it failed. */
export interface WebhookDelivery {
  /** Date.now() milliseconds. */
  at: number;
  ok: boolean;
  /** The receiver's HTTP status, when it answered. */
  status?: number;
  error?: string;
}

/** Delivery tries a record keeps. */
export const MAX_DELIVERIES = 10;

/** A record with one more delivery try (the oldest dropped past MAX_DELIVERIES). */
export function withDelivery(record: JobRecord, delivery: WebhookDelivery): JobRecord {
  return { ...record, deliveries: [...(record.deliveries ?? []), delivery].slice(-MAX_DELIVERIES) };
}

/** Which jobs a listing returns: newest first, `before` a cursor from the previous page. */
export interface JobQuery {
  /** Only this submitter's (callerId); every submitter's when absent (an admin key). */
  owner?: string;
  status?: JobStatus;
  function?: string;
  limit: number;
  before?: JobCursor;
}

/** A position in the newest-first order: a job's creation time, then its id (descending). */
export interface JobCursor {
  at: number;
  id: string;
}

export interface JobPage {
  records: JobRecord[];
  /** Where the next page starts, when there may be more. */
  next?: JobCursor;
}

/** Whether `r` comes after the cursor in newest-first order (and so belongs on the next page). */
export function afterCursor(r: { createdAt: number; id: string }, cursor: JobCursor | undefined): boolean {
  if (!cursor) return true;
  return r.createdAt < cursor.at || (r.createdAt === cursor.at && r.id < cursor.id);
}

/** Whether a record answers a query (owner, status, function; the cursor is the adapter's). */
export function matches(r: JobRecord, q: JobQuery): boolean {
  return (
    (q.owner === undefined || (r.owner ?? '') === q.owner) &&
    (q.status === undefined || r.status === q.status) &&
    (q.function === undefined || r.function === q.function)
  );
}

export const newestFirst = (a: JobRecord, b: JobRecord): number =>
  b.createdAt - a.createdAt || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);

const STATUSES: readonly JobStatus[] = ['queued', 'running', 'succeeded', 'failed'];

/** A listing's query string (`status`, `function`, `limit` 1–200, default 50, `before`) → a query. */
export function jobQuery(q: Record<string, string | undefined>, owner: string | undefined): JobQuery {
  const status = q.status as JobStatus | undefined;
  if (status !== undefined && !STATUSES.includes(status))
    throw new InvalidInputError(`status must be one of ${STATUSES.join(', ')}`);
  const limit = q.limit === undefined ? 50 : Number(q.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 200)
    throw new InvalidInputError('limit must be an integer from 1 to 200');
  return {
    ...(owner === undefined ? {} : { owner }),
    ...(status ? { status } : {}),
    ...(q.function ? { function: q.function } : {}),
    limit,
    ...(q.before ? { before: decodeCursor(q.before) } : {}),
  };
}

export const encodeCursor = (c: JobCursor): string => `${c.at}.${c.id}`;

export function decodeCursor(text: string): JobCursor {
  const m = /^(\d{1,16})\.([\w-]{1,64})$/.exec(text);
  if (!m) throw new InvalidInputError('before must be the "next" value of a previous page');
  return { at: Number(m[1]), id: m[2]! };
}

export interface JobQueue {
  readonly kind: 'fs' | 'bullmq';
  /** Accepts a job, or returns the one its idempotency key already names. */
  submit(request: JobRequest): Promise<{ record: JobRecord; existing: boolean }>;
  get(id: string): Promise<JobRecord | undefined>;
  /** Jobs whose records are still kept, newest first (their results may be left out). */
  list(query: JobQuery): Promise<JobPage>;
  /** Starts consuming a function's jobs on this node (cluster mode; in process, every job runs here). */
  serve(fn: string): void;
  /** A function's jobs waiting to be taken, cluster-wide, as last counted (for the autoscaler). */
  waiting(fn: string): number;
  /** Stops taking jobs; running ones finish (or, on BullMQ, go back to the queue). */
  close(): Promise<void>;
}

/** What runs a job: the function service's synchronous path. */
export type Invoker = (
  name: string,
  version: number | undefined,
  request: { body: Uint8Array; contentType: string },
) => Promise<{ body: Uint8Array; contentType: string; version: number }>;

export interface JobOptions {
  /** Tries per job for transient failures (default 3). */
  attempts: number;
  /** First retry delay; doubles each time (default 1000 ms). */
  backoffMs: number;
  /** How long a finished job's record (and an idempotency key) is kept (default one day). */
  resultTtlS: number;
  /** Where webhooks may go (./webhook-policy.ts). */
  webhooks: WebhookPolicy;
}

/** A node's job settings (HEARTH_JOB_*, HEARTH_WEBHOOK_ALLOW_HOSTS). */
export interface JobSettings extends JobOptions {
  /** A job whose node stops renewing its lock for this long is taken over (BullMQ; default 30 s). */
  lockMs: number;
  /** Jobs of one function a node runs at once (they batch in its pool). */
  concurrency: number;
  /** The longest one try of a job may run; past it the try fails (DEADLINE_EXCEEDED). */
  timeoutMs: number;
}

export const DEFAULT_JOB_OPTIONS: JobOptions = {
  attempts: 3,
  backoffMs: 1000,
  resultTtlS: 86_400,
  webhooks: { allowHosts: [] },
};

/**
 * Failures worth another try: the node or pool was busy, loading, draining or gone. Bad input, an
 * unknown function, a hook that throws and a model whose own code raises (INFERENCE_FAILED) fail at
 * once: trying again gives the same answer.
 */
const TRANSIENT = new Set([
  'UNAVAILABLE',
  'DEADLINE_EXCEEDED',
  'QUEUE_FULL',
  'MODEL_LOAD_FAILED',
  'DEVICE_UNAVAILABLE',
  'DISPOSED',
  'INTERNAL',
  'CANCELLED',
]);

export function isTransient(error: unknown): boolean {
  return !(error instanceof HearthError) || TRANSIENT.has(error.code);
}

/** A failed job's error as its reader and webhook see it: the caller's view (../errors/caller-error.ts). */
export function errorBody(error: unknown, context: ErrorContext = {}): { error: string; code: string } {
  const { code, message } = callerError(error, context);
  return { error: message, code };
}

/** Exponential backoff: backoffMs, 2×, 4×… before the 2nd, 3rd, 4th try. */
export function retryDelayMs(options: JobOptions, attemptsMade: number): number {
  return options.backoffMs * 2 ** Math.max(0, attemptsMade - 1);
}

/** The job id: random, or derived from the submitter, the function and the idempotency key. */
export function jobId(request: JobRequest): string {
  if (request.idempotencyKey === undefined) return randomUUID();
  if (request.idempotencyKey.length === 0 || request.idempotencyKey.length > 256)
    throw new InvalidInputError('Idempotency-Key must be 1 to 256 characters');
  return `idem-${createHash('sha256')
    .update(`${request.owner ?? ''}\0${request.function}\0${request.version ?? ''}\0${request.idempotencyKey}`)
    .digest('hex')
    .slice(0, 32)}`;
}

export function requestHash(contentType: string, body: Uint8Array): string {
  return createHash('sha256').update(contentType).update('\0').update(body).digest('hex');
}

/** The job an idempotency key already names, if the request is the same one; else 422. */
export function sameRequest(existing: JobRecord, request: JobRequest): JobRecord {
  if (existing.requestHash !== undefined && existing.requestHash !== requestHash(request.contentType, request.body)) {
    throw new IdempotencyConflictError(
      'this Idempotency-Key was used for a different request; use a new key for a new request',
    );
  }
  return existing;
}

export function newRecord(id: string, request: JobRequest): JobRecord {
  return {
    id,
    function: request.function,
    ...(request.version === undefined ? {} : { version: request.version }),
    status: 'queued',
    createdAt: Date.now(),
    attempts: 0,
    ...(request.webhook ? { webhook: request.webhook } : {}),
    ...(request.owner ? { owner: request.owner } : {}),
    ...(request.requestId ? { requestId: request.requestId } : {}),
    ...(request.idempotencyKey !== undefined ? { requestHash: requestHash(request.contentType, request.body) } : {}),
  };
}

/** Records as JSON (bodies as base64), for Redis and for job payloads. */
export function encodeRecord(r: JobRecord): string {
  return JSON.stringify({
    ...r,
    ...(r.result ? { result: { ...r.result, body: Buffer.from(r.result.body).toString('base64') } } : {}),
  });
}

export function decodeRecord(s: string): JobRecord {
  const r = JSON.parse(s) as JobRecord & { result?: { body: string } };
  return r.result
    ? { ...r, result: { ...r.result, body: new Uint8Array(Buffer.from(r.result.body, 'base64')) } }
    : (r as JobRecord);
}

/** What every adapter refuses before it accepts a job. */
/** A job's webhook is checked against the policy, and needs a signing secret, before the job is accepted. */
export function checkSubmission(
  request: JobRequest,
  options: { webhookSecret?: string; webhooks: WebhookPolicy },
): void {
  if (request.webhook === undefined) return;
  checkWebhookUrl(request.webhook, options.webhooks);
  if (!options.webhookSecret)
    throw new InvalidInputError('webhooks need HEARTH_WEBHOOK_SECRET set on the node, to sign them');
}

/** A webhook URL as a job's reader sees it: scheme, host and path (a query may carry a token). */
export function webhookShown(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return '';
  }
}

/** A job as the API and webhooks show it: a JSON result inline, other bytes as base64. */
export function jobView(r: JobRecord, o: { result?: boolean } = {}): Reply<JobInfo> {
  const iso = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString());
  let result: Reply<JobInfo>['result'];
  if (r.result && o.result !== false) {
    const json = /^application\/([\w.+-]*\+)?json\b/.test(r.result.contentType);
    let parsed: unknown;
    if (json) {
      try {
        parsed = JSON.parse(Buffer.from(r.result.body).toString('utf8'));
      } catch {
        parsed = undefined;
      }
    }
    result = {
      contentType: r.result.contentType,
      version: r.result.version,
      ...(parsed !== undefined ? { json: parsed } : { base64: Buffer.from(r.result.body).toString('base64') }),
    };
  }
  return {
    id: r.id,
    function: r.function,
    ...(r.version === undefined ? {} : { version: r.version }),
    status: r.status,
    createdAt: iso(r.createdAt),
    startedAt: iso(r.startedAt),
    finishedAt: iso(r.finishedAt),
    attempts: r.attempts,
    ...(r.requestId ? { requestId: r.requestId } : {}),
    ...(r.node ? { node: r.node } : {}),
    ...(r.webhook ? { webhook: webhookShown(r.webhook) } : {}),
    ...(r.deliveries ? { deliveries: r.deliveries.map((d) => ({ ...d, at: new Date(d.at).toISOString() })) } : {}),
    ...(result ? { result } : {}),
    ...(r.error ? { error: r.error } : {}),
  };
}
