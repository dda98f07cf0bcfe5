/**
 * Functions on this node: deploy versions, route requests to a version by traffic, and keep a pool
 * per version, started cold on the first request (which waits in the pool's queue, up to its
 * deadline, while the artifacts are fetched and the model loads).
 *
 * A deploy creates version n+1 as pending and loads it; only when it is warm does traffic move to
 * it. A version that fails to load (bad .pt, a hook that throws in setup) is recorded as failed
 * with the reason, and the versions already serving keep serving.
 */
import { copyFile, mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';

import type { HookTensors } from '../../sdk/hook.js';
import { addCounters, devices, newCounters, Pool, RunnerPool } from '../../runtime/index.js';
import type { ColdStart, InvokeOptions, InvokeResponse, PoolCounters, PoolEvent, PoolStats, RunnerCrash, RunnerHost } from '../../runtime/index.js';
import { InvalidInputError, UnavailableError, VersionNotFoundError } from '../../sdk/errors.js';
import type { FunctionSpec } from '../../sdk/spec/function-spec.js';
import type { ArtifactStore } from '../artifacts/index.js';
import { ScaleDecider } from '../autoscaler/autoscaler.js';
import type { Cluster, Forwarded, ForwardResult, PoolBrief } from '../cluster/cluster.js';
import type { FunctionRecord, FunctionVersion, Registry } from '../registry/index.js';
import { notFound, pickVersion } from '../registry/index.js';

export interface FunctionServiceOptions {
  registry: Registry;
  artifacts: ArtifactStore;
  dataDir: string;
  log?: { info(o: object, msg?: string): void; warn(o: object, msg?: string): void; error(o: object, msg?: string): void };
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
}

/** A version's pool: in a runner process, or (isolation none) in the node. */
export type ServingPool = Pool | RunnerPool;

export interface PoolSummary extends PoolStats {
  function: string;
  version: number;
  device: string;
  /** The pool's latest events (state changes, instances added and removed), oldest first. */
  events: PoolEvent[];
}

/** The reason of a version that waits for a GPU node (cluster mode); such a node adopts it. */
const WAITING_FOR_GPU = 'waiting for a node with a GPU';
const KEEP_TRAFFIC = '; traffic stays where it is';

/**
 * How long a function's registry record is reused for routing. Reading it for every request cost
 * a file read (embedded) or a Redis round trip per request, and was the node's bottleneck under
 * load; a traffic change made on another node reaches this one within this time.
 */
const RECORD_TTL_MS = 1000;

export class FunctionService {
  readonly #o: FunctionServiceOptions;
  readonly #pools = new Map<string, ServingPool>();
  readonly #records = new Map<string, { at: number; record: Promise<FunctionRecord | undefined> }>();
  readonly #scalers = new Map<ServingPool, ScaleDecider>();
  /** Counters of pools that stopped (scale to zero, unload), per `name@version`: statistics outlive pools. */
  readonly #retired = new Map<string, PoolCounters>();
  /** Functions unloaded on this node (Triton's repository unload): not ready, refused, until loaded. */
  readonly #unloaded = new Set<string>();
  readonly #ticker: NodeJS.Timeout;

  constructor(options: FunctionServiceOptions) {
    this.#o = options;
    this.#ticker = setInterval(() => this.autoscale(), options.autoscaleTickMs ?? 1000);
    this.#ticker.unref();
  }

  /**
   * One autoscaler tick over every warm pool (platform/autoscaler decides): instances are
   * added over the shared weights or idle ones removed, and an idle pool past scaleDownAfterS is
   * drained and dropped, to cold-start on its next request.
   */
  autoscale(): void {
    for (const pool of this.#pools.values()) {
      if (pool.state !== 'warm') continue;
      let scaler = this.#scalers.get(pool);
      if (!scaler) this.#scalers.set(pool, (scaler = new ScaleDecider(pool.spec.scaling)));
      const stats = pool.stats();
      const instances = stats.instances.total;
      const load = stats.pending + (this.#o.queuedElsewhere?.(pool.spec.name, pool.version) ?? 0);
      const wantsMore = scaler.wanted(load) > instances;
      const decision = scaler.decide({ now: performance.now(), load, instances, lastRequestAt: pool.lastRequestAt, room: wantsMore ? pool.room() : 0 });
      const where = { function: pool.spec.name, version: pool.version };
      if (decision.action === 'up') {
        for (let n = instances; n < decision.to; n++) pool.addInstance();
        this.#o.log?.info({ ...where, from: instances, to: decision.to, load }, 'scaled up');
      } else if (decision.action === 'down') {
        let n = instances;
        while (n > decision.to && pool.removeInstance()) n--;
        if (n < instances) this.#o.log?.info({ ...where, from: instances, to: n, load }, 'scaled down');
      } else if (decision.action === 'zero') {
        this.#o.log?.info({ ...where, idleS: pool.spec.scaling.scaleDownAfterS }, 'scaled to zero');
        void this.#stopPool(pool.spec.name, pool.version, true);
      } else if (decision.action === 'hold' && decision.reason === 'no-room') {
        this.#o.log?.warn({ ...where, instances, wanted: decision.wanted }, 'scale-up waits: no room on the device');
      }
    }
  }

  get registry(): Registry {
    return this.#o.registry;
  }

  /** Creates and loads a new version; traffic moves to it once it is warm (unless `keepTraffic`). */
  async deploy(spec: FunctionSpec, artifacts: FunctionVersion['artifacts'], options: { keepTraffic?: boolean } = {}): Promise<FunctionVersion> {
    for (const [role, sha] of Object.entries(artifacts)) {
      if (sha && !(await this.#o.artifacts.stat(sha))) throw new VersionNotFoundError(`the ${role} artifact ${sha} has not been uploaded`);
    }
    const device = spec.instances.device;
    if (device.startsWith('cuda') && !devices().cudaAvailable) {
      if (!this.#o.cluster) {
        throw new InvalidInputError(`${spec.name}: instances.device is "${device}" (a KIND_GPU instance group) but this node has no CUDA device; run it on the CPU with \`hearth deploy --device cpu\` (or instances.device: cpu), or deploy to a node with a GPU`, { reason: 'instances.device' });
      }
      // Cluster mode: the version waits, pending, for a node with a GPU to load it (adoptWaiting).
      const created = await this.#o.registry.createVersion(spec, artifacts);
      const reason = `${WAITING_FOR_GPU} (instances.device ${device}; this node has none)${options.keepTraffic ? KEEP_TRAFFIC : ''}`;
      await this.#o.registry.setStatus(spec.name, created.version, 'pending', reason);
      this.#records.delete(spec.name);
      this.#o.log?.info({ function: spec.name, version: created.version }, 'version waits for a node with a GPU');
      return { ...created, status: 'pending', reason };
    }
    const created = await this.#o.registry.createVersion(spec, artifacts);
    this.#unloaded.delete(spec.name);
    this.#records.delete(spec.name);
    try {
      await this.#pool(spec.name, created).start();
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      this.#o.log?.warn({ function: spec.name, version: created.version, reason }, 'version failed to load');
      await this.#o.registry.setStatus(spec.name, created.version, 'failed', reason);
      this.#records.delete(spec.name);
      await this.#stopPool(spec.name, created.version);
      return { ...created, status: 'failed', reason };
    }
    await this.#o.registry.setStatus(spec.name, created.version, 'ready');
    const record = (await this.#o.registry.get(spec.name))!;
    if (!options.keepTraffic || Object.keys(record.traffic).length === 0) await this.setTraffic(spec.name, { [created.version]: 100 });
    this.#records.delete(spec.name);
    this.#o.log?.info({ function: spec.name, version: created.version }, 'version ready');
    return { ...created, status: 'ready' };
  }

  /**
   * Cluster mode, on a node with a GPU: loads the versions that wait for one (deployed through a
   * node without), one node per version by the cold-start lease, and moves traffic to each once it
   * is warm (unless its deploy kept traffic). Called on the node's registry sweep.
   */
  async adoptWaiting(): Promise<void> {
    const cluster = this.#o.cluster;
    if (!cluster || !devices().cudaAvailable) return;
    for (const record of await this.#o.registry.list()) {
      for (const v of record.versions) {
        if (v.status !== 'pending' || !v.reason?.startsWith(WAITING_FOR_GPU)) continue;
        if (!(await cluster.claimColdStart(record.name, v.version))) continue;
        try {
          await this.#pool(record.name, v).start();
          await this.#o.registry.setStatus(record.name, v.version, 'ready');
          const current = (await this.#o.registry.get(record.name))!;
          if (!v.reason.endsWith(KEEP_TRAFFIC) || Object.keys(current.traffic).length === 0) await this.setTraffic(record.name, { [v.version]: 100 });
          this.#o.log?.info({ function: record.name, version: v.version }, 'adopted a version that waited for a GPU');
        } catch (error) {
          await this.#o.registry.setStatus(record.name, v.version, 'failed', (error as Error).message);
        } finally {
          this.#records.delete(record.name);
          await cluster.releaseColdStart(record.name, v.version);
        }
      }
    }
  }

  async get(name: string): Promise<FunctionRecord> {
    const record = await this.#cached(name);
    if (!record) throw notFound(name);
    return record;
  }

  /** Replaces the traffic split of a function. */
  async setTraffic(name: string, weights: Record<string, number>): Promise<FunctionRecord> {
    this.#records.delete(name);
    const before = (await this.#o.registry.get(name))?.traffic ?? {};
    let record: FunctionRecord;
    try {
      record = await this.#o.registry.setTraffic(name, weights);
    } finally {
      this.#records.delete(name);
    }
    // A version that lost all its traffic drains here and scales to zero (a request that names it
    // still cold-starts it).
    for (const [v, w] of Object.entries(before)) {
      if (w > 0 && !((record.traffic[v] ?? 0) > 0)) await this.#stopPool(name, Number(v), true);
    }
    return record;
  }

  #cached(name: string): Promise<FunctionRecord | undefined> {
    const now = Date.now();
    const hit = this.#records.get(name);
    if (hit && now - hit.at < RECORD_TTL_MS) return hit.record;
    const record = this.#o.registry.get(name);
    this.#records.set(name, { at: now, record });
    record.catch(() => this.#records.delete(name));
    return record;
  }

  /** The version a request goes to: the one named, else one picked by the traffic weights. */
  async resolve(name: string, version?: number): Promise<FunctionVersion> {
    const record = await this.get(name);
    const v = version ?? pickVersion(record);
    if (v === undefined) throw new UnavailableError(`function ${name} has no version ready to serve`);
    const found = record.versions.find((x) => x.version === v);
    if (!found) throw new VersionNotFoundError(`Request for unknown model: '${name}' version ${v} is not found`);
    if (found.status === 'failed') throw new UnavailableError(`${name} v${v} failed to load: ${found.reason ?? 'unknown reason'}`);
    if (found.status === 'pending' && found.reason?.startsWith(WAITING_FOR_GPU)) throw new UnavailableError(`${name} v${v} is ${found.reason}`);
    return found;
  }

  /** A request through the hooks, to the version named or picked by traffic. */
  async invoke(name: string, version: number | undefined, request: { body: Uint8Array; contentType: string }, options: InvokeOptions = {}): Promise<InvokeResponse & { version: number }> {
    const v = await this.resolve(name, version);
    const result = await this.#call(name, v, { kind: 'invoke', ...request }, options);
    if (result.kind !== 'invoke') throw new UnavailableError('a node answered an invoke with tensors');
    return { body: result.body, contentType: result.contentType, version: v.version };
  }

  /** Raw tensors (KServe v2): no hooks. */
  async infer(name: string, version: number | undefined, tensors: HookTensors, options: InvokeOptions = {}): Promise<{ outputs: HookTensors; version: FunctionVersion }> {
    const v = await this.resolve(name, version);
    const result = await this.#call(name, v, { kind: 'infer', tensors }, options);
    if (result.kind !== 'infer') throw new UnavailableError('a node answered an infer with a body');
    return { outputs: result.tensors, version: v };
  }

  /** Here, or (cluster mode) on the node that holds the version warm or is loading it. */
  async #call(name: string, v: FunctionVersion, call: Forwarded, options: InvokeOptions): Promise<ForwardResult> {
    this.#unloaded.delete(name);
    const cluster = this.#o.cluster;
    // A sequence's requests carry their flags only to a local pool: sequences stay on this node.
    if (cluster && !options.sequence && (await this.#elsewhere(cluster, name, v))) return cluster.forward(name, v.version, call, options.deadline, () => this.#local(name, v, call, options), options.signal);
    return this.#local(name, v, call, options);
  }

  async #local(name: string, v: FunctionVersion, call: Forwarded, options: InvokeOptions): Promise<ForwardResult> {
    const pool = this.#warmPool(name, v);
    if (call.kind === 'infer') return { kind: 'infer', tensors: await pool.infer(call.tensors, options) };
    const response = await pool.invoke({ body: call.body, contentType: call.contentType }, options);
    return { kind: 'invoke', ...response, version: v.version };
  }

  /** Cluster mode: another node holds the version warm, or won the lease to load it. */
  async #elsewhere(cluster: Cluster, name: string, v: FunctionVersion): Promise<boolean> {
    const local = this.#pools.get(`${name}@${v.version}`);
    if (local && (local.state === 'warm' || local.state === 'loading')) return false;
    if (cluster.warmElsewhere(name, v.version)) return true;
    return !(await cluster.claimColdStart(name, v.version));
  }

  /** Whether a version is loaded and warm on this node. */
  isWarm(name: string, version: number): boolean {
    return this.#pools.get(`${name}@${version}`)?.state === 'warm';
  }

  /** Loads a version's pool now (Triton's repository load); an unloaded function serves again. */
  async load(name: string, version?: number): Promise<void> {
    this.#unloaded.delete(name);
    const v = await this.resolve(name, version);
    await this.#pool(name, v).start();
  }

  /**
   * Triton's repository unload, on this node: the pools stop and the model answers not ready until
   * it is loaded again. A request for it still cold-starts it, as one for a function scaled to
   * zero does (Hearth is serverless: unload is "to zero, and say so"), and makes it ready again.
   */
  async unload(name: string, version?: number): Promise<void> {
    const record = await this.get(name);
    this.#unloaded.add(name);
    for (const v of record.versions) if (version === undefined || v.version === version) await this.#stopPool(name, v.version);
  }

  isUnloaded(name: string): boolean {
    return this.#unloaded.has(name);
  }

  /** Triton's repository index: every version with its state on this node. */
  async repositoryIndex(): Promise<{ name: string; version: string; state: 'READY' | 'UNAVAILABLE' | 'UNLOADED'; reason?: string }[]> {
    const records = await this.#o.registry.list();
    return records.flatMap((r) => r.versions.map((v) => ({
      name: r.name,
      version: String(v.version),
      state: this.isWarm(r.name, v.version) ? ('READY' as const) : v.status === 'failed' ? ('UNAVAILABLE' as const) : ('UNLOADED' as const),
      ...(this.#unloaded.has(r.name) ? { reason: 'unloaded' } : {}),
      ...(v.reason ? { reason: v.reason } : {}),
    })));
  }

  /**
   * Whether a version can serve: it is ready in the registry (it may still have to cold-start
   * here), and its pool here, if any, is not restarting after its runner ended.
   */
  async modelReady(name: string, version?: number): Promise<boolean> {
    if (this.#unloaded.has(name)) return false;
    const v = await this.resolve(name, version).catch(() => undefined);
    if (v?.status !== 'ready') return false;
    const state = this.#pools.get(`${name}@${v.version}`)?.state;
    return state !== 'restarting' && state !== 'failed';
  }

  async delete(name: string): Promise<boolean> {
    const record = await this.#o.registry.get(name);
    if (record) for (const v of record.versions) await this.#stopPool(name, v.version, true);
    this.#records.delete(name);
    this.#unloaded.delete(name);
    for (const key of this.#retired.keys()) if (key.startsWith(`${name}@`)) this.#retired.delete(key);
    this.#o.runners?.discard(name);
    return this.#o.registry.delete(name);
  }

  pools(): PoolSummary[] {
    return [...this.#pools.values()].map((p) => ({ function: p.spec.name, version: p.version, device: p.device, ...p.stats(), events: p.events.slice(-20) }));
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

  /** Brings every runner's counters up to now (statistics and pool listings read right after a request see it). */
  async refreshStats(): Promise<void> {
    await Promise.all([...this.#pools.values()].map((p) => (p instanceof RunnerPool ? p.refresh().catch(() => undefined) : undefined)));
  }

  poolOf(name: string, version: number): ServingPool | undefined {
    return this.#pools.get(`${name}@${version}`);
  }

  /** Drains every pool (SIGTERM): in-flight requests finish, new ones are refused. */
  async drain(): Promise<void> {
    await Promise.all([...this.#pools.values()].map((p) => p.drain()));
  }

  async close(): Promise<void> {
    clearInterval(this.#ticker);
    await Promise.all([...this.#pools.values()].map((p) => p.stop()));
    this.#pools.clear();
    await this.#o.runners?.close();
    await this.#o.registry.close();
  }

  /** Folds a pool's counters into its version's total once, when it leaves the pool map. */
  #retire(key: string, pool: ServingPool): void {
    this.#retired.set(key, addCounters(this.#retired.get(key) ?? newCounters(), pool.stats()));
  }

  /** A version's counters on this node since it was first loaded here: retired pools plus the live one. */
  versionCounters(name: string, version: number): PoolCounters {
    const key = `${name}@${version}`;
    const live = this.#pools.get(key);
    const retired = this.#retired.get(key) ?? newCounters();
    return live ? addCounters(retired, live.stats()) : retired;
  }

  /**
   * Each version's counters (Triton's statistics): of one version, of every ready version of one
   * function, or of every ready version of every function.
   */
  async statistics(name?: string, version?: number): Promise<{ name: string; version: number; counters: PoolCounters }[]> {
    const records = name === undefined ? await this.#o.registry.list() : [await this.get(name)];
    await this.refreshStats();
    if (name !== undefined && version !== undefined && !records[0]!.versions.some((v) => v.version === version)) {
      throw new VersionNotFoundError(`Request for unknown model: '${name}' version ${version} is not found`);
    }
    return records.flatMap((r) => r.versions
      .filter((v) => (version === undefined ? v.status === 'ready' : v.version === version))
      .map((v) => ({ name: r.name, version: v.version, counters: this.versionCounters(r.name, v.version) })));
  }

  #warmPool(name: string, version: FunctionVersion): ServingPool {
    const pool = this.#pool(name, version);
    if (pool.state === 'cold') {
      // The request that finds the pool cold waits in its queue while it loads.
      pool.start().catch((error: unknown) => this.#o.log?.error({ function: name, version: version.version, reason: (error as Error).message }, 'cold start failed'));
    }
    return pool;
  }

  #pool(name: string, version: FunctionVersion): ServingPool {
    const key = `${name}@${version.version}`;
    let pool = this.#pools.get(key);
    if (pool && (pool.state === 'stopped' || pool.state === 'failed')) {
      this.#pools.delete(key);
      this.#scalers.delete(pool);
      this.#retire(key, pool);
      pool = undefined;
    }
    if (!pool) {
      const runners = this.#o.runners;
      const artifacts = (): Promise<VersionFiles> => versionFiles(version, this.#o.artifacts);
      if (runners) {
        pool = new RunnerPool({ spec: version.spec, version: version.version, host: runners, resolveArtifacts: artifacts });
        pool.on('crash', (c: RunnerCrash) => this.#o.log?.error({ function: name, version: version.version, signal: c.exit.signal, exitCode: c.exit.code, killedFor: c.exit.killedFor, lastLines: c.exit.lastLines.slice(-5), restarts: c.restarts, restartInMs: c.delayMs }, 'runner ended; restarting'));
      } else {
        pool = new LazyArtifactsPool(version, async () => importable(await artifacts(), this.#o.dataDir));
      }
      const created = pool;
      created.on('cold-start', (phases: ColdStart) => {
        this.#o.onColdStart?.(name, version.version, phases);
        this.#o.log?.info({ function: name, version: version.version, ...phases }, 'cold start');
      });
      created.on('cold-start-queue', (queue: number) => this.#o.onColdStart?.(name, version.version, { queue }));
      this.#pools.set(key, pool);
      const cluster = this.#o.cluster;
      if (cluster) {
        // Calls other nodes send for this version come here while the pool lives.
        cluster.serve(name, version.version, (n, ver, call, deadline) => this.#local(n, version, call, { deadline }));
        created.on('event', (e: PoolEvent) => {
          if (e.type === 'state' && (e.state === 'warm' || e.state === 'failed')) void cluster.releaseColdStart(name, version.version);
        });
      }
    }
    return pool;
  }

  async #stopPool(name: string, version: number, drain = false): Promise<void> {
    const key = `${name}@${version}`;
    const pool = this.#pools.get(key);
    if (!pool) return;
    this.#pools.delete(key);
    this.#scalers.delete(pool);
    this.#retire(key, pool);
    if (this.#o.cluster) {
      await this.#o.cluster.stopServing(name, version);
      await this.#o.cluster.releaseColdStart(name, version);
    }
    await (drain ? pool.drain() : pool.stop()).catch(() => undefined);
  }
}

interface VersionFiles {
  model: string;
  hookBundle?: string;
  /** The hook artifact as the store holds it locally. */
  hook?: { path: string; sha256: string; size: number };
  source: string;
}

/**
 * A version's model and hook as local files, fetched from the artifact store and verified. A
 * runner links them into its own directory (the hook as hook.mjs); an in-process pool imports the
 * hook, from importableHook.
 */
async function versionFiles(version: FunctionVersion, artifacts: ArtifactStore): Promise<VersionFiles> {
  const model = await artifacts.local(version.artifacts.model);
  const hook = version.artifacts.hook ? await artifacts.local(version.artifacts.hook) : undefined;
  return { model: model.path, hookBundle: hook?.path, hook, source: model.source };
}

/** The files with the hook bundle under a .mjs name the hook worker can import (isolation none). */
async function importable(files: VersionFiles, dataDir: string): Promise<VersionFiles> {
  const { hook } = files;
  if (!hook) return files;
  const path = join(dataDir, 'hooks', `${hook.sha256}.mjs`);
  const present = await stat(path).then((s) => s.size === hook.size, () => false);
  if (!present) {
    await mkdir(join(dataDir, 'hooks'), { recursive: true });
    await copyFile(hook.path, path);
  }
  return { ...files, hookBundle: path };
}

/** An in-process pool (isolation none) whose model and hook come from the artifact store. */
class LazyArtifactsPool extends Pool {
  readonly #files: () => Promise<VersionFiles>;

  constructor(version: FunctionVersion, files: () => Promise<VersionFiles>) {
    super({ spec: version.spec, version: version.version, model: '' });
    this.#files = files;
  }

  protected override resolveArtifacts(): Promise<VersionFiles> {
    return this.#files();
  }
}
