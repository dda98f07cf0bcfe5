/**
 * Triton's model repository on this node — load, unload, the index, whether a model is ready — and
 * the warm minimum a node loads at start (the versions that keep instances warm).
 */
import { versionKey } from '../../sdk/spec/index.js';
import type { Registry } from '../registry/index.js';
import type { Calls } from './calls.js';
import type { NodeLog, PoolSet } from './pool-set.js';
import type { RecordCache } from './records.js';
import type { RepositoryEntry } from './serving.js';

export interface RepositoryParts {
  registry: Registry;
  records: Pick<RecordCache, 'get' | 'resolve'>;
  pools: Pick<PoolSet, 'get' | 'obtain' | 'stop'>;
  /** Where a version runs in cluster mode (the warm minimum leaves to others what they hold). */
  calls: Pick<Calls, 'elsewhere'>;
  /** Functions unloaded on this node: not ready, refused, until loaded (or called, or deployed). */
  unloaded: Set<string>;
  log?: NodeLog;
}

export class TritonRepository {
  readonly #o: RepositoryParts;

  constructor(parts: RepositoryParts) {
    this.#o = parts;
  }

  /** Loads a version's pool now (Triton's repository load); an unloaded function serves again. */
  async load(name: string, version?: number): Promise<void> {
    this.#o.unloaded.delete(name);
    const v = await this.#o.records.resolve(name, version);
    await this.#o.pools.obtain(name, v).start();
  }

  /**
   * Triton's repository unload, on this node: the pools stop and the model answers not ready until
   * it is loaded again. A request for it still cold-starts it, as one for a function scaled to
   * zero does (Hearth is serverless: unload is "to zero, and say so"), and makes it ready again.
   */
  async unload(name: string, version?: number): Promise<void> {
    const record = await this.#o.records.get(name);
    this.#o.unloaded.add(name);
    for (const v of record.versions)
      if (version === undefined || v.version === version) await this.#o.pools.stop(name, v.version);
  }

  isUnloaded(name: string): boolean {
    return this.#o.unloaded.has(name);
  }

  /** Whether a version is loaded and warm on this node. */
  isWarm(name: string, version: number): boolean {
    return this.#o.pools.get(name, version)?.state === 'warm';
  }

  /** Triton's repository index: every version with its state on this node. */
  async repositoryIndex(): Promise<RepositoryEntry[]> {
    const records = await this.#o.registry.list();
    return records.flatMap((r) =>
      r.versions.map((v) => ({
        name: r.name,
        version: String(v.version),
        state: this.isWarm(r.name, v.version)
          ? ('READY' as const)
          : v.status === 'failed'
            ? ('UNAVAILABLE' as const)
            : ('UNLOADED' as const),
        ...(this.#o.unloaded.has(r.name) ? { reason: 'unloaded' } : {}),
        ...(v.reason ? { reason: v.reason } : {}),
      })),
    );
  }

  /**
   * Whether a model can answer now or by a cold start it is allowed: loaded (not unloaded by the
   * repository API), the version ready in the registry, and its pool here warm, loading, or cold
   * (scaled to zero: the first request starts it) — not restarting after a crash, nor failed.
   */
  async modelReady(name: string, version?: number): Promise<boolean> {
    if (this.#o.unloaded.has(name)) return false;
    const v = await this.#o.records.resolve(name, version).catch(() => undefined);
    if (v?.status !== 'ready') return false;
    const state = this.#o.pools.get(name, v.version)?.state;
    return state !== 'restarting' && state !== 'failed';
  }

  /**
   * At start: loads every version that takes traffic and keeps `scaling.minInstances` ≥ 1 warm
   * (in cluster mode, unless another node holds it warm or wins its cold-start lease). Resolves when
   * each is warm or has failed (a failure is logged; it does not hold the node unready, or one bad
   * model would take every function on the node out of service). The node is not ready until then.
   */
  async warmMinimum(): Promise<{ warm: string[]; failed: string[] }> {
    const started: Promise<{ id: string; ok: boolean }>[] = [];
    for (const record of await this.#o.registry.list()) {
      for (const [version, weight] of Object.entries(record.traffic)) {
        const v = record.versions.find((x) => x.version === Number(version));
        if (!v || v.status !== 'ready' || !(Number(weight) > 0) || v.spec.scaling.minInstances < 1) continue;
        const id = versionKey(record.name, v.version);
        if (await this.#o.calls.elsewhere(record.name, v)) continue;
        started.push(
          this.#o.pools
            .obtain(record.name, v)
            .start()
            .then(
              () => ({ id, ok: true }),
              (error: unknown) => {
                this.#o.log?.warn(
                  { function: record.name, version: v.version, reason: (error as Error).message },
                  'minimum instances failed to load',
                );
                return { id, ok: false };
              },
            ),
        );
      }
    }
    const settled = await Promise.all(started);
    return {
      warm: settled.filter((s) => s.ok).map((s) => s.id),
      failed: settled.filter((s) => !s.ok).map((s) => s.id),
    };
  }
}
