/**
 * Functions on this node: deploy versions, route requests to a version by traffic, and keep a pool
 * per version, started cold on the first request (which waits in the pool's queue, up to its
 * deadline, while the artifacts are fetched and the model loads).
 *
 * A deploy creates version n+1 as pending and loads it; only when it is warm does traffic move to
 * it. A version that fails to load (bad .pt, a hook that throws in setup) is recorded as failed
 * with the reason, and the versions already serving keep serving.
 *
 * A façade: records and routing (records.ts), the pools (pool-set.ts), the autoscale loop
 * (autoscaler/loop.ts); what stays here is deploy, traffic, Triton's repository operations and
 * where a call runs (here, or on another node in cluster mode).
 */
import { open, readFile } from 'node:fs/promises';

import { FunctionLogs } from './function-logs.js';
import { FunctionSeries } from './series.js';
import type { TensorsByName } from '../../sdk/tensor.js';
import { devices } from '../../runtime/index.js';
import type { ColdStart, CallOptions, InvokeResponse, PoolCounters, RunnerHost } from '../../runtime/index.js';
import {
  ConflictError,
  InvalidInputError,
  toHearthError,
  UnavailableError,
  VersionNotFoundError,
} from '../../sdk/errors.js';
import type { FunctionSpec } from '../../sdk/spec/function-spec.js';
import {
  exampleFileType,
  exampleFromArtifact,
  MAX_EXAMPLE_BYTES,
  parseSpec,
  versionKey,
} from '../../sdk/spec/index.js';
import type { ArtifactStore } from '../artifacts/index.js';
import { AutoscaleLoop } from '../autoscaler/index.js';
import type { NodeInfo } from '../../sdk/api/index.js';
import type { Cluster, Forwarded, ForwardedReply, PoolBrief } from '../cluster/index.js';
import type { FunctionRecord, FunctionVersion, Registry } from '../registry/index.js';
import { inFunctionWords, KEEP_TRAFFIC, WAITING_FOR_GPU } from '../registry/index.js';
import type { SecretStore } from '../secrets/index.js';
import { callPool, PoolSet } from './pool-set.js';
import type { PoolSummary, ServingPool } from './pool-set.js';
import { RecordCache } from './records.js';
import { headline, isFunctionFailure, markVersion } from '../caller-error.js';
import type { RepositoryEntry, ManagedFunctions, VersionCounters } from './serving.js';
import { CanaryWatch, newCanary } from './canary.js';
import type { Counted } from './canary.js';
import type { Canary, CanaryRequest } from '../../sdk/api/index.js';

export type { PoolSummary, ServingPool } from './pool-set.js';

export interface FunctionServiceOptions {
  registry: Registry;
  /** Secrets for the hooks of the functions whose spec lists them. */
  secrets?: SecretStore;
  artifacts: ArtifactStore;
  dataDir: string;
  log?: {
    info(o: object, msg?: string): void;
    warn(o: object, msg?: string): void;
    error(o: object, msg?: string): void;
  };
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

/** Rethrows a call's error marked with the version it failed on (versionOf), for the function's log. */
/** More than the line an example artifact starts with (`hearth-example:NAME`, a name of at most 128). */
const EXAMPLE_HEAD_BYTES = 256;

/** A file's first `bytes` (all of it without). */
async function readHead(path: string, bytes?: number): Promise<Uint8Array> {
  if (bytes === undefined) return readFile(path);
  const handle = await open(path, 'r');
  try {
    const { buffer, bytesRead } = await handle.read(Buffer.alloc(bytes), 0, bytes, 0);
    return buffer.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

const failedIn =
  (version: number) =>
  (error: unknown): never => {
    markVersion(error, version);
    throw error;
  };
/** The window over which a function's failed calls make it `failing`. */
const HEALTH_WINDOW_MS = 60_000;
/** How long a new version has to answer its smoke request (a cold hook isolate, a first forward). */
const SMOKE_TIMEOUT_MS = 60_000;

export class FunctionService implements ManagedFunctions {
  readonly #o: FunctionServiceOptions;
  /** Each version's own log. */
  readonly logs: FunctionLogs;
  /** Per-version samples, one a second for 15 minutes (the console's charts). */
  readonly series = new FunctionSeries();
  readonly #sampler: NodeJS.Timeout;
  readonly #startedAt = Date.now();
  readonly #records: RecordCache;
  readonly #pools: PoolSet;
  readonly #autoscaler: AutoscaleLoop;
  /** Versions whose scaling changed after their pool started (`hearth scale`), by versionKey. */
  readonly #scaling = new Map<string, FunctionSpec['scaling']>();
  /** Functions unloaded on this node (Triton's repository unload): not ready, refused, until loaded. */
  readonly #unloaded = new Set<string>();
  /** The canaries this node watches (canary.ts). */
  readonly #canaries: CanaryWatch;

  constructor(options: FunctionServiceOptions) {
    this.#o = options;
    this.logs = options.logs ?? new FunctionLogs();
    this.#sampler = setInterval(() => this.series.sample(this.#pools.summaries()), 1000);
    this.#sampler.unref();
    this.#records = new RecordCache(options.registry);
    this.#pools = new PoolSet({
      logs: this.logs,
      artifacts: options.artifacts,
      dataDir: options.dataDir,
      runners: options.runners,
      cluster: options.cluster,
      log: options.log,
      onColdStart: options.onColdStart,
      secrets: options.secrets ? (names) => options.secrets!.resolve(names) : undefined,
    });
    this.#autoscaler = new AutoscaleLoop(this.#pools, {
      tickMs: options.autoscaleTickMs,
      queuedElsewhere: options.queuedElsewhere,
      log: options.log,
      scaling: (name, version) => this.#scaling.get(versionKey(name, version)),
    });
    this.#canaries = new CanaryWatch(
      {
        record: (name) => options.registry.get(name),
        setCanary: async (name, canary) => {
          await options.registry.setCanary(name, canary);
          this.#records.forget(name);
        },
        setTraffic: async (name, split, previous) => {
          await this.setTraffic(name, split, previous);
        },
        refresh: () => this.refreshStats(),
        counts: (name, version) => this.#counts(name, version),
        p99: (name, version, of) => {
          const latency = this.#pools.get(name, version)?.stats().latency;
          return latency && latency.of >= of ? latency.p99Ms : undefined;
        },
        note: (name, version, level, msg) => {
          this.logs.add({ function: name, version, source: 'lifecycle', level, msg });
          this.#o.log?.[level]({ function: name, version }, msg);
        },
        ...(options.cluster
          ? {
              hold: (name: string) => options.cluster!.holdCanary(name),
              release: (name: string) => options.cluster!.releaseCanary(name),
            }
          : {}),
      },
      options.canaryTickMs,
    );
  }

  /** A version's cumulative calls on this node (its retired pools too) and, in cluster mode, in every other node's live pool. */
  #counts(name: string, version: number): Map<string, Counted> {
    const out = new Map<string, Counted>();
    const here = this.#pools.versionCounters(name, version);
    out.set('local', { success: here.success, failure: here.failure });
    const cluster = this.#o.cluster;
    if (cluster)
      for (const p of cluster.pools())
        if (p.node !== cluster.nodeId && p.function === name && p.version === version)
          out.set(p.node, { success: p.success, failure: p.failure });
    return out;
  }

  /** One autoscaler tick over every warm pool (autoscaler/loop.ts). */
  autoscale(): void {
    this.#autoscaler.tick();
  }

  list(): Promise<FunctionRecord[]> {
    return this.#o.registry.list();
  }

  /**
   * Creates and loads a new version; traffic moves to it once it is warm (unless `keepTraffic`), or
   * with `canary`, a share of it does while the node watches (canary.ts).
   */
  async deploy(
    spec: FunctionSpec,
    artifacts: FunctionVersion['artifacts'],
    options: { keepTraffic?: boolean; canary?: CanaryRequest } = {},
  ): Promise<FunctionVersion & { canary?: Canary }> {
    if (options.canary && options.keepTraffic)
      throw new InvalidInputError('a canary moves traffic: send canary or keepTraffic, not both', {
        reason: 'canary',
      });
    for (const [role, sha] of Object.entries(artifacts)) {
      if (sha && !(await this.#o.artifacts.stat(sha)))
        throw new VersionNotFoundError(`the ${role} artifact ${sha} has not been uploaded`);
    }
    if ((spec.exampleFile === undefined) !== (artifacts.example === undefined))
      throw new InvalidInputError(
        spec.exampleFile === undefined
          ? 'artifacts.example is the exampleFile of a spec that names none'
          : `exampleFile ${spec.exampleFile} needs its bytes uploaded as artifacts.example (hearth deploy does it)`,
        { reason: 'exampleFile' },
      );
    if (artifacts.example) await this.#exampleBytes(spec, artifacts.example, EXAMPLE_HEAD_BYTES);
    const device = spec.instances.device;
    if (device.startsWith('cuda') && !devices().cudaAvailable) {
      if (options.canary)
        throw new InvalidInputError(
          `${spec.name}: a canary is watched by the node that loads the version, and this one has no CUDA device (instances.device ${device}): deploy it through a node with a GPU`,
          { reason: 'canary' },
        );
      if (!this.#o.cluster) {
        throw new InvalidInputError(
          `${spec.name}: instances.device is "${device}" (a KIND_GPU instance group) but this node has no CUDA device; run it on the CPU with \`hearth deploy --device cpu\` (or instances.device: cpu), or deploy to a node with a GPU`,
          { reason: 'instances.device' },
        );
      }
      // Cluster mode: the version waits, pending, for a node with a GPU to load it (adoptWaiting).
      const created = await this.#o.registry.createVersion(spec, artifacts);
      const reason = `${WAITING_FOR_GPU} (instances.device ${device}; this node has none)${options.keepTraffic ? KEEP_TRAFFIC : ''}`;
      const state = { waitsFor: 'gpu', ...(options.keepTraffic ? { keepTraffic: true } : {}) } as const;
      await this.#o.registry.setStatus(spec.name, created.version, 'pending', reason, state);
      this.#records.forget(spec.name);
      this.#o.log?.info({ function: spec.name, version: created.version }, 'version waits for a node with a GPU');
      return { ...created, status: 'pending', reason, ...state };
    }
    const created = await this.#o.registry.createVersion(spec, artifacts);
    this.#unloaded.delete(spec.name);
    this.#records.forget(spec.name);
    try {
      await this.#startAndSmoke(spec.name, created);
    } catch (error) {
      // The version keeps the headline (what `deploy` and `versions` show); the whole message, a
      // TorchScript traceback included, is in the node's log and the function's (the pool's event).
      const detail = error instanceof Error ? error.message : String(error);
      const reason = headline(detail, 400);
      this.#o.log?.warn({ function: spec.name, version: created.version, reason: detail }, 'version failed to load');
      await this.#o.registry.setStatus(spec.name, created.version, 'failed', reason);
      this.#records.forget(spec.name);
      await this.#pools.stop(spec.name, created.version);
      return { ...created, status: 'failed', reason };
    }
    await this.#o.registry.setStatus(spec.name, created.version, 'ready');
    const record = (await this.#o.registry.get(spec.name))!;
    this.#o.log?.info({ function: spec.name, version: created.version }, 'version ready');
    if (options.canary && Object.keys(record.traffic).length > 0) {
      const canary = await this.#startCanary(spec.name, created.version, record.traffic, options.canary);
      return { ...created, status: 'ready', canary };
    }
    if (!options.keepTraffic || Object.keys(record.traffic).length === 0) {
      await this.setTraffic(spec.name, { [created.version]: 100 });
      if (options.canary)
        this.logs.add({
          function: spec.name,
          version: created.version,
          source: 'lifecycle',
          level: 'info',
          msg: `canary: no version served ${spec.name} before v${created.version}, which takes all the traffic (nothing to compare it with)`,
        });
    }
    this.#records.forget(spec.name);
    return { ...created, status: 'ready' };
  }

  /** Sends the canary its share, writes it in the record and starts watching it. */
  async #startCanary(
    name: string,
    version: number,
    serving: Record<string, number>,
    request: CanaryRequest,
  ): Promise<Canary> {
    const canary = newCanary(version, serving, request);
    await this.#o.registry.setCanary(name, canary);
    await this.setTraffic(name, canary.split);
    await this.#canaries.watch(name, canary);
    const msg = `canary: v${version} takes ${canary.percent}% for ${canary.windowMs / 1000} s against ${Object.keys(
      serving,
    )
      .map((v) => `v${v}`)
      .join(
        '+',
      )}; it rolls back past ${canary.maxErrorRate} points more errors, a p99 over ${canary.maxP99Ratio}×, or with fewer than ${canary.minCalls} calls`;
    this.logs.add({ function: name, version, source: 'lifecycle', level: 'info', msg });
    this.#o.log?.info({ function: name, version, canary: canary.split }, msg);
    return canary;
  }

  /**
   * Canaries nobody watches are watched here: an embedded node's after its restart; in a cluster
   * (on each registry sweep), those whose watcher's lease expired (it died).
   */
  async resumeCanaries(records?: FunctionRecord[]): Promise<void> {
    await this.#canaries.resume(records ?? (await this.#o.registry.list()));
  }

  /** A function's latest canary, with what it has seen so far while it watches. */
  canaryOf(record: FunctionRecord): Canary | undefined {
    const c = record.canary;
    if (c?.state !== 'watching') return c;
    const observed = this.#canaries.observed(record.name);
    return observed ? { ...c, observed } : c;
  }

  /** One look at every canary now (tests; the watch looks once a second). */
  checkCanaries(): Promise<void> {
    return this.#canaries.tick();
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
        if (v.status !== 'pending' || v.waitsFor !== 'gpu') continue;
        if (!(await cluster.claimColdStart(record.name, v.version))) continue;
        try {
          await this.#startAndSmoke(record.name, v);
          await this.#o.registry.setStatus(record.name, v.version, 'ready');
          const current = (await this.#o.registry.get(record.name))!;
          if (!v.keepTraffic || Object.keys(current.traffic).length === 0)
            await this.setTraffic(record.name, { [v.version]: 100 });
          this.#o.log?.info({ function: record.name, version: v.version }, 'adopted a version that waited for a GPU');
        } catch (error) {
          await this.#o.registry.setStatus(record.name, v.version, 'failed', headline((error as Error).message, 400));
          await this.#pools.stop(record.name, v.version);
        } finally {
          this.#records.forget(record.name);
          await cluster.releaseColdStart(record.name, v.version);
        }
      }
    }
  }

  /**
   * Loads a new version's pool, then sends it the spec's example (the smoke request) through
   * pre → forward → post, on the version itself, before any traffic may move to it. A failure is
   * the deploy's: the version is marked failed with the request's error, and traffic stays put.
   */
  async #startAndSmoke(name: string, v: FunctionVersion): Promise<void> {
    await this.#pools.obtain(name, v).start();
    const smoke = await this.#smokeRequest(v);
    if (!smoke) return;
    try {
      await this.#call(name, v, { kind: 'invoke', ...smoke }, { deadline: performance.now() + SMOKE_TIMEOUT_MS });
    } catch (error) {
      const e = toHearthError(error);
      this.#o.log?.warn(
        { function: name, version: v.version, code: e.code, err: { message: e.message, stack: e.stack } },
        'version failed its smoke request (spec example)',
      );
      this.logs.add({
        function: name,
        version: v.version,
        source: 'error',
        level: 'error',
        msg: `the smoke request (spec example) failed: ${e.code}: ${e.message}`,
      });
      throw new UnavailableError(`the smoke request (the spec's example) failed: ${e.message} (${e.code})`, {
        cause: e,
      });
    }
  }

  /** The spec's example as a request: its JSON, or the bytes of its exampleFile (uploaded with the version). */
  async #smokeRequest(v: FunctionVersion): Promise<{ body: Uint8Array; contentType: string } | undefined> {
    if (v.spec.example !== undefined)
      return { body: new TextEncoder().encode(JSON.stringify(v.spec.example)), contentType: 'application/json' };
    if (v.spec.exampleFile === undefined || v.artifacts.example === undefined) return undefined;
    const body = await this.#exampleBytes(v.spec, v.artifacts.example);
    return { body, contentType: exampleFileType(v.spec) };
  }

  /**
   * The bytes of a spec's example file from its artifact: one made for this function, within the
   * limit. `head` reads only that much (the deploy's check; the smoke request reads it whole).
   */
  async #exampleBytes(spec: FunctionSpec, sha: string, head?: number): Promise<Uint8Array> {
    const file = await this.#o.artifacts.local(sha);
    if (file.size > MAX_EXAMPLE_BYTES + EXAMPLE_HEAD_BYTES)
      throw new InvalidInputError(
        `exampleFile ${spec.exampleFile} is ${file.size} bytes; a smoke request is at most ${MAX_EXAMPLE_BYTES}`,
        { reason: 'exampleFile' },
      );
    const bytes = exampleFromArtifact(spec.name, await readHead(file.path, head));
    if (!bytes)
      throw new InvalidInputError(
        `artifacts.example ${sha} is not an example file made for ${spec.name} (hearth deploy uploads the spec's exampleFile as one)`,
        { reason: 'exampleFile' },
      );
    return bytes;
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
    for (const samples of Object.values(this.series.of(record.name)))
      for (const s of samples)
        if (s.at >= since) {
          answered += s.reqPerS;
          failed += s.errPerS;
        }
    if (failed === 0 || failed <= answered) return { failing: false };
    const last = this.logs.recent(record.name, { level: 'error', limit: 1, since }).at(0);
    return {
      failing: true,
      reason: last ? headline(last.msg, 300) : `${Math.round(failed)} failed calls in the last minute`,
    };
  }

  async get(name: string): Promise<FunctionRecord> {
    return this.#records.get(name);
  }

  /** Replaces the traffic split of a function (`previous`: what a rollback returns to, if not the split replaced). */
  async setTraffic(
    name: string,
    weights: Record<string, number>,
    previous?: Record<string, number>,
  ): Promise<FunctionRecord> {
    this.#records.forget(name);
    const before = (await this.#o.registry.get(name))?.traffic ?? {};
    let record: FunctionRecord;
    try {
      record = await this.#o.registry.setTraffic(name, weights, previous);
    } finally {
      this.#records.forget(name);
    }
    // A version that lost all its traffic drains here and scales to zero (a request that names it
    // still cold-starts it).
    for (const [v, w] of Object.entries(before)) {
      if (w > 0 && !((record.traffic[v] ?? 0) > 0)) await this.#pools.stop(name, Number(v), true);
    }
    return record;
  }

  /**
   * Back to the split before the last traffic change: after a deploy, the version that served
   * before it; after a canary split, the split before it. A second rollback undoes the first.
   */
  async rollback(name: string): Promise<{ record: FunctionRecord; from: Record<string, number> }> {
    this.#records.forget(name);
    const record = await this.#records.get(name);
    const previous = record.previousTraffic;
    if (!previous || Object.keys(previous).length === 0)
      throw new ConflictError(
        `${name} has had one traffic split since it was deployed: nothing to roll back to (set one with \`hearth traffic ${name} VERSION=WEIGHT\`)`,
        { reason: 'rollback' },
      );
    for (const v of Object.keys(previous)) {
      const version = record.versions.find((x) => String(x.version) === v);
      if (version?.status !== 'ready')
        throw new ConflictError(
          `${name}'s split before the last change sent traffic to v${v}, which is ${version ? version.status : 'deleted'}: set the traffic with \`hearth traffic ${name} VERSION=WEIGHT\``,
          { reason: 'rollback' },
        );
    }
    return { record: await this.setTraffic(name, previous), from: record.traffic };
  }

  /**
   * Changes the scaling of a version in place (`version`), or of every version taking traffic:
   * scaling is not a new version of the model, so the split stays. Live pools follow at once.
   */
  async setScaling(
    name: string,
    change: Partial<FunctionSpec['scaling']>,
    version?: number,
  ): Promise<{ version: number; scaling: FunctionSpec['scaling'] }[]> {
    this.#records.forget(name);
    const record = await this.#records.get(name);
    const targets =
      version === undefined
        ? record.versions.filter((v) => (record.traffic[v.version] ?? 0) > 0)
        : record.versions.filter((v) => v.version === version);
    if (version !== undefined && targets.length === 0)
      throw new VersionNotFoundError(`${name} has no version ${version}`);
    if (targets.length === 0)
      throw new ConflictError(`${name} has no version taking traffic: name one with --version`, { reason: 'scaling' });
    const changed: { version: number; scaling: FunctionSpec['scaling'] }[] = [];
    for (const v of targets) {
      // The merged settings go through the spec's own rules (min ≤ max, instances.count ≤ max).
      const scaling = parseSpec({ ...v.spec, scaling: { ...v.spec.scaling, ...change } }).scaling;
      await this.#o.registry.setScaling(name, v.version, scaling);
      this.#scaling.set(versionKey(name, v.version), scaling);
      changed.push({ version: v.version, scaling });
    }
    this.#records.forget(name);
    // A version that now keeps instances warm starts (as at node start) if it takes traffic.
    for (const { version: v, scaling } of changed) {
      const found = (await this.#records.get(name)).versions.find((x) => x.version === v);
      if (found?.status === 'ready' && scaling.minInstances > 0 && (record.traffic[v] ?? 0) > 0)
        this.#pools.warm(name, found);
    }
    return changed;
  }

  /** Cluster mode: scaling changed on another node reaches this node's live pools (the registry sweep). */
  async refreshScaling(): Promise<void> {
    const names = new Set([...this.#pools.values()].map((p) => p.spec.name));
    for (const name of names) {
      const record = await this.#o.registry.get(name);
      for (const v of record?.versions ?? []) {
        const key = versionKey(name, v.version);
        const known = this.#scaling.get(key);
        if (JSON.stringify(known) !== JSON.stringify(v.spec.scaling) && this.#pools.get(name, v.version))
          this.#scaling.set(key, v.spec.scaling);
      }
    }
  }

  /** The version a request goes to: the one named, else one picked by the traffic weights. */
  resolve(name: string, version?: number): Promise<FunctionVersion> {
    return this.#records.resolve(name, version);
  }

  /** A request through the hooks, to the version named or picked by traffic. */
  async invoke(
    name: string,
    version: number | undefined,
    request: { body: Uint8Array; contentType: string },
    options: CallOptions = {},
  ): Promise<InvokeResponse & { version: number }> {
    const v = await this.resolve(name, version).catch(inFunctionWords(name, version));
    const result = await this.#call(name, v, { kind: 'invoke', ...request }, options).catch(failedIn(v.version));
    if (result.kind !== 'invoke') throw new UnavailableError('a node answered an invoke with tensors');
    return { body: result.body, contentType: result.contentType, version: v.version };
  }

  /** Raw tensors (KServe v2): no hooks. */
  async infer(
    name: string,
    version: number | undefined,
    tensors: TensorsByName,
    options: CallOptions = {},
  ): Promise<{ outputs: TensorsByName; version: FunctionVersion }> {
    const v = await this.resolve(name, version);
    const result = await this.#call(name, v, { kind: 'infer', tensors }, options).catch(failedIn(v.version));
    if (result.kind !== 'infer') throw new UnavailableError('a node answered an infer with a body');
    return { outputs: result.tensors, version: v };
  }

  /** Here, or (cluster mode) on the node that holds the version warm or is loading it. */
  async #call(name: string, v: FunctionVersion, call: Forwarded, options: CallOptions): Promise<ForwardedReply> {
    this.#unloaded.delete(name);
    const cluster = this.#o.cluster;
    // A sequence's requests carry their flags only to a local pool: sequences stay on this node.
    if (cluster && !options.sequence && (await this.#elsewhere(cluster, name, v)))
      return cluster.forward(
        name,
        v.version,
        call,
        options.deadline,
        () => this.#local(name, v, call, options),
        options.signal,
      );
    return this.#local(name, v, call, options);
  }

  #local(name: string, v: FunctionVersion, call: Forwarded, options: CallOptions): Promise<ForwardedReply> {
    return callPool(this.#pools.warm(name, v), v.version, call, options);
  }

  /** Cluster mode: another node holds the version warm, or won the lease to load it. */
  async #elsewhere(cluster: Cluster, name: string, v: FunctionVersion): Promise<boolean> {
    const local = this.#pools.get(name, v.version);
    if (local && (local.state === 'warm' || local.state === 'loading')) return false;
    if (cluster.warmElsewhere(name, v.version)) return true;
    return !(await cluster.claimColdStart(name, v.version));
  }

  /** Whether a version is loaded and warm on this node. */
  isWarm(name: string, version: number): boolean {
    return this.#pools.get(name, version)?.state === 'warm';
  }

  /**
   * At start: loads every version that takes traffic and keeps `scaling.minInstances` ≥ 1 warm
   * (in cluster mode, unless another node holds it warm or wins its cold-start lease). Resolves when
   * each is warm or has failed (a failure is logged; it does not hold the node unready, or one bad
   * model would take every function on the node out of service). The node is not ready until then.
   */
  async warmMinimum(): Promise<{ warm: string[]; failed: string[] }> {
    const cluster = this.#o.cluster;
    const started: Promise<{ id: string; ok: boolean }>[] = [];
    for (const record of await this.#o.registry.list()) {
      for (const [version, weight] of Object.entries(record.traffic)) {
        const v = record.versions.find((x) => x.version === Number(version));
        if (!v || v.status !== 'ready' || !(Number(weight) > 0) || v.spec.scaling.minInstances < 1) continue;
        const id = versionKey(record.name, v.version);
        if (cluster && (await this.#elsewhere(cluster, record.name, v))) continue;
        started.push(
          this.#pools
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

  /** Loads a version's pool now (Triton's repository load); an unloaded function serves again. */
  async load(name: string, version?: number): Promise<void> {
    this.#unloaded.delete(name);
    const v = await this.resolve(name, version);
    await this.#pools.obtain(name, v).start();
  }

  /**
   * Triton's repository unload, on this node: the pools stop and the model answers not ready until
   * it is loaded again. A request for it still cold-starts it, as one for a function scaled to
   * zero does (Hearth is serverless: unload is "to zero, and say so"), and makes it ready again.
   */
  async unload(name: string, version?: number): Promise<void> {
    const record = await this.get(name);
    this.#unloaded.add(name);
    for (const v of record.versions)
      if (version === undefined || v.version === version) await this.#pools.stop(name, v.version);
  }

  isUnloaded(name: string): boolean {
    return this.#unloaded.has(name);
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
        ...(this.#unloaded.has(r.name) ? { reason: 'unloaded' } : {}),
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
    if (this.#unloaded.has(name)) return false;
    const v = await this.resolve(name, version).catch(() => undefined);
    if (v?.status !== 'ready') return false;
    const state = this.#pools.get(name, v.version)?.state;
    return state !== 'restarting' && state !== 'failed';
  }

  /**
   * Where a failed call's whole message goes: the function's log, with its request id and phase.
   * A model's or hook's failure comes only after the name resolved; a deadline, an unavailable
   * function or a full queue may not, so those are logged only for a function with a pool here.
   */
  errorDetail(
    fn: string | undefined,
    requestId: string | undefined,
  ): (code: string, detail: string, phase?: string, version?: number) => void {
    return (code, detail, phase, version) => {
      if (fn === undefined) return;
      if (!isFunctionFailure(code) && !this.#pools.serves(fn)) return;
      this.logs.add({
        function: fn,
        ...(version === undefined ? {} : { version }),
        source: 'error',
        level: 'error',
        msg: `${code}${phase ? ` in ${phase}` : ''}: ${detail}`,
        requestId,
      });
    };
  }

  async delete(name: string): Promise<boolean> {
    const record = await this.#o.registry.get(name);
    if (record) for (const v of record.versions) await this.#pools.stop(name, v.version, true);
    this.#records.forget(name);
    this.#unloaded.delete(name);
    this.logs.forget(name);
    this.series.forget(name);
    this.#pools.forget(name);
    this.#o.runners?.discard(name);
    for (const v of record?.versions ?? []) this.#scaling.delete(versionKey(name, v.version));
    return this.#o.registry.delete(name);
  }

  pools(): PoolSummary[] {
    return this.#pools.summaries();
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
          startedAt: new Date(this.#startedAt).toISOString(),
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
    return this.#pools.refreshStats();
  }

  poolOf(name: string, version: number): ServingPool | undefined {
    return this.#pools.get(name, version);
  }

  /** Drains every pool (SIGTERM): in-flight requests finish, new ones are refused. */
  drain(): Promise<void> {
    return this.#pools.drain();
  }

  async close(): Promise<void> {
    clearInterval(this.#sampler);
    this.#canaries.close();
    this.#autoscaler.close();
    await this.#pools.close();
    await this.#o.registry.close();
  }

  /** A version's counters on this node since it was first loaded here: retired pools plus the live one. */
  versionCounters(name: string, version: number): PoolCounters {
    return this.#pools.versionCounters(name, version);
  }

  /**
   * Each version's counters (Triton's statistics): of one version, of every ready version of one
   * function, or of every ready version of every function.
   */
  async statistics(name?: string, version?: number): Promise<VersionCounters[]> {
    const records = name === undefined ? await this.#o.registry.list() : [await this.get(name)];
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
