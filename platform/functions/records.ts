/**
 * Function records for routing, read through a short cache, and the version a request goes to.
 *
 * Reading the record for every request cost a file read (embedded) or a Redis round trip per
 * request, and was the node's bottleneck under load; a traffic change made on another node reaches
 * this one within RECORD_TTL_MS.
 */
import { LRUCache } from 'lru-cache';

import { UnavailableError, VersionNotFoundError } from '../../sdk/errors.js';
import type { FunctionRecord, FunctionVersion, Registry } from '../registry/index.js';
import { notFound, pickVersion } from '../registry/index.js';

const RECORD_TTL_MS = 1000;
/** Records cached at most (each expires after RECORD_TTL_MS anyway). */
const MAX_RECORDS = 10_000;

export class RecordCache {
  readonly #registry: Registry;
  /** Bounded, expiring, and never holding a miss: names that do not exist cost nothing to keep. */
  readonly #records = new LRUCache<string, Promise<FunctionRecord | undefined>>({
    max: MAX_RECORDS,
    ttl: RECORD_TTL_MS,
    ttlAutopurge: true,
  });

  constructor(registry: Registry) {
    this.#registry = registry;
  }

  async get(name: string): Promise<FunctionRecord> {
    const record = await this.#cached(name);
    if (!record) throw notFound(name);
    return record;
  }

  /** Drops a function's cached record (it changed here). */
  forget(name: string): void {
    this.#records.delete(name);
  }

  /** The version a request goes to: the one named, else one picked by the traffic weights. */
  async resolve(name: string, version?: number): Promise<FunctionVersion> {
    const record = await this.get(name);
    const v = version ?? pickVersion(record);
    if (v === undefined) throw new UnavailableError(`function ${name} has no version ready to serve`);
    const found = record.versions.find((x) => x.version === v);
    if (!found) throw new VersionNotFoundError(`Request for unknown model: '${name}' version ${v} is not found`);
    if (found.status === 'failed')
      throw new UnavailableError(`${name} v${v} failed to load: ${found.reason ?? 'unknown reason'}`);
    if (found.status === 'pending' && found.waitsFor === 'gpu')
      throw new UnavailableError(`${name} v${v} is ${found.reason}`);
    return found;
  }

  /** Records held now (a test of the bound). */
  get size(): number {
    return this.#records.size;
  }

  #cached(name: string): Promise<FunctionRecord | undefined> {
    const hit = this.#records.get(name);
    if (hit) return hit;
    const record = this.#registry.get(name);
    this.#records.set(name, record);
    const drop = () => {
      if (this.#records.peek(name) === record) this.#records.delete(name);
    };
    record.then((r) => r ?? drop(), drop);
    return record;
  }
}
