/**
 * Async invocations on BullMQ (REDIS_URL): one queue per function, consumed by a worker on every
 * node, so a job accepted by one node can run on any. A node that dies mid-job (kill -9) stops
 * renewing the job's lock; after `lockMs` another node's stalled-job check puts it back in the
 * queue and it runs again. Job records live in Redis beside the queues (./jobs.ts says why), and a
 * success is written once, so a job that ran twice still has one result.
 *
 * Redis must never evict keys under memory pressure (maxmemory-policy noeviction): an evicted
 * queue key loses jobs silently. checkNoEviction (./redis-checks.ts) refuses to start otherwise.
 */
import type { Job } from 'bullmq';
import { Queue, UnrecoverableError, Worker } from 'bullmq';
import type { Redis } from 'ioredis';

import { UnavailableError } from '../../../sdk/errors.js';
import type { ErrorLog } from '../../errors/index.js';
import { bullConnection, closeBounded, commandConnection, redisUp } from '../../redis/index.js';
import type {
  Invoker,
  JobOptions,
  JobPage,
  JobQuery,
  JobQueue,
  JobRecord,
  JobRequest,
  WebhookDelivery,
} from '../jobs.js';
import {
  checkSubmission,
  decodeRecord,
  encodeRecord,
  errorBody,
  isTransient,
  jobId,
  newRecord,
  sameRequest,
  withDelivery,
} from '../jobs.js';
import { deliverRecorded, webhookMessage } from '../webhook.js';
import { JobIndex } from './job-index.js';
import { redisDown } from './redis-checks.js';

export interface BullJobQueueOptions extends JobOptions {
  redisUrl: string;
  /** Key prefix of Hearth's keys (HEARTH_REDIS_PREFIX); BullMQ's keys go under `{prefix}bull`. */
  prefix: string;
  /** A job whose node stops renewing its lock for this long is taken over (default 30 s). */
  lockMs: number;
  /** Jobs of one function a node runs at once (they batch in its pool). */
  concurrency: number;
  /** Names this node in the job records it writes. */
  nodeId: string;
  webhookSecret?: string;
  log?: ErrorLog & { info(o: object, msg?: string): void };
}

interface JobData {
  function: string;
  version?: number;
  body: string;
  contentType: string;
}

interface WebhookData {
  url: string;
  message: { id: string; body: string };
  /** The job whose record hears each try (absent in deliveries queued before it was added). */
  job?: string;
}

const WEBHOOK_QUEUE = 'webhooks';
/** Failed jobs the reconciler reads at a time. */
const RECONCILE_PAGE = 100;

export class BullJobQueue implements JobQueue {
  readonly kind = 'bullmq' as const;
  readonly #invoke: Invoker;
  readonly #o: BullJobQueueOptions;
  /** Records; fails fast while Redis is down so callers get 503 rather than wait. */
  readonly #redis: Redis;
  readonly #index: JobIndex;
  readonly #queues = new Map<string, Queue>();
  readonly #workers = new Map<string, Worker>();
  readonly #webhooks: Queue | undefined;
  readonly #webhookWorker: Worker | undefined;
  #closed = false;
  /** Waiting jobs per function queue, recounted every few seconds. */
  readonly #waiting = new Map<string, number>();
  readonly #counter: NodeJS.Timeout;
  /** Settles the records of jobs BullMQ failed on its own (stalled too often), and sends their webhooks. */
  readonly #reconciler: NodeJS.Timeout;

  constructor(invoke: Invoker, options: BullJobQueueOptions) {
    this.#invoke = invoke;
    this.#o = options;
    this.#redis = commandConnection(options.redisUrl);
    this.#redis.on('error', () => undefined);
    this.#index = new JobIndex(this.#redis, { ...options, key: (id) => this.#key(id) });
    this.#counter = setInterval(() => void this.#count(), 2000).unref();
    this.#reconciler = setInterval(
      () => void this.#reconcile().catch(() => undefined),
      Math.max(1000, options.lockMs),
    ).unref();
    if (options.webhookSecret) {
      const secret = options.webhookSecret;
      this.#webhooks = new Queue(WEBHOOK_QUEUE, this.#queueOptions());
      this.#webhooks.on('error', () => undefined);
      this.#webhookWorker = new Worker<WebhookData>(
        WEBHOOK_QUEUE,
        async (job) =>
          deliverRecorded(job.data.url, secret, job.data.message, this.#o.webhooks, (d) =>
            this.#recordDelivery(job.data.job, d),
          ),
        { ...this.#workerOptions(), concurrency: 16 },
      );
      this.#webhookWorker.on('error', () => undefined);
      this.#webhookWorker.on('failed', (job, error) => {
        if (job && job.attemptsMade >= (job.opts.attempts ?? 1))
          this.#o.log?.warn(
            { job: job.data.message.id, url: job.data.url, reason: error.message },
            'webhook not delivered',
          );
      });
    }
  }

  #queueOptions() {
    // BullMQ wants its own blocking-capable connections: it opens them from these options.
    return bullConnection(this.#o.redisUrl, this.#o.prefix);
  }

  #workerOptions() {
    return {
      ...this.#queueOptions(),
      lockDuration: this.#o.lockMs,
      stalledInterval: Math.max(1000, Math.floor(this.#o.lockMs / 2)),
      maxStalledCount: 2,
    };
  }

  #key(id: string): string {
    return `${this.#o.prefix}job:${id}`;
  }

  /** Adds a webhook try to its job's record, keeping the record's expiry. */
  async #recordDelivery(id: string | undefined, delivery: WebhookDelivery): Promise<void> {
    if (!id) return;
    const raw = await this.#redis.get(this.#key(id));
    if (raw === null) return;
    // One delivery job per job id runs its tries one after another: no other writer races this one.
    await this.#redis.set(this.#key(id), encodeRecord(withDelivery(decodeRecord(raw), delivery)), 'KEEPTTL');
  }

  #queue(fn: string): Queue {
    let queue = this.#queues.get(fn);
    if (!queue) {
      queue = new Queue(`fn.${fn}`, this.#queueOptions());
      queue.on('error', () => undefined);
      this.#queues.set(fn, queue);
    }
    return queue;
  }

  /** Starts this node's worker for a function's queue (idempotent). Every node serves every function it knows. */
  serve(fn: string): void {
    if (this.#closed || this.#workers.has(fn)) return;
    this.#queue(fn); // counted for the autoscaler from now on
    const worker = new Worker<JobData>(`fn.${fn}`, (job) => this.#process(job), {
      ...this.#workerOptions(),
      concurrency: this.#o.concurrency,
    });
    worker.on('error', () => undefined);
    this.#workers.set(fn, worker);
  }

  waiting(fn: string): number {
    return this.#waiting.get(fn) ?? 0;
  }

  async #count(): Promise<void> {
    for (const [fn, queue] of this.#queues) this.#waiting.set(fn, await queue.getWaitingCount().catch(() => 0));
  }

  async submit(request: JobRequest): Promise<{ record: JobRecord; existing: boolean }> {
    if (this.#closed) throw new UnavailableError('this node is draining and takes no new jobs');
    checkSubmission(request, this.#o);
    const id = jobId(request);
    const record = newRecord(id, request);
    const created = await this.#redis
      .set(this.#key(id), encodeRecord(record), 'EX', this.#o.resultTtlS, 'NX')
      .catch(redisDown);
    if (created === null) {
      const existing = await this.get(id);
      if (existing) return { record: sameRequest(existing, request), existing: true };
    }
    await this.#index.add(record).catch(redisDown);
    const data: JobData = {
      function: request.function,
      ...(request.version === undefined ? {} : { version: request.version }),
      body: Buffer.from(request.body).toString('base64'),
      contentType: request.contentType,
    };
    try {
      await this.#queue(request.function).add('invoke', data, {
        jobId: id,
        attempts: this.#o.attempts,
        backoff: { type: 'exponential', delay: this.#o.backoffMs },
        removeOnComplete: true,
        removeOnFail: { age: this.#o.resultTtlS },
      });
    } catch (error) {
      await this.#redis.del(this.#key(id)).catch(() => undefined);
      redisDown(error);
    }
    this.serve(request.function);
    return { record, existing: false };
  }

  async get(id: string): Promise<JobRecord | undefined> {
    const raw = await this.#redis.get(this.#key(id)).catch(redisDown);
    if (raw === null) return undefined;
    const record = decodeRecord(raw);
    if (record.status === 'queued' || record.status === 'running') {
      // A job BullMQ gave up on (stalled too often) never reached our processor's catch: its
      // record is settled from the queue's own state, so nothing says "running" forever.
      const job = await this.#queue(record.function)
        .getJob(id)
        .catch(() => undefined);
      if (job && (await job.getState().catch(() => undefined)) === 'failed') {
        // The processor writes its outcome before BullMQ marks the job failed: read the record
        // again, and settle it here only if it still says nothing final.
        const now = await this.#redis.get(this.#key(id)).catch(redisDown);
        const latest = now === null ? record : decodeRecord(now);
        if (latest.status === 'failed' || latest.status === 'succeeded') return latest;
        return this.#settleFailed(latest, { error: job.failedReason || 'the job failed', code: 'UNAVAILABLE' });
      }
    }
    return record;
  }

  list(query: JobQuery): Promise<JobPage> {
    return this.#index.list(query);
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#counter);
    clearInterval(this.#reconciler);
    // close() waits for running jobs; a node killed instead leaves them to the stalled check.
    const up = () => redisUp(this.#redis);
    await closeBounded([...this.#workers.values(), ...(this.#webhookWorker ? [this.#webhookWorker] : [])], up);
    await closeBounded([...this.#queues.values(), ...(this.#webhooks ? [this.#webhooks] : [])], up, 5000);
    this.#redis.disconnect();
  }

  async #save(record: JobRecord): Promise<void> {
    await this.#redis.set(this.#key(record.id), encodeRecord(record), 'EX', this.#o.resultTtlS);
  }

  /** A job that ended without its processor settling it: its record says failed, and its webhook goes. */
  async #settleFailed(record: JobRecord, error: { error: string; code: string }): Promise<JobRecord> {
    const failed: JobRecord = { ...record, status: 'failed', error, finishedAt: record.finishedAt ?? Date.now() };
    await this.#save(failed).catch(() => undefined);
    await this.#notify(failed).catch(() => undefined);
    return failed;
  }

  /**
   * The reconciler's round: jobs BullMQ moved to failed by itself (past maxStalledCount: their nodes
   * kept dying) never reached the processor's catch, so no record said so and no webhook went. Each
   * queue's failures are read newest first; a record still queued or running is settled.
   */
  async #reconcile(): Promise<void> {
    for (const queue of this.#queues.values()) {
      // Newest first, a page at a time, until a page holds nothing left to settle (older ones were).
      for (let start = 0; ; start += RECONCILE_PAGE) {
        const page = await queue.getJobs(['failed'], start, start + RECONCILE_PAGE - 1);
        let settled = 0;
        for (const job of page) {
          if (!job?.id) continue;
          const raw = await this.#redis.get(this.#key(job.id));
          if (raw === null) continue;
          const record = decodeRecord(raw);
          if (record.status !== 'queued' && record.status !== 'running') continue;
          this.#o.log?.warn(
            { job: job.id, function: record.function, reason: job.failedReason },
            'job failed by the queue',
          );
          await this.#settleFailed(record, { error: job.failedReason || 'the job failed', code: 'UNAVAILABLE' });
          settled++;
        }
        if (settled === 0 || page.length < RECONCILE_PAGE) break;
      }
    }
  }

  /** Queues the webhook of a finished job: 5 tries, exponential backoff, on any node. */
  async #notify(record: JobRecord): Promise<void> {
    if (!record.webhook || !this.#webhooks) return;
    // One delivery job per job id, kept an hour after it is done: a job that ran again after its
    // node died between its result and its webhook queues the webhook again, and BullMQ drops the
    // repeat if the first got through.
    await this.#webhooks.add(
      'deliver',
      { url: record.webhook, message: webhookMessage(record), job: record.id } satisfies WebhookData,
      {
        jobId: `webhook-${record.id}`,
        attempts: 5,
        backoff: { type: 'exponential', delay: this.#o.backoffMs },
        removeOnComplete: { age: 3600 },
        removeOnFail: { age: 3600 },
      },
    );
  }

  async #process(job: Job<JobData>): Promise<void> {
    const id = job.id!;
    const raw = await this.#redis.get(this.#key(id));
    const record: JobRecord = raw
      ? decodeRecord(raw)
      : newRecord(id, {
          function: job.data.function,
          version: job.data.version,
          body: new Uint8Array(),
          contentType: job.data.contentType,
        });
    // A job that ran twice (its first node died after finishing) keeps its first result.
    if (record.status === 'succeeded') return this.#notify(record);
    record.status = 'running';
    record.startedAt ??= Date.now();
    record.attempts += 1;
    record.node = this.#o.nodeId;
    await this.#save(record);
    try {
      const result = await this.#invoke(job.data.function, job.data.version, {
        body: new Uint8Array(Buffer.from(job.data.body, 'base64')),
        contentType: job.data.contentType,
      });
      const done: JobRecord = { ...record, status: 'succeeded', result, finishedAt: Date.now() };
      delete done.error;
      await this.#save(done);
      await this.#notify(done);
    } catch (error) {
      const last = !isTransient(error) || record.attempts >= this.#o.attempts;
      const body = errorBody(error, { requestId: record.requestId, log: this.#o.log });
      const next: JobRecord = last
        ? { ...record, status: 'failed', error: body, finishedAt: Date.now() }
        : { ...record, status: 'queued', error: body };
      await this.#save(next);
      if (last) await this.#notify(next);
      if (!isTransient(error)) throw new UnrecoverableError(body.error);
      throw error;
    }
  }
}
