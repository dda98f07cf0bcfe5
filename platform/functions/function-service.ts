/**
 * Functions on this node: deploy versions, route requests to a version by traffic, and keep a pool
 * per version, started cold on the first request (which waits in the pool's queue, up to its
 * deadline, while the artifacts are fetched and the model loads).
 *
 * A composition of parts cut along the seam serving.ts names, each method its part's: rollout.ts,
 * canaries.ts, traffic.ts (and scaling), calls.ts, repository.ts (Triton's) and views.ts — over
 * records.ts (the records, through a short cache), pool-set.ts and the autoscale loop.
 */
import { devices } from '../../runtime/index.js';
import { AutoscaleLoop } from '../autoscaler/index.js';
import type { FunctionRecord } from '../registry/index.js';
import { Calls } from './calls.js';
import { Canaries } from './canaries.js';
import { Deletions } from './deletions.js';
import { FunctionLogs } from './function-logs.js';
import { PoolSet } from './pool-set.js';
import { RecordCache } from './records.js';
import { TritonRepository } from './repository.js';
import { Rollout } from './rollout.js';
import { RoutedCalls } from './routed.js';
import { FunctionSeries } from './series.js';
import type { FunctionServiceOptions } from './service-options.js';
import type { ManagedFunctions } from './serving.js';
import { TrafficControl } from './traffic.js';
import { FunctionViews } from './views.js';

export type { PoolSummary, ServingPool } from './pool-set.js';
export type { FunctionServiceOptions } from './service-options.js';

export class FunctionService implements ManagedFunctions {
  /** Each version's own log. */
  readonly logs: FunctionLogs;
  /** Per-version samples, one a second for 15 minutes (the console's charts). */
  readonly series = new FunctionSeries();
  /** The calls the traffic split sent to each version here (a canary is judged by them). */
  readonly routed = new RoutedCalls();
  readonly #o: FunctionServiceOptions;
  readonly #sampler: NodeJS.Timeout;
  readonly #records: RecordCache;
  readonly #pools: PoolSet;
  readonly #autoscaler: AutoscaleLoop;
  /** Functions unloaded on this node (Triton's repository unload): not ready, refused, until loaded. */
  readonly #unloaded = new Set<string>();
  readonly #traffic: TrafficControl;
  readonly #calls: Calls;
  readonly #canaries: Canaries;
  readonly #rollout: Rollout;
  readonly #repository: TritonRepository;
  readonly #views: FunctionViews;
  /** Who hears of a function deleted (./deletions.ts). */
  readonly deletions = new Deletions();

  constructor(options: FunctionServiceOptions) {
    const { registry, cluster, log, secrets, artifacts, dataDir, runners, onColdStart, queuedElsewhere } = options;
    this.#o = options;
    this.logs = options.logs ?? new FunctionLogs();
    this.#sampler = setInterval(() => this.series.sample(this.#pools.summaries()), 1000);
    this.#sampler.unref();
    const records = new RecordCache(registry);
    const secretValues = secrets && ((names: readonly string[], tenant: string) => secrets.resolve(tenant, names));
    const pools = new PoolSet({
      logs: this.logs,
      artifacts,
      dataDir,
      runners,
      cluster,
      log,
      onColdStart,
      secrets: secretValues,
    });
    const traffic = new TrafficControl({ registry, records, pools });
    const scaling = (name: string, version: number) => traffic.scalingOf(name, version);
    this.#autoscaler = new AutoscaleLoop(pools, { tickMs: options.autoscaleTickMs, queuedElsewhere, log, scaling });
    const unloaded = this.#unloaded;
    const calls = new Calls({ records, pools, cluster, unloaded, routed: this.routed });
    const shared = { registry, records, pools, cluster, log, logs: this.logs };
    const canaries = new Canaries({ ...shared, routed: this.routed, traffic, tickMs: options.canaryTickMs });
    const cudaAvailable = () => devices().cudaAvailable;
    const allocatable = runners?.allocatableBytes;
    this.#rollout = new Rollout({
      ...shared,
      artifacts,
      calls,
      traffic,
      canaries,
      unloaded,
      cudaAvailable,
      allocatable,
    });
    this.#repository = new TritonRepository({ ...shared, calls, unloaded });
    this.#views = new FunctionViews({ ...shared, series: this.series, startedAt: Date.now() });
    this.#records = records;
    this.#pools = pools;
    this.#traffic = traffic;
    this.#calls = calls;
    this.#canaries = canaries;
  }

  // Each method is its part's, typed by it (the parts keep the signatures and their docs).
  // The records, the pools and the autoscale loop.
  readonly list = (): Promise<FunctionRecord[]> => this.#o.registry.list();
  readonly get: RecordCache['get'] = (name) => this.#records.get(name);
  /** One autoscaler tick over every warm pool (autoscaler/loop.ts). */
  readonly autoscale = (): void => this.#autoscaler.tick();
  readonly poolOf: PoolSet['get'] = (name, version) => this.#pools.get(name, version);
  /** Drains every pool (SIGTERM): in-flight requests finish, new ones are refused. */
  readonly drain: PoolSet['drain'] = () => this.#pools.drain();
  // Rollout: deploy, and (cluster mode) the versions that wait for a GPU.
  readonly deploy: Rollout['deploy'] = (...a) => this.#rollout.deploy(...a);
  readonly adoptWaiting: Rollout['adoptWaiting'] = () => this.#rollout.adoptWaiting();
  // Canaries.
  readonly resumeCanaries: Canaries['resume'] = (records) => this.#canaries.resume(records);
  readonly canaryOf: Canaries['of'] = (record) => this.#canaries.of(record);
  readonly checkCanaries: Canaries['check'] = () => this.#canaries.check();
  // Traffic and scaling.
  readonly setTraffic: TrafficControl['setTraffic'] = (...a) => this.#traffic.setTraffic(...a);
  readonly rollback: TrafficControl['rollback'] = (name) => this.#traffic.rollback(name);
  readonly setScaling: TrafficControl['setScaling'] = (...a) => this.#traffic.setScaling(...a);
  readonly refreshScaling: TrafficControl['refreshScaling'] = () => this.#traffic.refreshScaling();
  // Calls.
  readonly resolve: Calls['resolve'] = (name, version) => this.#calls.resolve(name, version);
  readonly invoke: Calls['invoke'] = (...a) => this.#calls.invoke(...a);
  readonly infer: Calls['infer'] = (...a) => this.#calls.infer(...a);
  // Triton's repository, and the warm minimum at start.
  readonly load: TritonRepository['load'] = (name, version) => this.#repository.load(name, version);
  readonly unload: TritonRepository['unload'] = (name, version) => this.#repository.unload(name, version);
  readonly isUnloaded: TritonRepository['isUnloaded'] = (name) => this.#repository.isUnloaded(name);
  readonly isWarm: TritonRepository['isWarm'] = (name, version) => this.#repository.isWarm(name, version);
  readonly repositoryIndex: TritonRepository['repositoryIndex'] = () => this.#repository.repositoryIndex();
  readonly modelReady: TritonRepository['modelReady'] = (name, version) => this.#repository.modelReady(name, version);
  readonly warmMinimum: TritonRepository['warmMinimum'] = () => this.#repository.warmMinimum();
  // Views.
  readonly health: FunctionViews['health'] = (record) => this.#views.health(record);
  readonly errorDetail: FunctionViews['errorDetail'] = (fn, requestId) => this.#views.errorDetail(fn, requestId);
  readonly pools: FunctionViews['pools'] = () => this.#views.pools();
  readonly clusterPools: FunctionViews['clusterPools'] = () => this.#views.clusterPools();
  readonly nodes: FunctionViews['nodes'] = () => this.#views.nodes();
  readonly refreshStats: FunctionViews['refreshStats'] = () => this.#views.refreshStats();
  readonly versionCounters: FunctionViews['versionCounters'] = (name, v) => this.#views.versionCounters(name, v);
  readonly statistics: FunctionViews['statistics'] = (name, version) => this.#views.statistics(name, version);

  /** Stops the function's pools and forgets it, everywhere on this node, then in the registry. */
  async delete(name: string): Promise<boolean> {
    const record = await this.#o.registry.get(name);
    if (record) for (const v of record.versions) await this.#pools.stop(name, v.version, true);
    this.#records.forget(name);
    this.#unloaded.delete(name);
    this.logs.forget(name);
    this.series.forget(name);
    this.#pools.forget(name);
    this.routed.forget(name);
    this.#o.runners?.discard(name);
    this.#traffic.forget(name, record?.versions.map((v) => v.version) ?? []);
    const deleted = await this.#o.registry.delete(name);
    // Only a function that was there is gone: what else keys on its name (its trace settings) stays otherwise.
    if (deleted) this.deletions.deleted(name);
    return deleted;
  }

  async close(): Promise<void> {
    clearInterval(this.#sampler);
    this.#canaries.close();
    this.#autoscaler.close();
    await this.#pools.close();
    await this.#o.registry.close();
  }
}
