/**
 * The BullMQ adapter's index of its job records in Redis: job ids by creation time, every job's and
 * each submitter's own — what a listing reads, newest first, a bounded part of it per call.
 */
import type { Redis } from 'ioredis';

import type { JobPage, JobQuery, JobRecord } from '../jobs.js';
import { afterCursor, decodeRecord, matches, newestFirst } from '../jobs.js';
import { redisDown } from './redis-checks.js';

/** Index entries a listing reads at a time, and at most per call (it hands back a cursor to go on). */
const LIST_PAGE = 200;
const LIST_SCAN = 5000;

export interface JobIndexOptions {
  /** Key prefix of Hearth's keys (HEARTH_REDIS_PREFIX). */
  prefix: string;
  /** How long records are kept: older index entries point at nothing. */
  resultTtlS: number;
  /** A job's record key. */
  key: (id: string) => string;
}

export class JobIndex {
  readonly #redis: Redis;
  readonly #o: JobIndexOptions;

  constructor(redis: Redis, options: JobIndexOptions) {
    this.#redis = redis;
    this.#o = options;
  }

  /** Job ids by creation time: every job's, and each submitter's own (what a listing reads). */
  #index(owner?: string): string {
    return owner ? `${this.#o.prefix}jobs:by-time:${owner}` : `${this.#o.prefix}jobs:by-time`;
  }

  /** Indexes a new job by time (and drops index entries older than any record can be). */
  async add(record: JobRecord): Promise<void> {
    const expired = record.createdAt - this.#o.resultTtlS * 1000;
    const tx = this.#redis.multi();
    for (const key of [this.#index(), ...(record.owner ? [this.#index(record.owner)] : [])]) {
      tx.zadd(key, record.createdAt, record.id).zremrangebyscore(key, '-inf', expired);
      tx.pexpire(key, this.#o.resultTtlS * 1000);
    }
    await tx.exec();
  }

  async list(query: JobQuery): Promise<JobPage> {
    const index = this.#index(query.owner);
    const found: JobRecord[] = [];
    let cursor = query.before;
    for (let scanned = 0; ; ) {
      const flat = await this.#redis
        .zrevrangebyscore(index, cursor ? cursor.at : '+inf', '-inf', 'WITHSCORES', 'LIMIT', 0, LIST_PAGE)
        .catch(redisDown);
      const entries: { id: string; createdAt: number }[] = [];
      for (let i = 0; i < flat.length; i += 2) entries.push({ id: flat[i]!, createdAt: Number(flat[i + 1]) });
      const fresh = entries.filter((e) => afterCursor(e, cursor));
      if (fresh.length > 0) {
        const raw = await this.#redis.mget(...fresh.map((e) => this.#o.key(e.id))).catch(redisDown);
        const gone = fresh.filter((_, i) => raw[i] === null).map((e) => e.id);
        if (gone.length > 0) await this.#redis.zrem(index, ...gone).catch(() => undefined);
        for (const r of raw) {
          const record = r === null ? undefined : decodeRecord(r);
          if (record && matches(record, query)) found.push(record);
        }
      }
      scanned += entries.length;
      found.sort(newestFirst);
      if (found.length > query.limit) {
        const last = found[query.limit - 1]!;
        return { records: found.slice(0, query.limit), next: { at: last.createdAt, id: last.id } };
      }
      const last = entries.at(-1);
      if (entries.length < LIST_PAGE || !last) return { records: found };
      cursor = { at: last.createdAt, id: last.id };
      // A listing reads a bounded part of the index; the caller goes on from where it stopped.
      if (scanned >= LIST_SCAN) return { records: found, next: cursor };
    }
  }
}
