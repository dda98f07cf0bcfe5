/**
 * The pools of this node, one per function version (`name@version`): created on first use — in a
 * runner process, or in the node with isolation none — started, stopped and drained; and the
 * counters of pools that stopped, so a version's statistics outlive its pools.
 */

import type {
  CallOptions,
  ColdStart,
  PoolCounters,
  PoolEvent,
  PoolSummary,
  RunnerCrash,
  RunnerHost,
  ServingPool,
} from '../../runtime/index.js';
import { addCounters, newCounters, Pool, RunnerPool } from '../../runtime/index.js';
import { functionOfKey, versionKey } from '../../sdk/spec/index.js';
import type { ArtifactStore } from '../artifacts/index.js';
import type { Cluster, Forwarded, ForwardedReply } from '../cluster/index.js';
import type { FunctionVersion } from '../registry/index.js';
import { tenantOf } from '../registry/index.js';
import type { FunctionLogs } from './function-logs.js';
import { importable, versionFiles } from './version-files.js';

export type { PoolSummary, ServingPool } from '../../runtime/index.js';

/** The node's log (a pino logger, or a child of one), as the functions write to it. */
export interface NodeLog {
  info(o: object, msg?: string): void;
  warn(o: object, msg?: string): void;
  error(o: object, msg?: string): void;
}

export interface PoolSetOptions {
  artifacts: ArtifactStore;
  dataDir: string;
  /** Runs each version's pool in a runner process from this host; absent, pools run in the node. */
  runners?: RunnerHost;
  /** Cluster mode: calls other nodes send for a version come to its pool here while it lives. */
  cluster?: Cluster;
  log?: NodeLog;
  onColdStart?: (name: string, version: number, phases: Partial<ColdStart>) => void;
  /** Each version's own log: its lifecycle events go there. */
  logs?: FunctionLogs;
  /** The values of the secrets a spec lists (its version's tenant's), fetched at each load for its hook's context. */
  secrets?: (names: readonly string[], tenant: string) => Promise<Record<string, string>>;
}

/** A call on a pool, as a ForwardedReply (the shape cluster forwarding carries). */
export async function callPool(
  pool: ServingPool,
  version: number,
  call: Forwarded,
  options: CallOptions,
): Promise<ForwardedReply> {
  if (call.kind === 'infer') return { kind: 'infer', tensors: await pool.infer(call.tensors, options) };
  const response = await pool.invoke({ body: call.body, contentType: call.contentType }, options);
  return { kind: 'invoke', ...response, version };
}

/** A pool as a node lists it: its version, device, counters and latest events. */
export function summaryOf(p: ServingPool): PoolSummary {
  return { function: p.spec.name, version: p.version, device: p.device, ...p.stats(), events: p.events.slice(-20) };
}

export class PoolSet {
  readonly #o: PoolSetOptions;
  readonly #pools = new Map<string, ServingPool>();
  /** Counters of pools that stopped (scale to zero, unload), per `name@version`. */
  readonly #retired = new Map<string, PoolCounters>();

  constructor(options: PoolSetOptions) {
    this.#o = options;
  }

  get(name: string, version: number): ServingPool | undefined {
    return this.#pools.get(versionKey(name, version));
  }

  /** Whether this node has a pool of any version of `name`. */
  serves(name: string): boolean {
    for (const key of this.#pools.keys()) if (functionOfKey(key) === name) return true;
    return false;
  }

  values(): IterableIterator<ServingPool> {
    return this.#pools.values();
  }

  /** The version's pool, created (cold) if it has none or its last one stopped or failed. */
  obtain(name: string, version: FunctionVersion): ServingPool {
    const key = versionKey(name, version.version);
    const existing = this.#pools.get(key);
    if (existing && existing.state !== 'stopped' && existing.state !== 'failed') return existing;
    if (existing) {
      this.#pools.delete(key);
      this.#retire(key, existing);
    }
    const pool = this.#create(name, version);
    this.#pools.set(key, pool);
    return pool;
  }

  /** The version's pool, cold-starting it if it is cold: the request that found it so waits in its queue. */
  warm(name: string, version: FunctionVersion): ServingPool {
    const pool = this.obtain(name, version);
    if (pool.state === 'cold') {
      pool
        .start()
        .catch((error: unknown) =>
          this.#o.log?.error(
            { function: name, version: version.version, reason: (error as Error).message },
            'cold start failed',
          ),
        );
    }
    return pool;
  }

  /** Stops (or drains) a version's pool and forgets it; its counters are kept. */
  async stop(name: string, version: number, drain = false): Promise<void> {
    const key = versionKey(name, version);
    const pool = this.#pools.get(key);
    if (!pool) return;
    this.#pools.delete(key);
    this.#retire(key, pool);
    if (this.#o.cluster) {
      await this.#o.cluster.stopServing(name, version);
      await this.#o.cluster.releaseColdStart(name, version);
    }
    await (drain ? pool.drain() : pool.stop()).catch(() => undefined);
  }

  /** A deleted function: its kept counters go too. */
  forget(name: string): void {
    for (const key of this.#retired.keys()) if (functionOfKey(key) === name) this.#retired.delete(key);
  }

  summaries(): PoolSummary[] {
    return [...this.#pools.values()].map(summaryOf);
  }

  /** Brings every runner's counters up to now (statistics and pool listings read right after a request see it). */
  async refreshStats(): Promise<void> {
    await Promise.all([...this.#pools.values()].map((p) => p.refresh().catch(() => undefined)));
  }

  /** A version's counters on this node since it was first loaded here: retired pools plus the live one. */
  versionCounters(name: string, version: number): PoolCounters {
    const key = versionKey(name, version);
    const live = this.#pools.get(key);
    const retired = this.#retired.get(key) ?? newCounters();
    return live ? addCounters(retired, live.stats()) : retired;
  }

  async drain(): Promise<void> {
    await Promise.all([...this.#pools.values()].map((p) => p.drain()));
  }

  async close(): Promise<void> {
    await Promise.all([...this.#pools.values()].map((p) => p.stop()));
    this.#pools.clear();
    await this.#o.runners?.close();
  }

  /** Folds a pool's counters into its version's total once, when it leaves the set. */
  #retire(key: string, pool: ServingPool): void {
    this.#retired.set(key, addCounters(this.#retired.get(key) ?? newCounters(), pool.stats()));
  }

  #create(name: string, version: FunctionVersion): ServingPool {
    const { runners, cluster, log } = this.#o;
    const secrets = this.#o.secrets;
    const artifacts = async () => {
      const [files, values] = await Promise.all([
        versionFiles(version, this.#o.artifacts),
        version.spec.secrets.length > 0 && secrets ? secrets(version.spec.secrets, tenantOf(version)) : undefined,
      ]);
      return values ? { ...files, secrets: values } : files;
    };
    let pool: ServingPool;
    if (runners) {
      const runnerPool = new RunnerPool({ spec: version.spec, version: version.version, host: runners, artifacts });
      runnerPool.on('crash', (c: RunnerCrash) =>
        log?.error(
          {
            function: name,
            version: version.version,
            signal: c.exit.signal,
            exitCode: c.exit.code,
            killedFor: c.exit.killedFor,
            lastLines: c.exit.lastLines.slice(-5),
            restarts: c.restarts,
            restartInMs: c.delayMs,
          },
          'runner ended; restarting',
        ),
      );
      pool = runnerPool;
    } else {
      pool = new Pool({
        spec: version.spec,
        version: version.version,
        artifacts: async () => importable(await artifacts(), this.#o.dataDir),
      });
    }
    const logs = this.#o.logs;
    if (logs) {
      pool.on('event', (e: PoolEvent) =>
        logs.add({
          at: e.at,
          function: name,
          version: version.version,
          source: 'lifecycle',
          level: e.type === 'load-failed' || e.state === 'failed' ? 'error' : 'info',
          msg: `${e.type === 'state' ? e.state : `${e.type} (${e.state})`}${e.detail ? `: ${e.detail}` : ''}`,
        }),
      );
      if (runners)
        pool.on('crash', (c: RunnerCrash) =>
          logs.add({
            function: name,
            version: version.version,
            source: 'lifecycle',
            level: 'error',
            msg: `runner ended (${c.exit.killedFor ?? c.exit.signal ?? `exit ${c.exit.code}`}); restart ${c.restarts} in ${c.delayMs} ms${c.exit.lastLines.length ? `; last lines: ${c.exit.lastLines.slice(-5).join(' | ')}` : ''}`,
          }),
        );
    }
    pool.on('cold-start', (phases: ColdStart) => {
      this.#o.onColdStart?.(name, version.version, phases);
      log?.info({ function: name, version: version.version, ...phases }, 'cold start');
    });
    pool.on('cold-start-queue', (queue: number) => this.#o.onColdStart?.(name, version.version, { queue }));
    if (cluster) {
      // Calls other nodes send for this version come here while the pool lives.
      cluster.serve(name, version.version, (_n, _v, call, deadline) =>
        callPool(this.warm(name, version), version.version, call, { deadline }),
      );
      pool.on('event', (e: PoolEvent) => {
        if (e.type === 'state' && (e.state === 'warm' || e.state === 'failed'))
          void cluster.releaseColdStart(name, version.version);
      });
    }
    return pool;
  }
}
