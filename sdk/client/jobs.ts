/**
 * Async jobs: the list, one job, its result, waiting for one, and a function mapped over many
 * inputs as jobs with a bounded number in flight.
 */
import type { JobAccepted, JobInfo, JobList } from '../api/index.js';
import { JobInfoSchema, JobListSchema } from '../api/index.js';
import type { HearthError } from '../errors.js';
import type { InvokeOptions } from './invoke.js';
import type { Transport } from './transport.js';

/** Which jobs: by state, by function, at most `limit`, older than the job `before` (a page's `next`). */
export interface JobsQuery {
  status?: JobInfo['status'];
  function?: string;
  limit?: number;
  before?: string;
}

export interface WaitOptions {
  timeoutMs?: number;
  intervalMs?: number;
}

export interface MapOptions {
  /** Jobs in flight at once (default 16). */
  concurrency?: number;
  /**
   * Each input's job is submitted with the idempotency key `<keyPrefix>:<index>`, so running the
   * same map again (after a crash, a Ctrl-C) finds the jobs already done instead of redoing them.
   */
  keyPrefix?: string;
  version?: number;
  /** Longest one input's job may take, queue included (default 10 minutes). */
  timeoutMs?: number;
  /** Hears each input as it settles. */
  onSettled?: (outcome: MapOutcome) => void;
}

/** One input's outcome: its output (the function's JSON, or the body as base64), or its error. */
export type MapOutcome =
  | { index: number; ok: true; job: string; output: unknown }
  | { index: number; ok: false; job?: string; error: { code: string; message: string } };

/**
 * The calls `map` and `waitForJob` make, through the client itself (the Hearth instance), so a
 * client whose methods are replaced (a test's, a wrapper's) is the one they use.
 */
export interface JobCalls {
  job(id: string): Promise<JobInfo>;
  invokeAsync(name: string, data: unknown, options: InvokeOptions): Promise<JobAccepted>;
  waitForJob(id: string, options: WaitOptions): Promise<JobInfo>;
}

export function jobs(node: Transport, query: JobsQuery): Promise<JobList> {
  const q = new URLSearchParams(
    Object.entries(query).flatMap(([k, v]): [string, string][] => (v === undefined ? [] : [[k, String(v)]])),
  ).toString();
  return node.json(JobListSchema, `/api/v1/jobs${q ? `?${q}` : ''}`);
}

export function job(node: Transport, id: string): Promise<JobInfo> {
  return node.json(JobInfoSchema, `/api/v1/jobs/${encodeURIComponent(id)}`);
}

export async function jobResult(node: Transport, id: string): Promise<{ contentType: string; body: Uint8Array }> {
  const r = await node.request(`/api/v1/jobs/${encodeURIComponent(id)}/result`);
  return { contentType: r.headers.get('content-type') ?? '', body: new Uint8Array(await r.arrayBuffer()) };
}

export async function waitForJob(client: Pick<JobCalls, 'job'>, id: string, options: WaitOptions): Promise<JobInfo> {
  const end = Date.now() + (options.timeoutMs ?? 300_000);
  let interval = options.intervalMs ?? 100;
  for (;;) {
    const job = await client.job(id);
    if (job.status === 'succeeded' || job.status === 'failed') return job;
    if (Date.now() > end) return job;
    await new Promise((r) => setTimeout(r, interval));
    interval = Math.min(interval * 1.5, 2000);
  }
}

/** One input as a job, submitted and waited for: its outcome, never a throw. */
async function mapOne(
  client: JobCalls,
  name: string,
  input: unknown,
  index: number,
  options: MapOptions,
): Promise<MapOutcome> {
  let job: string | undefined;
  try {
    job = (
      await client.invokeAsync(name, input, {
        version: options.version,
        ...(options.keyPrefix ? { idempotencyKey: `${options.keyPrefix}:${index}` } : {}),
      })
    ).id;
    const done = await client.waitForJob(job, { timeoutMs: options.timeoutMs ?? 600_000 });
    if (done.status === 'succeeded') {
      const result = done.result;
      const output = result?.json !== undefined ? result.json : (result?.base64 ?? null);
      return { index, ok: true, job, output };
    }
    if (done.status === 'failed')
      return {
        index,
        ok: false,
        job,
        error: { code: done.error?.code ?? 'INTERNAL', message: done.error?.error ?? 'the job failed' },
      };
    return {
      index,
      ok: false,
      job,
      error: { code: 'DEADLINE_EXCEEDED', message: `job ${job} is still ${done.status}` },
    };
  } catch (error) {
    const e = error as HearthError;
    return { index, ok: false, ...(job ? { job } : {}), error: { code: e.code ?? 'INTERNAL', message: e.message } };
  }
}

export async function map(
  client: JobCalls,
  name: string,
  inputs: readonly unknown[],
  options: MapOptions,
): Promise<MapOutcome[]> {
  const outcomes = new Array<MapOutcome>(inputs.length);
  let next = 0;
  const worker = async () => {
    while (next < inputs.length) {
      const index = next++;
      const outcome = await mapOne(client, name, inputs[index], index, options);
      outcomes[index] = outcome;
      options.onSettled?.(outcome);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(options.concurrency ?? 16, inputs.length)) }, worker));
  return outcomes;
}
