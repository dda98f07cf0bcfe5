/**
 * The registry in Redis, shared by every node of a cluster: `<prefix>fn:<name>` holds the record
 * as JSON, `<prefix>fns` the set of names. Updates are optimistic transactions (WATCH/MULTI)
 * retried on conflict, so two nodes never both create version 3. WATCH belongs to a connection,
 * and EXEC clears every watch on it, so one node runs its transactions one at a time.
 */
import { once } from 'node:events';

import type { Redis } from 'ioredis';

import { UnavailableError } from '../../../sdk/errors.js';
import type { FunctionSpec } from '../../../sdk/spec/function-spec.js';
import { FUNCTION_NAME } from '../../../sdk/spec/function-spec.js';
import type { Deployer, FunctionRecord, FunctionVersion, Registry } from '../registry.js';
import { applyNewVersion, checkedName, notFound } from '../registry.js';
import { RegistryBase } from '../registry-base.js';
import { readRecord } from '../stored-record.js';

export class RedisRegistry extends RegistryBase implements Registry {
  readonly kind = 'redis';
  readonly #redis: Redis;
  readonly #prefix: string;

  constructor(redis: Redis, prefix: string) {
    super();
    this.#redis = redis;
    this.#prefix = prefix;
  }

  async opened(waitMs: number): Promise<void> {
    if (this.#redis.status === 'ready') return;
    const timer = new Promise<void>((resolve) => setTimeout(resolve, waitMs).unref());
    await Promise.race([once(this.#redis, 'ready'), timer]);
  }

  #key(name: string): string {
    return `${this.#prefix}fn:${checkedName(name)}`;
  }

  #queue: Promise<unknown> = Promise.resolve();

  /** Redis commands: a reply error is Redis's own; anything else means Redis is not reachable. */
  async #call<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (error) {
      if ((error as Error).name === 'ReplyError') throw error;
      throw new UnavailableError(`the registry (Redis) is not answering: ${(error as Error).message}`, {
        cause: error,
      });
    }
  }

  async get(name: string): Promise<FunctionRecord | undefined> {
    if (!FUNCTION_NAME.test(name)) return undefined;
    const raw = await this.#call(() => this.#redis.get(this.#key(name)));
    return raw === null ? undefined : readRecord(raw);
  }

  async list(): Promise<FunctionRecord[]> {
    const names = (await this.#call(() => this.#redis.smembers(`${this.#prefix}fns`))).sort();
    if (names.length === 0) return [];
    const raws = await this.#call(() => this.#redis.mget(names.map((n) => this.#key(n))));
    return raws.filter((r): r is string => r !== null).map(readRecord);
  }

  /** Reads, changes and writes one record under WATCH, retrying when another writer got there first. */
  #transact<T>(
    name: string,
    change: (current: FunctionRecord | undefined) => { next: FunctionRecord; result: T },
  ): Promise<T> {
    const run = (): Promise<T> => this.#transactNow(name, change);
    const next = this.#queue.then(run, run);
    this.#queue = next.catch(() => undefined);
    return next;
  }

  async #transactNow<T>(
    name: string,
    change: (current: FunctionRecord | undefined) => { next: FunctionRecord; result: T },
  ): Promise<T> {
    const key = this.#key(name);
    for (let attempt = 0; attempt < 50; attempt++) {
      await this.#call(() => this.#redis.watch(key));
      const raw = await this.#call(() => this.#redis.get(key));
      let outcome: { next: FunctionRecord; result: T };
      try {
        outcome = change(raw === null ? undefined : readRecord(raw));
      } catch (error) {
        await this.#redis.unwatch().catch(() => undefined);
        throw error;
      }
      const done = await this.#call(() =>
        this.#redis.multi().set(key, JSON.stringify(outcome.next)).sadd(`${this.#prefix}fns`, name).exec(),
      );
      if (done !== null) return outcome.result;
    }
    throw new UnavailableError(`too many concurrent changes to function ${name}; try again`);
  }

  createVersion(spec: FunctionSpec, artifacts: FunctionVersion['artifacts'], by?: Deployer): Promise<FunctionVersion> {
    return this.#transact(spec.name, (current) => {
      const { record, version } = applyNewVersion(current, spec, artifacts, by);
      return { next: record, result: version };
    });
  }

  protected update(name: string, change: (r: FunctionRecord) => FunctionRecord): Promise<FunctionRecord> {
    return this.#transact(name, (record) => {
      if (!record) throw notFound(name);
      const next = change(record);
      return { next, result: next };
    });
  }

  async delete(name: string): Promise<boolean> {
    const [[, removed]] = (await this.#call(() =>
      this.#redis.multi().del(this.#key(name)).srem(`${this.#prefix}fns`, name).exec(),
    )) as [[unknown, number]];
    return removed === 1;
  }

  async close(): Promise<void> {
    this.#redis.disconnect();
  }
}
