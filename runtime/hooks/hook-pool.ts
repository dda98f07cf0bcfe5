/**
 * A function version's hook threads: a piscina pool running its bundled hook (or the default JSON
 * hook), never on the event loop.
 *
 * Isolation: threads get an empty environment (no platform secrets) and a heap limit. A task past
 * its deadline is aborted, which terminates its thread; piscina starts a replacement. A thread that
 * exhausts its heap dies the same way. Either way only that request fails, with a HookError naming
 * the hook and the phase.
 */
import { availableParallelism } from 'node:os';

import { Piscina } from 'piscina';

import type { HearthError } from '../../sdk/errors.js';
import { DeadlineExceededError, HookError, InvalidInputError } from '../../sdk/errors.js';
import type { HookTensors } from '../../sdk/hook.js';
import type { FunctionSpec } from '../../sdk/spec/function-spec.js';
import { hookWorkerFile } from './bundle.js';
import type { HookFailure, HookTask, HookWorkerData, PostResult, PreResult, RawRequest, SetupResult } from './messages.js';

export interface HookPoolOptions {
  spec: FunctionSpec;
  version: number;
  /** The bundled hook; absent: the default JSON hook. */
  bundlePath?: string;
  /** Longest a pre or post may run (ms); a request's own deadline may cut it shorter. Default 10 s. */
  timeoutMs?: number;
  /** Heap limit per hook thread. Default 256 MiB. */
  maxHeapMb?: number;
  /** Hook threads. Default: half the cores, at least 1, at most 4. */
  threads?: number;
}

export interface CallOptions {
  /** Absolute deadline, performance.now() milliseconds. */
  deadline?: number;
  signal?: AbortSignal;
}

export type PostOutcome = { ok: true; body: Uint8Array; contentType: string } | { ok: false; error: HearthError };

export class HookPool {
  readonly name: string;
  readonly #piscina: Piscina;
  readonly #timeoutMs: number;

  private constructor(piscina: Piscina, name: string, timeoutMs: number) {
    this.#piscina = piscina;
    this.name = name;
    this.#timeoutMs = timeoutMs;
  }

  /** Starts the threads and runs the hook's setup once, so a hook that cannot start fails here. */
  static async create(options: HookPoolOptions): Promise<HookPool> {
    const { spec } = options;
    const name = options.bundlePath ? `${spec.name}/${spec.hook ?? 'hook'}` : `${spec.name}/default`;
    const workerData: HookWorkerData = {
      bundlePath: options.bundlePath,
      hookName: name,
      function: spec.name,
      version: options.version,
      inputs: spec.inputs,
      outputs: spec.outputs,
      maxBatchSize: spec.maxBatchSize,
    };
    const threads = options.threads ?? Math.min(4, Math.max(1, Math.floor(availableParallelism() / 2)));
    const piscina = new Piscina({
      filename: await hookWorkerFile(),
      workerData,
      minThreads: 1,
      maxThreads: threads,
      idleTimeout: 60_000,
      env: {},
      execArgv: [],
      resourceLimits: { maxOldGenerationSizeMb: options.maxHeapMb ?? 256, maxYoungGenerationSizeMb: 32 },
    });
    const pool = new HookPool(piscina, name, options.timeoutMs ?? 10_000);
    try {
      const result = (await pool.#run({ op: 'setup' }, 'setup', {})) as SetupResult;
      if (!result.ok) throw pool.#failure(result);
    } catch (error) {
      await piscina.destroy();
      throw error;
    }
    return pool;
  }

  /** Runs pre on a request; the body comes back (moved there and back, never copied). */
  async pre(request: RawRequest, options: CallOptions): Promise<{ tensors: HookTensors; body: Uint8Array }> {
    const result = (await this.#run({ op: 'pre', request }, 'pre', options, [request.body.buffer])) as PreResult;
    if (!result.ok) throw this.#failure(result);
    return { tensors: result.tensors, body: result.body };
  }

  /** Runs post for every request of a batch in one task; each request gets its own outcome. */
  async post(items: { outputs: HookTensors; request: RawRequest }[], options: CallOptions): Promise<PostOutcome[]> {
    const buffers = new Set<ArrayBufferLike>();
    for (const item of items) for (const t of Object.values(item.outputs)) buffers.add(t.data.buffer);
    const result = (await this.#run({ op: 'post', items }, 'post', options, [...buffers])) as PostResult;
    if (!result.ok) throw this.#failure(result);
    return result.items.map((r) => (r.ok ? r : { ok: false, error: this.#failure(r) }));
  }

  get threads(): number {
    return this.#piscina.threads.length;
  }

  /** Tasks queued for a free hook thread. */
  get queueSize(): number {
    return this.#piscina.queueSize;
  }

  async close(): Promise<void> {
    await this.#piscina.destroy();
  }

  #failure(f: HookFailure): HearthError {
    if (f.kind === 'input') return new InvalidInputError(f.message, { reason: f.reason });
    return new HookError(`hook ${this.name} failed in ${f.phase}: ${f.message}`, { reason: f.phase });
  }

  async #run(task: HookTask, phase: HookFailure['phase'], options: CallOptions, transfer: ArrayBufferLike[] = []): Promise<unknown> {
    const now = performance.now();
    const budget = Math.min(this.#timeoutMs, options.deadline === undefined ? Infinity : options.deadline - now);
    if (budget <= 0) throw new DeadlineExceededError(`the request's deadline passed before the hook's ${phase} ran`);
    const timer = new AbortController();
    const timeout = setTimeout(() => timer.abort(), budget);
    const signal = options.signal ? AbortSignal.any([options.signal, timer.signal]) : timer.signal;
    try {
      const transferList = [...new Set(transfer)].filter((b): b is ArrayBuffer => b instanceof ArrayBuffer && b.byteLength > 0);
      return await this.#piscina.run(task, { signal, transferList });
    } catch (error) {
      if (options.signal?.aborted) throw error;
      if (timer.signal.aborted) {
        if (budget < this.#timeoutMs) throw new DeadlineExceededError(`the request's deadline passed while the hook's ${phase} ran; its thread was replaced`, { cause: error });
        throw new HookError(`hook ${this.name} failed in ${phase}: ran past its ${this.#timeoutMs} ms limit and was terminated`, { cause: error, reason: phase });
      }
      const code = (error as { code?: string }).code;
      const why = code === 'ERR_WORKER_OUT_OF_MEMORY' ? 'ran out of memory; its thread was replaced' : `its thread failed: ${(error as Error).message}`;
      throw new HookError(`hook ${this.name} failed in ${phase}: ${why}`, { cause: error, reason: phase });
    } finally {
      clearTimeout(timeout);
    }
  }
}
