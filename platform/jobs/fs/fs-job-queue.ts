/**
 * Async invocations in one process (the embedded default), kept in the data dir: the same API as
 * BullMQ's adapter. A job runs at once (the pool's own queue batches and bounds it); transient
 * failures are retried with exponential backoff, each try with its own copy of the body (a try hands
 * its body to a hook thread, which takes it).
 *
 * Memory is bounded: finished records expire on a timer after resultTtlS, and all of them together
 * are capped at `maxRecordBytes` (the least recently read go first).
 *
 * With `dir` (the node's data dir: `jobs/`; without it, in tests, records are kept in memory only),
 * nothing acknowledged is lost to a restart, as in the Redis mode: a job's record and body are
 * written there in one file (./job-files.ts), flushed to the disk, before submit returns (before the
 * 202); its record again when a try fails and when it finishes (the result with it, the accepted file
 * then removed), and a record that expires or is evicted is removed. A job found unfinished counts a
 * try for the node that stopped on it: one that takes the node down each time is failed once its
 * attempts are spent. A queue opened on the folder lists what it holds and runs again the jobs that
 * had not finished (queued or running when the node stopped). What the folder costs: bench:jobs.
 */
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';

import { LRUCache } from 'lru-cache';

import { UnavailableError } from '../../../sdk/errors.js';
import type { ErrorLog } from '../../errors/index.js';
import type { Invoker, JobOptions, JobPage, JobQuery, JobQueue, JobRecord, JobRequest } from '../jobs.js';
import {
  afterCursor,
  checkSubmission,
  encodeRecord,
  errorBody,
  isTransient,
  jobId,
  matches,
  newestFirst,
  newRecord,
  retryDelayMs,
  sameRequest,
  withDelivery,
} from '../jobs.js';
import { deliverRecorded, webhookMessage } from '../webhook.js';
import type { StoredJob } from './job-files.js';
import { acceptedBytes, acceptedFile, jobIds, readJob, recordFile, writeAtomic } from './job-files.js';

export interface FsJobQueueOptions extends JobOptions {
  webhookSecret?: string;
  log?: ErrorLog & { info?(o: object, msg?: string): void };
  /** Finished records kept, in bytes of their bodies and results (default 256 MiB). */
  maxRecordBytes?: number;
  /** Where records and bodies are kept across restarts (the data dir's `jobs/`); memory only without. */
  dir?: string;
}

/** What a finished record costs beyond its result's bytes. */
const RECORD_OVERHEAD = 1024;

const WEBHOOK_TRIES = 5;

export class FsJobQueue implements JobQueue {
  readonly kind = 'fs' as const;
  readonly #invoke: Invoker;
  readonly #o: FsJobQueueOptions;
  /** Jobs queued or running (at most what was accepted and not finished). */
  readonly #active = new Map<string, JobRecord>();
  /** Finished jobs, until their TTL or the byte cap. */
  readonly #done: LRUCache<string, JobRecord>;
  readonly #running = new Set<Promise<void>>();
  /**
   * Each job's writes to `dir`, one after another (a record's later state never lands before an
   * earlier one); different jobs' writes run side by side.
   */
  readonly #writes = new Map<string, Promise<void>>();
  /** The jobs read back from `dir`: every call waits for them. */
  readonly #restored: Promise<void>;
  #closed = false;

  constructor(invoke: Invoker, options: FsJobQueueOptions) {
    this.#invoke = invoke;
    this.#o = options;
    this.#done = new LRUCache<string, JobRecord>({
      maxSize: options.maxRecordBytes ?? 256 * 2 ** 20,
      sizeCalculation: (r) => RECORD_OVERHEAD + (r.result?.body.byteLength ?? 0),
      ttl: options.resultTtlS * 1000,
      ttlAutopurge: true,
      // A record gone for its TTL or the cap goes from the folder too (not one replaced by itself).
      dispose: (_record, id, reason) => {
        const dir = options.dir;
        if (dir && (reason === 'expire' || reason === 'evict'))
          void this.#persist(id, () => rm(recordFile(dir, id), { force: true })).catch(() => undefined);
      },
    });
    this.#restored = options.dir ? this.#restore(options.dir) : Promise.resolve();
    // lru-cache's own expiry (ttlAutopurge) is one timer per record, armed on the event loop's
    // cached time: after a long synchronous stretch that time lags, the timer fires before the record
    // is stale, and it is never looked at again. A sweep makes the TTL a promise: unref'd, through
    // a weak reference (a queue nobody holds is collected, and its sweep stops), and on after
    // close(), so a closed queue's records still expire.
    const done = new WeakRef(this.#done);
    const sweep = setInterval(
      () => {
        const records = done.deref();
        if (records) records.purgeStale();
        else clearInterval(sweep);
      },
      Math.min(1000, Math.max(50, (options.resultTtlS * 1000) / 4)),
    ).unref();
  }

  /** Records held now (active and finished), and the bytes of the finished ones. */
  get held(): { records: number; bytes: number } {
    return { records: this.#active.size + this.#done.size, bytes: this.#done.calculatedSize };
  }

  async submit(request: JobRequest): Promise<{ record: JobRecord; existing: boolean }> {
    if (this.#closed) throw new UnavailableError('this node is draining and takes no new jobs');
    checkSubmission(request, this.#o);
    await this.#restored;
    const id = jobId(request);
    const found = this.#live(id);
    if (found) return { record: structuredClone(sameRequest(found, request)), existing: true };
    const record = newRecord(id, request);
    this.#active.set(id, record);
    const dir = this.#o.dir;
    if (dir) {
      // On the disk (one file, fsync) before the caller hears 202. Later states are written without
      // waiting for the disk: they survive the node's crash; after the machine's, a job may be back
      // at its state as accepted — queued — and run again, as a stalled BullMQ job is.
      try {
        const header = encodeRecord({ ...record, contentType: request.contentType } as JobRecord);
        const file = acceptedBytes(header, request.body);
        await this.#persist(id, () => writeFile(acceptedFile(dir, id), file, { mode: 0o600, flush: true }));
      } catch (error) {
        this.#active.delete(id);
        throw new UnavailableError(`the job could not be written to ${dir}: ${(error as Error).message}`);
      }
    }
    this.#start(record, request);
    return { record: structuredClone(record), existing: false };
  }

  async get(id: string): Promise<JobRecord | undefined> {
    await this.#restored;
    const found = this.#live(id);
    return found && structuredClone(found);
  }

  async list(query: JobQuery): Promise<JobPage> {
    await this.#restored;
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
    await this.#restored;
    await Promise.all(this.#running);
    await Promise.all(this.#writes.values());
  }

  #start(record: JobRecord, request: JobRequest): void {
    const run = this.#run(record, request).finally(() => this.#running.delete(run));
    this.#running.add(run);
  }

  /** Runs `write` after the job's writes before it; a failure is logged, and later writes still run. */
  #persist(id: string, write: () => Promise<unknown>): Promise<void> {
    const next = (this.#writes.get(id) ?? Promise.resolve()).then(write).then(() => undefined);
    const settled = next.catch((error: unknown) => {
      this.#o.log?.warn({ dir: this.#o.dir, reason: (error as Error).message }, 'a job record could not be written');
    });
    this.#writes.set(id, settled);
    void settled.then(() => {
      if (this.#writes.get(id) === settled) this.#writes.delete(id);
    });
    return next;
  }

  /**
   * The record as it is now, to the folder (not awaited by the run: a later write follows it),
   * written in place: until the job's accepted file is removed — after this write, when it finished —
   * that file stands in for a record cut short. A webhook's delivery, written after, replaces it whole.
   */
  #save(record: JobRecord, contentType?: string, whole = false): void {
    const dir = this.#o.dir;
    if (!dir) return;
    const text = encodeRecord(contentType === undefined ? record : ({ ...record, contentType } as JobRecord));
    const path = recordFile(dir, record.id);
    void this.#persist(record.id, () =>
      whole ? writeAtomic(path, text) : writeFile(path, text, { mode: 0o600 }),
    ).catch(() => undefined);
  }

  /**
   * Reads the folder back: finished records are listed again (until their TTL, counted from when they
   * finished); unfinished ones are queued and run again, with their attempts so far.
   */
  async #restore(dir: string): Promise<void> {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    for (const id of await jobIds(dir)) {
      const job = await readJob(dir, id, (error) =>
        this.#o.log?.warn({ job: id, dir, reason: error.message }, 'an unreadable job record is left as it is'),
      );
      if (!job) continue;
      const { record } = job;
      if (record.status === 'succeeded' || record.status === 'failed') await this.#keepFinished(dir, job);
      else if (!job.body) this.#failUnkept(record);
      else await this.#runAgain(dir, job, job.body);
    }
  }

  /** A finished job read back: listed until its TTL, counted from when it finished. */
  async #keepFinished(dir: string, { record, accepted }: StoredJob): Promise<void> {
    const id = record.id;
    const left = this.#o.resultTtlS * 1000 - (Date.now() - (record.finishedAt ?? record.createdAt));
    if (left <= 0) await rm(recordFile(dir, id), { force: true });
    else this.#done.set(id, record, { ttl: left });
    if (accepted) await rm(acceptedFile(dir, id), { force: true });
  }

  /** An unfinished job whose body is gone: it fails, saying so. */
  #failUnkept(record: JobRecord): void {
    record.status = 'failed';
    record.error = {
      error: 'the job was accepted but its body was not kept across the restart',
      code: 'UNAVAILABLE',
    };
    record.finishedAt = Date.now();
    this.#done.set(record.id, record);
    this.#save(record);
  }

  /** An unfinished job read back: queued and run again, unless the node died on it `attempts` times. */
  async #runAgain(dir: string, job: StoredJob, body: Uint8Array): Promise<void> {
    const { record } = job;
    const id = record.id;
    // A record written in place may lack what the accepted one has: its content type.
    const { contentType = job.acceptedType() ?? 'application/octet-stream', ...rest } = record;
    // It may have been running when the node stopped: that try counts (a job that takes the node
    // down each time runs out of attempts).
    const queued: JobRecord = { ...rest, status: 'queued', attempts: rest.attempts + 1 };
    if (queued.attempts >= this.#o.attempts) {
      queued.status = 'failed';
      queued.error = {
        error: `the node stopped while this job ran, ${queued.attempts} times (its attempts): it is not run again`,
        code: 'UNAVAILABLE',
      };
      queued.finishedAt = Date.now();
      this.#done.set(id, queued);
      this.#save(queued);
      await rm(acceptedFile(dir, id), { force: true });
      return;
    }
    this.#save(queued, contentType);
    this.#active.set(id, queued);
    this.#o.log?.info?.({ job: id, function: record.function }, 'a job accepted before the restart runs again');
    this.#start(queued, {
      function: record.function,
      ...(record.version === undefined ? {} : { version: record.version }),
      body: new Uint8Array(body),
      contentType,
      ...(record.webhook ? { webhook: record.webhook } : {}),
      ...(record.owner ? { owner: record.owner } : {}),
      ...(record.requestId ? { requestId: record.requestId } : {}),
    });
  }

  #live(id: string): JobRecord | undefined {
    return this.#active.get(id) ?? this.#done.get(id);
  }

  async #run(record: JobRecord, request: JobRequest): Promise<void> {
    for (let attempt = record.attempts + 1; ; attempt++) {
      // Not written: a node that stops now finds the job unfinished on disk and counts this try
      // (#restore), so a job that takes the node down each time runs out of attempts.
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
        if (this.#closed && this.#o.dir && isTransient(error)) {
          // Cut short by the node's stop (its pools went): queued on disk, run again after the restart
          // (which counts this try again: it is not the job's).
          record.status = 'queued';
          this.#save({ ...record, attempts: attempt - 1 }, request.contentType);
          return;
        }
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
    this.#save(record);
    const dir = this.#o.dir;
    if (dir)
      void this.#persist(record.id, () => rm(acceptedFile(dir, record.id), { force: true })).catch(() => undefined);
    if (record.webhook && this.#o.webhookSecret) {
      await this.#notify(record.webhook, this.#o.webhookSecret, record);
      this.#save(record, undefined, true);
    }
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
