/**
 * What the API shows of the functions on this node and the cluster: a function's health, where a
 * failed call's whole message goes, the pools, the nodes and each version's counters (Triton's
 * statistics).
 */
import type { PoolCounters } from '../../runtime/index.js';
import type { NodeInfo } from '../../sdk/api/index.js';
import { VersionNotFoundError } from '../../sdk/errors.js';
import type { Cluster, PoolBrief } from '../cluster/index.js';
import { headline, isFunctionFailure } from '../errors/index.js';
import type { FunctionRecord, Registry } from '../registry/index.js';
import type { FunctionLogs } from './function-logs.js';
import type { PoolSet, PoolSummary } from './pool-set.js';
import type { RecordCache } from './records.js';
import type { FunctionSeries } from './series.js';
import type { VersionCounters } from './serving.js';

/** The window over which a function's failed calls make it `failing`. */
const HEALTH_WINDOW_MS = 60_000;

export interface ViewsParts {
  registry: Pick<Registry, 'list'>;
  records: Pick<RecordCache, 'get'>;
  pools: Pick<PoolSet, 'refreshStats' | 'serves' | 'summaries' | 'versionCounters'>;
  /** Cluster mode: every live node and its pools, as of their last heartbeat. */
  cluster?: Pick<Cluster, 'nodeId' | 'nodes' | 'pools'>;
  logs: FunctionLogs;
  series: Pick<FunctionSeries, 'of'>;
  /** When this node started (ms since the epoch). */
  startedAt: number;
}

export class FunctionViews {
  readonly #o: ViewsParts;

  constructor(parts: ViewsParts) {
    this.#o = parts;
  }

  /**
   * Whether a function is failing, and why: no version can serve (each failed to load or failed its
   * smoke request: the latest one's reason), or over the last minute more of its calls here failed
   * than were answered (the latest failure in its log). What the overview and `hearth top` show.
   */
  health(record: FunctionRecord): { failing: boolean; reason?: string } {
    const versions = record.versions;
    if (versions.length > 0 && versions.every((v) => v.status === 'failed'))
      return {
        failing: true,
        reason: `v${versions.at(-1)!.version} failed: ${versions.at(-1)!.reason ?? 'unknown reason'}`,
      };
    const since = Date.now() - HEALTH_WINDOW_MS;
    let answered = 0;
    let failed = 0;
    for (const samples of Object.values(this.#o.series.of(record.name)))
      for (const s of samples)
        if (s.at >= since) {
          answered += s.reqPerS;
          failed += s.errPerS;
        }
    if (failed === 0 || failed <= answered) return { failing: false };
    const last = this.#o.logs.recent(record.name, { level: 'error', limit: 1, since }).at(0);
    return {
      failing: true,
      reason: last ? headline(last.msg, 300) : `${Math.round(failed)} failed calls in the last minute`,
    };
  }

  /**
   * Where a failed call's whole message goes: the function's log, with its request id and phase.
   * A model's or hook's failure comes only after the name resolved; a deadline, an unavailable
   * function or a full queue may not, so those are logged only for a function with a pool here.
   * False when the function's log budget dropped it (the node's log then drops it too).
   */
  errorDetail(
    fn: string | undefined,
    requestId: string | undefined,
  ): (code: string, detail: string, phase?: string, version?: number) => boolean {
    return (code, detail, phase, version) => {
      if (fn === undefined) return true;
      if (!isFunctionFailure(code) && !this.#o.pools.serves(fn)) return true;
      return this.#o.logs.add({
        function: fn,
        ...(version === undefined ? {} : { version }),
        source: 'error',
        level: 'error',
        msg: `${code}${phase ? ` in ${phase}` : ''}: ${detail}`,
        requestId,
      });
    };
  }

  pools(): PoolSummary[] {
    return this.#o.pools.summaries();
  }

  /**
   * Pools as the API shows them: this node's, and in cluster mode every other live node's (as of
   * their last heartbeat), each with the node it is on.
   */
  clusterPools(): (PoolSummary | PoolBrief)[] {
    const cluster = this.#o.cluster;
    const local = this.pools().map((p) => ({ ...p, node: cluster?.nodeId ?? 'local' }));
    return cluster ? [...local, ...cluster.pools().filter((p) => p.node !== cluster.nodeId)] : local;
  }

  /**
   * The nodes as the API shows them: in cluster mode every live one as of its last heartbeat (and
   * how long ago that was), else this one.
   */
  nodes(): NodeInfo[] {
    const cluster = this.#o.cluster;
    const now = Date.now();
    if (!cluster)
      return [
        {
          id: 'local',
          self: true,
          startedAt: new Date(this.#o.startedAt).toISOString(),
          heartbeatAgeMs: 0,
          pools: this.pools().length,
        },
      ];
    return cluster.nodes.map((n) => ({
      id: n.id,
      self: n.id === cluster.nodeId,
      http: n.http,
      startedAt: new Date(n.startedAt).toISOString(),
      heartbeatAgeMs: Math.max(0, now - n.seenAt),
      pools: n.pools.length,
    }));
  }

  /** Brings every runner's counters up to now (statistics and pool listings read right after a request see it). */
  refreshStats(): Promise<void> {
    return this.#o.pools.refreshStats();
  }

  /** A version's counters on this node since it was first loaded here: retired pools plus the live one. */
  versionCounters(name: string, version: number): PoolCounters {
    return this.#o.pools.versionCounters(name, version);
  }

  /**
   * Each version's counters (Triton's statistics): of one version, of every ready version of one
   * function, or of every ready version of every function.
   */
  async statistics(name?: string, version?: number): Promise<VersionCounters[]> {
    const records = name === undefined ? await this.#o.registry.list() : [await this.#o.records.get(name)];
    await this.refreshStats();
    if (name !== undefined && version !== undefined && !records[0]!.versions.some((v) => v.version === version)) {
      throw new VersionNotFoundError(`Request for unknown model: '${name}' version ${version} is not found`);
    }
    return records.flatMap((r) =>
      r.versions
        .filter((v) => (version === undefined ? v.status === 'ready' : v.version === version))
        .map((v) => ({ name: r.name, version: v.version, counters: this.versionCounters(r.name, v.version) })),
    );
  }
}
