/**
 * Async invocations in one process (the embedded default): the same API as BullMQ's adapter,
 * with jobs and their records in memory. A job runs at once (the pool's own queue batches and
 * bounds it); transient failures are retried with exponential backoff, each try with its own copy
 * of the body (a try hands its body to a hook thread, which takes it).
 *
 * Memory is bounded: finished records expire on a timer after resultTtlS, and all of them together
 * are capped at `maxRecordBytes` (the least recently read go first).
 *
 * With `dir` (the node's data dir: `jobs/`), nothing acknowledged is lost to a restart, as in the
 * Redis mode: a job's record and body are written there before submit returns (before the 202),
 * its record again as it runs and finishes (the result with it, the body then removed), and a
 * record that expires or is evicted is removed. A queue opened on the folder lists what it holds
 * and runs again the jobs that had not finished (queued or running when the node stopped).
 */
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

import { LRUCache } from 'lru-cache';

import { UnavailableError } from '../../../sdk/errors.js';
import type { Invoker, JobOptions, JobPage, JobQuery, JobQueue, JobRecord, JobRequest } from '../jobs.js';
import {
  afterCursor,
  checkSubmission,
  decodeRecord,
  encodeRecord,
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
  log?: ErrorLog & { info?(o: object, msg?: string): void };
  /** Finished records kept, in bytes of their bodies and results (default 256 MiB). */
  maxRecordBytes?: number;
  /** Where records and bodies are kept across restarts (the data dir's `jobs/`); memory only without. */
  dir?: string;
}

/** A job's files: its record (JSON, the result's body as base64) and, until it finishes, its body. */
const recordFile = (dir: string, id: string) => join(dir, `${id}.json`);
const bodyFile = (dir: string, id: string) => join(dir, `${id}.body`);
/** Job ids are UUIDs or `idem-` and hex (jobId): only such names are read back as jobs. */
const JOB_FILE = /^((?:idem-[0-9a-f]{32})|(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}))\.json$/;

async function writeAtomic(path: string, data: string | Uint8Array): Promise<void> {
  const tmp = `${path}.tmp`;
  await writeFile(tmp, data, { mode: 0o600, flush: true });
  await rename(tmp, path);
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
  /** Writes to `dir`, one after another (a record's later state never lands before an earlier one). */
  #writes: Promise<void> = Promise.resolve();
  /** The jobs read back from `dir`: every call waits for them. */
  readonly #restored: Promise<void>;
  #closed = false;

  constructor(invoke: Invoker, options: MemoryJobQueueOptions) {
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
          void this.#persist(() => rm(recordFile(dir, id), { force: true })).catch(() => undefined);
      },
    });
    this.#restored = options.dir ? this.#restore(options.dir) : Promise.resolve();
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
      // On disk before the caller hears 202: the body, then the record that names it.
      try {
        await this.#persist(async () => {
          await writeAtomic(bodyFile(dir, id), request.body);
          await writeAtomic(
            recordFile(dir, id),
            encodeRecord({ ...record, contentType: request.contentType } as JobRecord),
          );
        });
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
    await this.#writes;
  }

  #start(record: JobRecord, request: JobRequest): void {
    const run = this.#run(record, request).finally(() => this.#running.delete(run));
    this.#running.add(run);
  }

  /** Runs `write` after the writes before it; a failure is logged, and later writes still run. */
  #persist(write: () => Promise<unknown>): Promise<void> {
    const next = this.#writes.then(write).then(() => undefined);
    this.#writes = next.catch((error: unknown) => {
      this.#o.log?.warn({ dir: this.#o.dir, reason: (error as Error).message }, 'a job record could not be written');
    });
    return next;
  }

  /** The record as it is now, to the folder (not awaited by the run: a later write follows it). */
  #save(record: JobRecord, contentType?: string): void {
    const dir = this.#o.dir;
    if (!dir) return;
    const text = encodeRecord(contentType === undefined ? record : ({ ...record, contentType } as JobRecord));
    void this.#persist(() => writeAtomic(recordFile(dir, record.id), text)).catch(() => undefined);
  }

  /**
   * Reads the folder back: finished records are listed again (until their TTL, counted from when they
   * finished); unfinished ones are queued and run again, with their attempts so far.
   */
  async #restore(dir: string): Promise<void> {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const names = (await readdir(dir)).filter((n) => JOB_FILE.test(n));
    const ttlMs = this.#o.resultTtlS * 1000;
    for (const name of names) {
      const id = JOB_FILE.exec(name)![1]!;
      let record: JobRecord & { contentType?: string };
      try {
        record = decodeRecord(await readFile(join(dir, name), 'utf8'));
      } catch (error) {
        this.#o.log?.warn(
          { file: join(dir, name), reason: (error as Error).message },
          'an unreadable job record is left as it is',
        );
        continue;
      }
      if (record.id !== id) continue;
      if (record.status === 'succeeded' || record.status === 'failed') {
        const left = ttlMs - (Date.now() - (record.finishedAt ?? record.createdAt));
        if (left <= 0) await rm(join(dir, name), { force: true });
        else this.#done.set(id, record, { ttl: left });
        continue;
      }
      const body = await readFile(bodyFile(dir, id)).catch(() => undefined);
      if (!body) {
        record.status = 'failed';
        record.error = {
          error: 'the job was accepted but its body was not kept across the restart',
          code: 'UNAVAILABLE',
        };
        record.finishedAt = Date.now();
        this.#done.set(id, record);
        this.#save(record);
        continue;
      }
      const { contentType = 'application/octet-stream', ...rest } = record;
      const queued: JobRecord = { ...rest, status: 'queued' };
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
  }

  #live(id: string): JobRecord | undefined {
    return this.#active.get(id) ?? this.#done.get(id);
  }

  async #run(record: JobRecord, request: JobRequest): Promise<void> {
    for (let attempt = record.attempts + 1; ; attempt++) {
      record.status = 'running';
      record.startedAt ??= Date.now();
      record.attempts = attempt;
      this.#save(record, request.contentType);
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
          // Cut short by the node's stop (its pools went): queued on disk, run again after the restart.
          record.status = 'queued';
          this.#save(record, request.contentType);
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
    if (dir) void this.#persist(() => rm(bodyFile(dir, record.id), { force: true })).catch(() => undefined);
    if (record.webhook && this.#o.webhookSecret) {
      await this.#notify(record.webhook, this.#o.webhookSecret, record);
      this.#save(record);
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
