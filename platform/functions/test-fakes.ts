/**
 * Small fakes for the unit tests of the functions' parts (never imported by the node): a registry in
 * memory with the real backends' rules that notes each write in order, and pools that load nothing
 * and note what they were asked.
 */
import { EventEmitter } from 'node:events';

import type { CallOptions, PoolCounters, PoolSummary, ServingPool } from '../../runtime/index.js';
import { newCounters } from '../../runtime/index.js';
import type { Canary } from '../../sdk/api/index.js';
import type { FunctionSpec } from '../../sdk/spec/function-spec.js';
import { parseSpec, versionKey } from '../../sdk/spec/index.js';
import type { TensorsByName } from '../../sdk/tensor.js';
import type { FunctionRecord, FunctionVersion, Registry, StatusChange } from '../registry/index.js';
import { applyCanary, applyNewVersion, applyScaling, applyStatus, applyTraffic, notFound } from '../registry/index.js';
import { summaryOf } from './pool-set.js';

/** A spec of `name` with one FP32 input and output, and `over` on top. */
export const specOf = (name: string, over: Record<string, unknown> = {}): FunctionSpec =>
  parseSpec({
    name,
    model: 'model.pt',
    inputs: [{ name: 'x', dtype: 'FP32', dims: [4] }],
    outputs: [{ name: 'y', dtype: 'FP32', dims: [3] }],
    ...over,
  });

/** A registry in memory; `writes` lists each change as `verb name detail`, in order. */
export class MemoryRegistry implements Registry {
  readonly kind = 'fs';
  readonly writes: string[] = [];
  readonly #records = new Map<string, FunctionRecord>();

  async createVersion(spec: FunctionSpec, artifacts: FunctionVersion['artifacts']): Promise<FunctionVersion> {
    const { record, version } = applyNewVersion(this.#records.get(spec.name), spec, artifacts);
    this.#records.set(spec.name, record);
    this.writes.push(`createVersion ${spec.name} v${version.version}`);
    return structuredClone(version);
  }

  async get(name: string): Promise<FunctionRecord | undefined> {
    const record = this.#records.get(name);
    return record && structuredClone(record);
  }

  async list(): Promise<FunctionRecord[]> {
    return [...this.#records.values()].map((r) => structuredClone(r));
  }

  setStatus(name: string, version: number, ...change: StatusChange): Promise<FunctionRecord> {
    return this.#update(`setStatus ${name} v${version} ${change[0]}`, name, (r) => applyStatus(r, version, ...change));
  }

  setTraffic(name: string, weights: Record<string, number>, previous?: Record<string, number>) {
    return this.#update(`setTraffic ${name} ${JSON.stringify(weights)}`, name, (r) =>
      applyTraffic(r, weights, previous),
    );
  }

  setScaling(name: string, version: number, scaling: FunctionSpec['scaling']): Promise<FunctionRecord> {
    return this.#update(`setScaling ${name} v${version}`, name, (r) => applyScaling(r, version, scaling));
  }

  setCanary(name: string, canary: Canary): Promise<FunctionRecord> {
    return this.#update(`setCanary ${name} ${canary.state}`, name, (r) => applyCanary(r, canary));
  }

  async delete(name: string): Promise<boolean> {
    this.writes.push(`delete ${name}`);
    return this.#records.delete(name);
  }

  async close(): Promise<void> {}

  async #update(write: string, name: string, change: (r: FunctionRecord) => FunctionRecord): Promise<FunctionRecord> {
    const record = this.#records.get(name);
    if (!record) throw notFound(name);
    const next = change(record);
    this.#records.set(name, next);
    this.writes.push(write);
    return structuredClone(next);
  }
}

/** A pool that loads nothing: `start` fails with `loadError` if set, a call with `callError`, else echoes. */
export class FakePool extends EventEmitter {
  state: ServingPool['state'] = 'cold';
  loadError: Error | undefined;
  callError: Error | undefined;
  counters: PoolCounters = newCounters();
  latency: { p50Ms: number; p99Ms: number; of: number } | undefined;
  readonly calls: { request?: unknown; tensors?: TensorsByName; options?: CallOptions }[] = [];
  readonly events = [];
  readonly device = 'cpu';
  readonly lastRequestAt = 0;

  constructor(
    readonly spec: FunctionSpec,
    readonly version: number,
  ) {
    super();
  }

  async start(): Promise<void> {
    this.state = 'loading';
    if (this.loadError) {
      this.state = 'failed';
      throw this.loadError;
    }
    this.state = 'warm';
  }

  async invoke(request: { body: Uint8Array; contentType: string }, options?: CallOptions) {
    this.calls.push({ request, options });
    if (this.callError) throw this.callError;
    return { body: request.body, contentType: request.contentType };
  }

  async infer(tensors: TensorsByName, options?: CallOptions): Promise<TensorsByName> {
    this.calls.push({ tensors, options });
    if (this.callError) throw this.callError;
    return tensors;
  }

  stats() {
    const instances = { total: 1, idle: 1, busy: 0, loading: 0 };
    const more = { queueDepth: 0, pending: 0, hookThreads: 0, latency: this.latency };
    return { ...this.counters, state: this.state, instances, ...more };
  }
}

/** This node's pools, as fakes: `asked` notes each start, warm and stop (`verb name@version`). */
export class FakePools {
  readonly asked: string[] = [];
  readonly #pools = new Map<string, FakePool>();
  /** The pool a version gets when it is first obtained (a test sets its failure before). */
  prepare: (pool: FakePool) => void = () => undefined;

  get(name: string, version: number): ServingPool | undefined {
    return this.#pools.get(versionKey(name, version)) as ServingPool | undefined;
  }

  /** The fake behind get(), to set its state or counters. */
  fake(name: string, version: number): FakePool | undefined {
    return this.#pools.get(versionKey(name, version));
  }

  obtain(name: string, v: FunctionVersion): ServingPool {
    let pool = this.#pools.get(versionKey(name, v.version));
    if (!pool || pool.state === 'stopped' || pool.state === 'failed') {
      pool = new FakePool(v.spec, v.version);
      this.prepare(pool);
      this.#pools.set(versionKey(name, v.version), pool);
      const start = pool.start.bind(pool);
      pool.start = () => {
        this.asked.push(`start ${versionKey(name, v.version)}`);
        return start();
      };
    }
    return pool as unknown as ServingPool;
  }

  warm(name: string, v: FunctionVersion): ServingPool {
    this.asked.push(`warm ${versionKey(name, v.version)}`);
    const pool = this.obtain(name, v);
    if (pool.state === 'cold') void pool.start().catch(() => undefined);
    return pool;
  }

  async stop(name: string, version: number, drain = false): Promise<void> {
    const pool = this.#pools.get(versionKey(name, version));
    if (!pool) return;
    this.#pools.delete(versionKey(name, version));
    this.asked.push(`${drain ? 'drain' : 'stop'} ${versionKey(name, version)}`);
    pool.state = 'stopped';
  }

  values(): IterableIterator<ServingPool> {
    return ([...this.#pools.values()] as unknown as ServingPool[]).values();
  }

  serves(name: string): boolean {
    return [...this.#pools.values()].some((p) => p.spec.name === name);
  }

  summaries(): PoolSummary[] {
    return [...this.values()].map(summaryOf);
  }

  async refreshStats(): Promise<void> {
    this.asked.push('refreshStats');
  }

  versionCounters(name: string, version: number): PoolCounters {
    return this.#pools.get(versionKey(name, version))?.counters ?? newCounters();
  }
}
