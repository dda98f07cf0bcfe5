/** What a node gives its FunctionService: the stores, the cluster, the runners, the logs and the ticks. */
import type { ColdStart, RunnerHost } from '../../runtime/index.js';
import type { ArtifactStore } from '../artifacts/index.js';
import type { Cluster } from '../cluster/index.js';
import type { Registry } from '../registry/index.js';
import type { SecretStore } from '../secrets/index.js';
import type { FunctionLogs } from './function-logs.js';
import type { NodeLog } from './pool-set.js';

export interface FunctionServiceOptions {
  registry: Registry;
  /** Secrets for the hooks of the functions whose spec lists them. */
  secrets?: SecretStore;
  artifacts: ArtifactStore;
  dataDir: string;
  log?: NodeLog;
  /** Called when a pool of this node finishes a cold start. */
  onColdStart?: (name: string, version: number, phases: Partial<ColdStart>) => void;
  /** How often the autoscaler looks at every pool (default 1000 ms). */
  autoscaleTickMs?: number;
  /** Cluster mode: route calls to nodes that hold a version warm, and lease cold starts. */
  cluster?: Cluster;
  /** Work for a version waiting outside its pool (cluster-wide queues), for the autoscaler. */
  queuedElsewhere?: (name: string, version: number) => number;
  /**
   * Runs each version's pool in a runner process from this host (HEARTH_ISOLATION=process);
   * absent, pools run in the node's own process (HEARTH_ISOLATION=none).
   */
  runners?: RunnerHost;
  /** Each version's own log (hook output, runner lines, lifecycle, error detail); one is made if absent. */
  logs?: FunctionLogs;
  /** How often a canary is looked at (default 1000 ms). */
  canaryTickMs?: number;
}
