/**
 * The canaries of this node's functions, around the watch (canary.ts): one started by a deploy, the
 * ones nobody watches taken up, what a watched one has seen so far — and the watch's host, which
 * wires it to the registry, the traffic, the pools' counters (this node's and, in cluster mode,
 * every node's from their heartbeats), the canary lease and the function's log.
 */
import type { Canary, CanaryRequest } from '../../sdk/api/index.js';
import type { Cluster } from '../cluster/index.js';
import type { FunctionRecord, Registry } from '../registry/index.js';
import type { CanaryHost, Counted } from './canary.js';
import { CanaryWatch, newCanary } from './canary.js';
import type { FunctionLogs } from './function-logs.js';
import type { NodeLog, PoolSet } from './pool-set.js';
import type { RecordCache } from './records.js';
import type { RoutedCalls } from './routed.js';
import type { TrafficControl } from './traffic.js';

export interface CanariesParts {
  registry: Registry;
  records: Pick<RecordCache, 'forget'>;
  pools: Pick<PoolSet, 'refreshStats'>;
  /** The calls the traffic split sent to each version here: what a canary is judged by (both sides). */
  routed: Pick<RoutedCalls, 'counts' | 'latencies'>;
  traffic: Pick<TrafficControl, 'setTraffic'>;
  logs: Pick<FunctionLogs, 'add'>;
  log?: NodeLog;
  /** Cluster mode: the other nodes' counts, and the lease that makes one node the watcher. */
  cluster?: Pick<Cluster, 'holdCanary' | 'nodeId' | 'routed' | 'releaseCanary'>;
  /** How often a canary is looked at (default 1000 ms). */
  tickMs?: number;
}

export class Canaries {
  readonly #o: CanariesParts;
  readonly #watch: CanaryWatch;

  constructor(parts: CanariesParts) {
    this.#o = parts;
    this.#watch = new CanaryWatch(this.#host(), parts.tickMs);
  }

  /** Sends the canary its share, writes it in the record and starts watching it. */
  async start(name: string, version: number, serving: Record<string, number>, request: CanaryRequest): Promise<Canary> {
    const canary = newCanary(version, serving, request);
    await this.#o.registry.setCanary(name, canary);
    await this.#o.traffic.setTraffic(name, canary.split);
    await this.#watch.watch(name, canary);
    const msg = `canary: v${version} takes ${canary.percent}% for ${canary.windowMs / 1000} s against ${Object.keys(
      serving,
    )
      .map((v) => `v${v}`)
      .join('+')}; it rolls back past ${canary.maxErrorRate} points more errors, ${
      canary.maxP99Ratio === 'off'
        ? '(latency not judged: its limit is off)'
        : `a latency over ${canary.maxP99Ratio}× theirs (p99, or p90 or p50 where the calls are too few)`
    }, or with fewer than ${canary.minCalls} calls`;
    this.#o.logs.add({ function: name, version, source: 'lifecycle', level: 'info', msg });
    this.#o.log?.info({ function: name, version, canary: canary.split }, msg);
    return canary;
  }

  /**
   * Canaries nobody watches are watched here: an embedded node's after its restart; in a cluster
   * (on each registry sweep), those whose watcher's lease expired (it died).
   */
  async resume(records?: FunctionRecord[]): Promise<void> {
    await this.#watch.resume(records ?? (await this.#o.registry.list()));
  }

  /** A function's latest canary, with what it has seen so far while it watches. */
  of(record: FunctionRecord): Canary | undefined {
    const c = record.canary;
    if (c?.state !== 'watching') return c;
    const observed = this.#watch.observed(record.name);
    return observed ? { ...c, observed } : c;
  }

  /** One look at every canary now (tests; the watch looks once a second). */
  check(): Promise<void> {
    return this.#watch.tick();
  }

  close(): void {
    this.#watch.close();
  }

  /** What the watch asks of the functions. */
  #host(): CanaryHost {
    const { registry, records, pools, routed, traffic, logs, log, cluster } = this.#o;
    return {
      record: (name) => registry.get(name),
      setCanary: async (name, canary) => {
        await registry.setCanary(name, canary);
        records.forget(name);
      },
      setTraffic: async (name, split, previous) => {
        await traffic.setTraffic(name, split, previous);
      },
      refresh: () => pools.refreshStats(),
      counts: (name, version) => this.#counts(name, version),
      latencies: (name, version, since) => routed.latencies(name, version, since),
      note: (name, version, level, msg) => {
        logs.add({ function: name, version, source: 'lifecycle', level, msg });
        log?.[level]({ function: name, version }, msg);
      },
      ...(cluster
        ? { hold: (name: string) => cluster.holdCanary(name), release: (name: string) => cluster.releaseCanary(name) }
        : {}),
    };
  }

  /**
   * A version's cumulative calls sent to it by the traffic split — never those that named it — on
   * this node and, in cluster mode, on every other live node (from their heartbeats).
   */
  #counts(name: string, version: number): Map<string, Counted> {
    const out = new Map<string, Counted>();
    out.set('local', this.#o.routed.counts(name, version));
    const cluster = this.#o.cluster;
    if (cluster)
      for (const r of cluster.routed())
        if (r.node !== cluster.nodeId && r.function === name && r.version === version)
          out.set(r.node, { success: r.success, failure: r.failure });
    return out;
  }
}
