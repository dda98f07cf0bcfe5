/**
 * The seam between the transports (HTTP, gRPC, the KServe core) and the functions of this node:
 * what a request needs — find a version, call it, ask after it, load it — and, for the management
 * API, what it manages. FunctionService implements both; the transports know only these.
 */

import type { CallOptions, InvokeResponse, PoolCounters, PoolSummary } from '../../runtime/index.js';
import type { Canary, CanaryRequest, FunctionLogEntry, NodeInfo, SeriesSample } from '../../sdk/api/index.js';
import type { FunctionSpec } from '../../sdk/spec/function-spec.js';
import type { TensorsByName } from '../../sdk/tensor.js';
import type { PoolBrief } from '../cluster/index.js';
import type { Deployer, FunctionRecord, FunctionVersion } from '../registry/index.js';

/** A version's counters (Triton's statistics). */
export interface VersionCounters {
  name: string;
  version: number;
  counters: PoolCounters;
}

/** One entry of Triton's repository index. */
export interface RepositoryEntry {
  name: string;
  version: string;
  state: 'READY' | 'UNAVAILABLE' | 'UNLOADED';
  reason?: string;
}

export interface ServingFunctions {
  get(name: string): Promise<FunctionRecord>;
  /** The version a request goes to: the one named, else one picked by the traffic weights. */
  resolve(name: string, version?: number): Promise<FunctionVersion>;
  /** A request through the version's hooks. */
  invoke(
    name: string,
    version: number | undefined,
    request: { body: Uint8Array; contentType: string },
    options?: CallOptions,
  ): Promise<InvokeResponse & { version: number }>;
  /** Tensors straight to the model (KServe v2): no hooks. */
  infer(
    name: string,
    version: number | undefined,
    tensors: TensorsByName,
    options?: CallOptions,
  ): Promise<{ outputs: TensorsByName; version: FunctionVersion }>;
  modelReady(name: string, version?: number): Promise<boolean>;
  statistics(name?: string, version?: number): Promise<VersionCounters[]>;
  repositoryIndex(): Promise<RepositoryEntry[]>;
  /** Loads a version's pool now (Triton's repository load). */
  load(name: string, version?: number): Promise<void>;
  unload(name: string, version?: number): Promise<void>;
  /** A new version (a repository load with a configuration override makes one). */
  deploy(
    spec: FunctionSpec,
    artifacts: FunctionVersion['artifacts'],
    options?: { keepTraffic?: boolean; canary?: CanaryRequest; by?: Deployer },
  ): Promise<FunctionVersion & { canary?: Canary }>;
  /**
   * Where the whole message of a failed call goes (a model's traceback): the function's own log,
   * for its admins; the caller gets the headline. Its answer: false where the function's log
   * budget dropped it (the node's log drops it too).
   */
  errorDetail(
    fn: string | undefined,
    requestId: string | undefined,
  ): (code: string, detail: string, phase?: string, version?: number) => boolean;
}

/** What the management API (/api/v1) asks of the functions, beside what a request does. */
export interface ManagedFunctions extends ServingFunctions {
  list(): Promise<FunctionRecord[]>;
  /** `failing` (no version can serve, or most recent calls fail), with the last reason. */
  health(record: FunctionRecord): { failing: boolean; reason?: string };
  /** A function's latest canary, with what it has seen so far while it watches. */
  canaryOf(record: FunctionRecord): Canary | undefined;
  /** Stops the function's pools and forgets it; false where it was not there. */
  delete(name: string): Promise<boolean>;
  setTraffic(name: string, weights: Record<string, number>): Promise<FunctionRecord>;
  /** Back to the split before the last traffic change; `from` is the split it replaced. */
  rollback(name: string): Promise<{ record: FunctionRecord; from: Record<string, number> }>;
  /** Scaling changed in place, of `version` or of every version taking traffic. */
  setScaling(
    name: string,
    change: Partial<FunctionSpec['scaling']>,
    version?: number,
  ): Promise<{ version: number; scaling: FunctionSpec['scaling'] }[]>;
  /** Brings every pool's counters up to now, before they are listed. */
  refreshStats(): Promise<void>;
  /** This node's pools. */
  pools(): PoolSummary[];
  /** Every live node's pools (cluster mode), each with its node. */
  clusterPools(): (PoolSummary | PoolBrief)[];
  nodes(): NodeInfo[];
  /** A function's time series, per version. */
  readonly series: { of(name: string, version?: number): Record<string, SeriesSample[]> };
  /** A function's own log: its latest entries, and every new one as it comes (until the returned stop). */
  readonly logs: {
    recent(
      name: string,
      options?: { version?: number; limit?: number; since?: number; level?: FunctionLogEntry['level'] },
    ): FunctionLogEntry[];
    follow(
      name: string,
      version: number | undefined,
      listener: (e: FunctionLogEntry) => void,
      level?: FunctionLogEntry['level'],
    ): () => void;
  };
}
