/**
 * Async invocations in one process (the embedded default): the same API as BullMQ's adapter,
 * with jobs and their records in memory. A job runs at once (the pool's own queue batches and
 * bounds it); transient failures are retried with exponential backoff.
 */
import { setTimeout as sleep } from 'node:timers/promises';

import { UnavailableError } from '../../../sdk/errors.js';
import type { Invoker, JobOptions, JobQueue, JobRecord, JobRequest } from '../jobs.js';
import { checkSubmission, errorBody, isTransient, jobId, newRecord, retryDelayMs, sameRequest } from '../jobs.js';
import { deliver, webhookMessage } from '../webhook.js';

export interface MemoryJobQueueOptions extends JobOptions {
  webhookSecret?: string;
  log?: { warn(o: object, msg?: string): void };
}

const WEBHOOK_TRIES = 5;

export class MemoryJobQueue implements JobQueue {
  readonly kind = 'memory' as const;
  readonly #invoke: Invoker;
  readonly #o: MemoryJobQueueOptions;
  readonly #records = new Map<string, { record: JobRecord; expiresAt: number }>();
  readonly #running = new Set<Promise<void>>();
  #closed = false;

  constructor(invoke: Invoker, options: MemoryJobQueueOptions) {
    this.#invoke = invoke;
    this.#o = options;
  }

  async submit(request: JobRequest): Promise<{ record: JobRecord; existing: boolean }> {
    if (this.#closed) throw new UnavailableError('this node is draining and takes no new jobs');
    checkSubmission(request, this.#o);
    const id = jobId(request);
    const found = this.#live(id);
    if (found) return { record: structuredClone(sameRequest(found, request)), existing: true };
    const record = newRecord(id, request);
    this.#records.set(id, { record, expiresAt: Infinity });
    const run = this.#run(record, request).finally(() => this.#running.delete(run));
    this.#running.add(run);
    return { record: structuredClone(record), existing: false };
  }

  async get(id: string): Promise<JobRecord | undefined> {
    const found = this.#live(id);
    return found && structuredClone(found);
  }

  serve(): void {}

  /** Jobs here run as soon as they are accepted: their pools count them. */
  waiting(): number {
    return 0;
  }

  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all(this.#running);
  }

  #live(id: string): JobRecord | undefined {
    const entry = this.#records.get(id);
    if (entry && entry.expiresAt < Date.now()) {
      this.#records.delete(id);
      return undefined;
    }
    return entry?.record;
  }

  async #run(record: JobRecord, request: JobRequest): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      record.status = 'running';
      record.startedAt ??= Date.now();
      record.attempts = attempt;
      try {
        const result = await this.#invoke(request.function, request.version, {
          body: request.body,
          contentType: request.contentType,
        });
        record.status = 'succeeded';
        record.result = result;
        delete record.error;
        break;
      } catch (error) {
        record.error = errorBody(error);
        if (!isTransient(error) || attempt >= this.#o.attempts || this.#closed) {
          record.status = 'failed';
          break;
        }
        record.status = 'queued';
        await sleep(retryDelayMs(this.#o, attempt));
      }
    }
    record.finishedAt = Date.now();
    this.#records.set(record.id, { record, expiresAt: record.finishedAt + this.#o.resultTtlS * 1000 });
    if (record.webhook && this.#o.webhookSecret) await this.#notify(record.webhook, this.#o.webhookSecret, record);
  }

  async #notify(url: string, secret: string, record: JobRecord): Promise<void> {
    const message = webhookMessage(record);
    for (let attempt = 1; attempt <= WEBHOOK_TRIES; attempt++) {
      try {
        return await deliver(url, secret, message, this.#o.webhooks);
      } catch (error) {
        if (attempt === WEBHOOK_TRIES || this.#closed) {
          this.#o.log?.warn({ job: record.id, url, reason: (error as Error).message }, 'webhook not delivered');
          return;
        }
        await sleep(retryDelayMs(this.#o, attempt));
      }
    }
  }
}
