/**
 * Async invocations in one process (the embedded default): the same API as BullMQ's adapter,
 * with jobs and their records in memory. A job runs at once (the pool's own queue batches and
 * bounds it); transient failures are retried with exponential backoff, each try with its own copy
 * of the body (a try hands its body to a hook thread, which takes it).
 *
 * Memory is bounded: finished records expire on a timer after resultTtlS, and all of them together
 * are capped at `maxRecordBytes` (the least recently read go first).
 */
import { setTimeout as sleep } from 'node:timers/promises';

import { LRUCache } from 'lru-cache';

import { UnavailableError } from '../../../sdk/errors.js';
import type { Invoker, JobOptions, JobPage, JobQuery, JobQueue, JobRecord, JobRequest } from '../jobs.js';
import {
  afterCursor,
  checkSubmission,
  errorBody,
  isTransient,
  jobId,
  matches,
  newRecord,
  newestFirst,
  retryDelayMs,
  sameRequest,
  withDelivery,
} from '../jobs.js';
import { deliverRecorded, webhookMessage } from '../webhook.js';
import type { ErrorLog } from '../../caller-error.js';

export interface MemoryJobQueueOptions extends JobOptions {
  webhookSecret?: string;
  log?: ErrorLog;
  /** Finished records kept, in bytes of their bodies and results (default 256 MiB). */
  maxRecordBytes?: number;
}

/** What a finished record costs beyond its result's bytes. */
const RECORD_OVERHEAD = 1024;

const WEBHOOK_TRIES = 5;

export class MemoryJobQueue implements JobQueue {
  readonly kind = 'memory' as const;
  readonly #invoke: Invoker;
  readonly #o: MemoryJobQueueOptions;
  /** Jobs queued or running (at most what was accepted and not finished). */
  readonly #active = new Map<string, JobRecord>();
  /** Finished jobs, until their TTL or the byte cap. */
  readonly #done: LRUCache<string, JobRecord>;
  readonly #running = new Set<Promise<void>>();
  #closed = false;

  constructor(invoke: Invoker, options: MemoryJobQueueOptions) {
    this.#invoke = invoke;
    this.#o = options;
    this.#done = new LRUCache<string, JobRecord>({
      maxSize: options.maxRecordBytes ?? 256 * 2 ** 20,
      sizeCalculation: (r) => RECORD_OVERHEAD + (r.result?.body.byteLength ?? 0),
      ttl: options.resultTtlS * 1000,
      ttlAutopurge: true,
    });
  }

  /** Records held now (active and finished), and the bytes of the finished ones. */
  get held(): { records: number; bytes: number } {
    return { records: this.#active.size + this.#done.size, bytes: this.#done.calculatedSize };
  }

  async submit(request: JobRequest): Promise<{ record: JobRecord; existing: boolean }> {
    if (this.#closed) throw new UnavailableError('this node is draining and takes no new jobs');
    checkSubmission(request, this.#o);
    const id = jobId(request);
    const found = this.#live(id);
    if (found) return { record: structuredClone(sameRequest(found, request)), existing: true };
    const record = newRecord(id, request);
    this.#active.set(id, record);
    const run = this.#run(record, request).finally(() => this.#running.delete(run));
    this.#running.add(run);
    return { record: structuredClone(record), existing: false };
  }

  async get(id: string): Promise<JobRecord | undefined> {
    const found = this.#live(id);
    return found && structuredClone(found);
  }

  async list(query: JobQuery): Promise<JobPage> {
    const found = [...this.#active.values(), ...this.#done.values()]
      .filter((r) => matches(r, query) && afterCursor(r, query.before))
      .sort(newestFirst);
    // Listings carry no results (the API leaves them out): their bodies are not copied.
    const records = found.slice(0, query.limit).map(({ result: _, ...r }) => structuredClone(r));
    const last = records.at(-1);
    return { records, ...(found.length > query.limit && last ? { next: { at: last.createdAt, id: last.id } } : {}) };
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
    return this.#active.get(id) ?? this.#done.get(id);
  }

  async #run(record: JobRecord, request: JobRequest): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      record.status = 'running';
      record.startedAt ??= Date.now();
      record.attempts = attempt;
      try {
        const result = await this.#invoke(request.function, request.version, {
          body: new Uint8Array(request.body), // a copy (Buffer#slice would be a view)
          contentType: request.contentType,
        });
        record.status = 'succeeded';
        record.result = result;
        delete record.error;
        break;
      } catch (error) {
        record.error = errorBody(error, { requestId: record.requestId, log: this.#o.log });
        if (!isTransient(error) || attempt >= this.#o.attempts || this.#closed) {
          record.status = 'failed';
          break;
        }
        record.status = 'queued';
        await sleep(retryDelayMs(this.#o, attempt));
      }
    }
    record.finishedAt = Date.now();
    this.#done.set(record.id, record);
    this.#active.delete(record.id);
    if (record.webhook && this.#o.webhookSecret) await this.#notify(record.webhook, this.#o.webhookSecret, record);
  }

  async #notify(url: string, secret: string, record: JobRecord): Promise<void> {
    const message = webhookMessage(record);
    for (let attempt = 1; attempt <= WEBHOOK_TRIES; attempt++) {
      try {
        return await deliverRecorded(url, secret, message, this.#o.webhooks, (d) => {
          record.deliveries = withDelivery(record, d).deliveries;
        });
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
