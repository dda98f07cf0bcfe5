/**
 * Cold-start leases: a Redis key per version with a TTL, taken by the one node that loads the
 * version; the others send it their calls meanwhile. A lease whose node dies expires after `leaseMs`.
 */
import type { Redis } from 'ioredis';

import { UnavailableError } from '../../sdk/errors.js';

export class ColdStartLease {
  readonly #redis: Redis;
  readonly #prefix: string;
  readonly #nodeId: string;
  readonly #leaseMs: number;

  constructor(redis: Redis, prefix: string, nodeId: string, leaseMs: number) {
    this.#redis = redis;
    this.#prefix = prefix;
    this.#nodeId = nodeId;
    this.#leaseMs = leaseMs;
  }

  /** Takes the lease of `version` (`name@n`): true for the one node that should load it now. */
  async claim(version: string): Promise<boolean> {
    const key = `${this.#prefix}lease:${version}`;
    const taken = await this.#redis.set(key, this.#nodeId, 'PX', this.#leaseMs, 'NX').catch(unavailable);
    if (taken === 'OK') return true;
    return (await this.#redis.get(key).catch(unavailable)) === this.#nodeId;
  }

  /**
   * Takes a lease of `ms` for `what`, or renews it if it is ours: true while this node holds it (a
   * canary's watch renews its lease each look; a node that dies lets it expire to another).
   */
  async hold(what: string, ms: number): Promise<boolean> {
    const held = await this.#redis
      .eval(
        "local v = redis.call('get', KEYS[1]) if not v then redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 1 end if v == ARGV[1] then redis.call('pexpire', KEYS[1], ARGV[2]) return 1 end return 0",
        1,
        `${this.#prefix}lease:${what}`,
        this.#nodeId,
        String(ms),
      )
      .catch(unavailable);
    return held === 1;
  }

  /** Gives the lease back (the pool is warm, failed or gone): only our own, compared and deleted in one step. */
  async release(version: string): Promise<void> {
    const key = `${this.#prefix}lease:${version}`;
    await this.#redis
      .eval(
        "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0",
        1,
        key,
        this.#nodeId,
      )
      .catch(() => undefined);
  }
}

export function unavailable(error: unknown): never {
  throw new UnavailableError(`the cluster (Redis) is unavailable: ${(error as Error).message}`, { cause: error });
}
