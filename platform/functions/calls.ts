/**
 * Calls: the version a request goes to (the one named, or one picked by the traffic weights) and
 * where it runs — this node's pool, cold-started by the request if it is cold, or in cluster mode
 * the node that holds the version warm or won the lease to load it.
 */
import type { CallOptions, InvokeResponse } from '../../runtime/index.js';
import { UnavailableError } from '../../sdk/errors.js';
import type { TensorsByName } from '../../sdk/tensor.js';
import type { Cluster, Forwarded, ForwardedReply } from '../cluster/index.js';
import { markVersion } from '../errors/index.js';
import type { FunctionVersion } from '../registry/index.js';
import { inFunctionWords } from '../registry/index.js';
import type { PoolSet } from './pool-set.js';
import { callPool } from './pool-set.js';
import type { RecordCache } from './records.js';
import type { RoutedCalls } from './routed.js';

export interface CallsParts {
  records: Pick<RecordCache, 'resolve'>;
  pools: Pick<PoolSet, 'get' | 'warm'>;
  /** Cluster mode: where else a version is warm, the cold-start lease, and forwarding. */
  cluster?: Pick<Cluster, 'claimColdStart' | 'forward' | 'warmElsewhere'>;
  /** Functions unloaded on this node (Triton's repository unload): a call serves one again. */
  unloaded: Set<string>;
  /** Where the calls the traffic split sent are counted (a canary is judged by them alone). */
  routed?: RoutedCalls;
}

/** Rethrows a call's error marked with the version it failed on (versionOf), for the function's log. */
const failedIn =
  (version: number) =>
  (error: unknown): never => {
    markVersion(error, version);
    throw error;
  };

export class Calls {
  readonly #o: CallsParts;

  constructor(parts: CallsParts) {
    this.#o = parts;
  }

  /** The version a request goes to: the one named, else one picked by the traffic weights. */
  resolve(name: string, version?: number): Promise<FunctionVersion> {
    return this.#o.records.resolve(name, version);
  }

  /** A request through the hooks, to the version named or picked by traffic. */
  async invoke(
    name: string,
    version: number | undefined,
    request: { body: Uint8Array; contentType: string },
    options: CallOptions = {},
  ): Promise<InvokeResponse & { version: number }> {
    const v = await this.resolve(name, version).catch(inFunctionWords(name, version));
    const result = await this.#counted(name, version, v, { kind: 'invoke', ...request }, options).catch(
      failedIn(v.version),
    );
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
    const result = await this.#counted(name, version, v, { kind: 'infer', tensors }, options).catch(
      failedIn(v.version),
    );
    if (result.kind !== 'infer') throw new UnavailableError('a node answered an infer with a body');
    return { outputs: result.tensors, version: v };
  }

  /** Here, or (cluster mode) on the node that holds the version warm or is loading it. */
  async call(name: string, v: FunctionVersion, call: Forwarded, options: CallOptions): Promise<ForwardedReply> {
    this.#o.unloaded.delete(name);
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

  /** The call; counted for the version's canary when the traffic split picked it (no version named). */
  async #counted(
    name: string,
    named: number | undefined,
    v: FunctionVersion,
    call: Forwarded,
    options: CallOptions,
  ): Promise<ForwardedReply> {
    const routed = this.#o.routed;
    if (named !== undefined || !routed) return this.call(name, v, call, options);
    const t0 = performance.now();
    try {
      const reply = await this.call(name, v, call, options);
      routed.count(name, v.version, (performance.now() - t0) * 1000, false);
      return reply;
    } catch (error) {
      routed.count(name, v.version, (performance.now() - t0) * 1000, true);
      throw error;
    }
  }

  /** Whether another node should run the version's calls (never outside a cluster). */
  async elsewhere(name: string, v: FunctionVersion): Promise<boolean> {
    const cluster = this.#o.cluster;
    return cluster !== undefined && (await this.#elsewhere(cluster, name, v));
  }

  #local(name: string, v: FunctionVersion, call: Forwarded, options: CallOptions): Promise<ForwardedReply> {
    return callPool(this.#o.pools.warm(name, v), v.version, call, options);
  }

  /** Cluster mode: another node holds the version warm, or won the lease to load it. */
  async #elsewhere(cluster: NonNullable<CallsParts['cluster']>, name: string, v: FunctionVersion): Promise<boolean> {
    const local = this.#o.pools.get(name, v.version);
    if (local && (local.state === 'warm' || local.state === 'loading')) return false;
    if (cluster.warmElsewhere(name, v.version)) return true;
    return !(await cluster.claimColdStart(name, v.version));
  }
}
