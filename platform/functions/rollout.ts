/**
 * Rollout: a deploy creates version n+1 as pending and loads it; only when it is warm and has
 * answered its smoke request does traffic move to it (all of it, a canary's share, or none with
 * `keepTraffic`). A version that fails to load (bad .pt, a hook that throws in setup) or fails its
 * smoke request is recorded as failed with the reason, and the versions already serving keep serving.
 *
 * In cluster mode a version that needs a GPU, deployed through a node without one, waits pending
 * (`waitsFor: 'gpu'`) until a node with a GPU adopts it on its registry sweep.
 */
import type { Canary, CanaryRequest } from '../../sdk/api/index.js';
import { InvalidInputError, toHearthError, UnavailableError, VersionNotFoundError } from '../../sdk/errors.js';
import type { FunctionSpec } from '../../sdk/spec/function-spec.js';
import { clipBytes } from '../../sdk/text.js';
import type { ArtifactStore } from '../artifacts/index.js';
import { mayUse } from '../artifacts/index.js';
import type { Cluster } from '../cluster/index.js';
import { DEFAULT_TENANT } from '../config/index.js';
import { safeLine } from '../errors/index.js';
import type { Deployer, FunctionRecord, FunctionVersion, Registry } from '../registry/index.js';
import { KEEP_TRAFFIC, WAITING_FOR_GPU } from '../registry/index.js';
import type { Calls } from './calls.js';
import type { Canaries } from './canaries.js';
import type { FunctionLogs } from './function-logs.js';
import type { NodeLog, PoolSet } from './pool-set.js';
import type { RecordCache } from './records.js';
import { EXAMPLE_HEAD_BYTES, exampleBytes, SMOKE_TIMEOUT_MS, smokeRequest } from './smoke.js';
import type { TrafficControl } from './traffic.js';

export interface DeployOptions {
  keepTraffic?: boolean;
  canary?: CanaryRequest;
  /** Who deploys (its tenant owns a new function); absent: the default tenant's admin. */
  by?: Deployer;
}

export interface RolloutParts {
  registry: Registry;
  records: Pick<RecordCache, 'forget'>;
  pools: Pick<PoolSet, 'obtain' | 'stop'>;
  artifacts: Pick<ArtifactStore, 'local' | 'stat' | 'claimants'>;
  /** The smoke request goes where any call would. */
  calls: Pick<Calls, 'call'>;
  traffic: Pick<TrafficControl, 'setTraffic'>;
  canaries: Pick<Canaries, 'start'>;
  /** Functions unloaded on this node (Triton's repository unload): a deploy serves one again. */
  unloaded: Set<string>;
  logs: Pick<FunctionLogs, 'add'>;
  log?: NodeLog;
  /** Cluster mode: a version may wait for a node with a GPU, adopted under its cold-start lease. */
  cluster?: Pick<Cluster, 'claimColdStart' | 'releaseColdStart'>;
  /** Whether this node has a CUDA device. */
  cudaAvailable: () => boolean;
  /** Bytes this node's runners may hold in all (its allocatable); absent: no runners, or no budget. */
  allocatable?: number;
}

export class Rollout {
  readonly #o: RolloutParts;

  constructor(parts: RolloutParts) {
    this.#o = parts;
  }

  /**
   * Creates and loads a new version; traffic moves to it once it is warm (unless `keepTraffic`), or
   * with `canary`, a share of it does while the node watches (canary.ts).
   */
  async deploy(
    spec: FunctionSpec,
    artifacts: FunctionVersion['artifacts'],
    options: DeployOptions = {},
  ): Promise<FunctionVersion & { canary?: Canary }> {
    await this.#check(spec, artifacts, options);
    if (spec.instances.device.startsWith('cuda') && !this.#o.cudaAvailable())
      return this.#waitForGpu(spec, artifacts, options);
    const created = await this.#o.registry.createVersion(spec, artifacts, options.by);
    this.#o.unloaded.delete(spec.name);
    this.#o.records.forget(spec.name);
    try {
      await this.#startAndSmoke(spec.name, created);
    } catch (error) {
      return this.#failed(spec.name, created, error);
    }
    return this.#ready(spec.name, created, options);
  }

  /**
   * Cluster mode, on a node with a GPU: loads the versions that wait for one (deployed through a
   * node without), one node per version by the cold-start lease, and moves traffic to each once it
   * is warm (unless its deploy kept traffic). Called on the node's registry sweep.
   */
  async adoptWaiting(): Promise<void> {
    const { cluster, registry, log } = this.#o;
    if (!cluster || !this.#o.cudaAvailable()) return;
    for (const record of await registry.list()) {
      for (const v of record.versions) {
        if (v.status !== 'pending' || v.waitsFor !== 'gpu') continue;
        if (!(await cluster.claimColdStart(record.name, v.version))) continue;
        try {
          await this.#startAndSmoke(record.name, v);
          await registry.setStatus(record.name, v.version, 'ready');
          const current = (await registry.get(record.name))!;
          if (!v.keepTraffic || Object.keys(current.traffic).length === 0)
            await this.#o.traffic.setTraffic(record.name, { [v.version]: 100 });
          log?.info({ function: record.name, version: v.version }, 'adopted a version that waited for a GPU');
        } catch (error) {
          await registry.setStatus(record.name, v.version, 'failed', safeLine((error as Error).message));
          await this.#o.pools.stop(record.name, v.version);
        } finally {
          this.#o.records.forget(record.name);
          await cluster.releaseColdStart(record.name, v.version);
        }
      }
    }
  }

  /** What a deploy refuses before it creates a version: options that conflict, artifacts not uploaded. */
  async #check(spec: FunctionSpec, artifacts: FunctionVersion['artifacts'], options: DeployOptions): Promise<void> {
    const allocatable = this.#o.allocatable;
    // Refused, not clamped: a runner given less than it asked would fail later, and less clearly.
    if (allocatable !== undefined && spec.limits.runnerMemoryMb * 2 ** 20 > allocatable)
      throw new InvalidInputError(
        `limits.runnerMemoryMb ${spec.limits.runnerMemoryMb} is more than this node's ${Math.floor(allocatable / 2 ** 20)} MiB allocatable to runners (HEARTH_NODE_MEMORY_MB less HEARTH_NODE_RESERVED_MB): lower it`,
        { reason: 'limits.runnerMemoryMb' },
      );
    if (options.canary && options.keepTraffic)
      throw new InvalidInputError('a canary moves traffic: send canary or keepTraffic, not both', {
        reason: 'canary',
      });
    // Another tenant's upload is, to this deployer, not uploaded (artifacts/claims.ts).
    const by = options.by ?? { tenant: DEFAULT_TENANT, admin: true };
    for (const [role, sha] of Object.entries(artifacts)) {
      if (sha && !((await this.#o.artifacts.stat(sha)) && (await mayUse(this.#o.artifacts, by, sha))))
        throw new VersionNotFoundError(`the ${role} artifact ${sha} has not been uploaded`);
    }
    if ((spec.exampleFile === undefined) !== (artifacts.example === undefined))
      throw new InvalidInputError(
        spec.exampleFile === undefined
          ? 'artifacts.example is the exampleFile of a spec that names none'
          : `exampleFile ${spec.exampleFile} needs its bytes uploaded as artifacts.example (hearth deploy does it)`,
        { reason: 'exampleFile' },
      );
    if (artifacts.example) await exampleBytes(this.#o.artifacts, spec, artifacts.example, EXAMPLE_HEAD_BYTES);
  }

  /** A version for a GPU, deployed through this node without one: refused, or (cluster mode) left waiting. */
  async #waitForGpu(
    spec: FunctionSpec,
    artifacts: FunctionVersion['artifacts'],
    options: DeployOptions,
  ): Promise<FunctionVersion> {
    const device = spec.instances.device;
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
    const created = await this.#o.registry.createVersion(spec, artifacts, options.by);
    const reason = `${WAITING_FOR_GPU} (instances.device ${device}; this node has none)${options.keepTraffic ? KEEP_TRAFFIC : ''}`;
    const state = { waitsFor: 'gpu', ...(options.keepTraffic ? { keepTraffic: true } : {}) } as const;
    await this.#o.registry.setStatus(spec.name, created.version, 'pending', reason, state);
    this.#o.records.forget(spec.name);
    this.#o.log?.info({ function: spec.name, version: created.version }, 'version waits for a node with a GPU');
    return { ...created, status: 'pending', reason, ...state };
  }

  /** A version that failed to load or failed its smoke request: recorded as failed, its pool stopped. */
  async #failed(name: string, created: FunctionVersion, error: unknown): Promise<FunctionVersion> {
    // The version keeps the headline, one clean line (what `deploy` and `versions` show; a model
    // writes its load errors); the whole message, a
    // TorchScript traceback included, is in the node's log and the function's (the pool's event).
    const detail = error instanceof Error ? error.message : String(error);
    const reason = safeLine(detail);
    this.#o.log?.warn({ function: name, version: created.version, reason: detail }, 'version failed to load');
    await this.#o.registry.setStatus(name, created.version, 'failed', reason);
    this.#o.records.forget(name);
    await this.#o.pools.stop(name, created.version);
    return { ...created, status: 'failed', reason };
  }

  /** A version that loaded and answered: ready, and the traffic moves to it as the deploy asked. */
  async #ready(
    name: string,
    created: FunctionVersion,
    options: DeployOptions,
  ): Promise<FunctionVersion & { canary?: Canary }> {
    await this.#o.registry.setStatus(name, created.version, 'ready');
    const record: FunctionRecord = (await this.#o.registry.get(name))!;
    this.#o.log?.info({ function: name, version: created.version }, 'version ready');
    if (options.canary && Object.keys(record.traffic).length > 0) {
      const canary = await this.#o.canaries.start(name, created.version, record.traffic, options.canary);
      return { ...created, status: 'ready', canary };
    }
    if (!options.keepTraffic || Object.keys(record.traffic).length === 0) {
      await this.#o.traffic.setTraffic(name, { [created.version]: 100 });
      if (options.canary)
        this.#o.logs.add({
          function: name,
          version: created.version,
          source: 'lifecycle',
          level: 'info',
          msg: `canary: no version served ${name} before v${created.version}, which takes all the traffic (nothing to compare it with)`,
        });
    }
    this.#o.records.forget(name);
    return { ...created, status: 'ready' };
  }

  /**
   * Loads a new version's pool, then sends it the spec's example (the smoke request) through
   * pre → forward → post, on the version itself, before any traffic may move to it. A failure is
   * the deploy's: the version is marked failed with the request's error, and traffic stays put.
   */
  async #startAndSmoke(name: string, v: FunctionVersion): Promise<void> {
    await this.#o.pools.obtain(name, v).start();
    const smoke = await smokeRequest(this.#o.artifacts, v);
    if (!smoke) return;
    try {
      const deadline = performance.now() + SMOKE_TIMEOUT_MS;
      await this.#o.calls.call(name, v, { kind: 'invoke', ...smoke }, { deadline });
    } catch (error) {
      const e = toHearthError(error);
      this.#o.log?.warn(
        // The message is the tenant's (its hook's or model's error): cut, as a failed call's detail is.
        {
          function: name,
          version: v.version,
          code: e.code,
          err: { message: clipBytes(e.message, 8192), stack: clipBytes(e.stack ?? '', 8192) },
        },
        'version failed its smoke request (spec example)',
      );
      this.#o.logs.add({
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
}
