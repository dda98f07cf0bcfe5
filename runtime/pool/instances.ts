/**
 * A pool's model instances: every one it holds, the idle ones a batch can take, and one forward on
 * an instance under the spec's hard time limit, cut back into each request's rows.
 */

import type { FunctionSpec } from '../../sdk/spec/function-spec.js';
import type { Tensor, TensorsByName } from '../../sdk/tensor.js';
import type { ForwardResult, Model } from '../engine/index.js';
import type { IoBinding } from './io-binding.js';
import { checkOutputBytes, outputLimit } from './output-checks.js';
import { forwardArgs } from './pool-tensors.js';
import { splitOutputs } from './split.js';

export class Instances {
  readonly #all: Model[] = [];
  readonly #idle: Model[] = [];

  /** `overran` hears of a forward that runs past spec.limits.forwardTimeoutMs. */
  constructor(
    private readonly spec: FunctionSpec,
    private readonly overran: (rows: number, limitMs: number) => void,
  ) {}

  get total(): number {
    return this.#all.length;
  }

  get idle(): number {
    return this.#idle.length;
  }

  /** The instance `index` (a sequence lane's), or undefined. */
  at(index: number): Model | undefined {
    return this.#all[index];
  }

  add(instance: Model): void {
    this.#all.push(instance);
    this.#idle.push(instance);
  }

  /** Takes an idle instance (the batcher only runs a batch when one is idle). */
  takeIdle(): Model {
    return this.#idle.pop()!;
  }

  /** Marks `instance` busy, whether or not it was idle (a sequence lane's own instance). */
  take(instance: Model): Model {
    const at = this.#idle.indexOf(instance);
    if (at >= 0) this.#idle.splice(at, 1);
    return instance;
  }

  free(instance: Model): void {
    this.#idle.push(instance);
  }

  /** Removes and disposes an idle instance, keeping at least one; false when there is none to remove. */
  removeIdle(): boolean {
    if (this.#all.length <= 1 || this.#idle.length === 0) return false;
    const instance = this.#idle.pop()!;
    this.#all.splice(this.#all.indexOf(instance), 1);
    instance.dispose();
    return true;
  }

  disposeAll(): void {
    for (const m of this.#all.splice(0)) m.dispose();
    this.#idle.length = 0;
  }

  /**
   * One forward of `requests` (one part each) on `instance`, its outputs cut back into `rows[i]` rows
   * for request i. Past the time limit `overran` is told (a runner process then kills itself and is
   * restarted; in-process, the instance stays stuck and its callers get their deadline errors): a
   * forward on a native thread cannot be stopped from here. `threads`: this forward's intra-op
   * threads (default: the engine's configured count). `limits[i]`: the bytes request i's outputs
   * may take (default: limits.maxResponseMb each); the engine refuses outputs past their sum before
   * it copies any.
   */
  async run(
    instance: Model,
    binding: IoBinding,
    requests: TensorsByName[],
    controls: Tensor[],
    rows: readonly number[],
    threads?: number,
    limits: readonly number[] = requests.map(() => outputLimit(this.spec, false)),
  ): Promise<TensorsByName[]> {
    const args = forwardArgs(this.spec, binding, requests, controls);
    const maxOutputBytes = limits.reduce((n, l) => n + l, 0);
    const limitMs = this.spec.limits.forwardTimeoutMs;
    const total = rows.reduce((n, r) => n + r, 0);
    let settled = false;
    // Judged after the turn's I/O, not in its timers: where this thread was held past the limit (a
    // hook's turn inline, a long collection), a forward that ended meanwhile has its completion
    // waiting in that I/O, read before setImmediate's callbacks run.
    const timer = setTimeout(
      () =>
        setImmediate(() => {
          if (!settled) this.overran(total, limitMs);
        }),
      limitMs,
    );
    let result: ForwardResult;
    try {
      result = await (requests.length === 1
        ? instance.forward(
            args.map((parts) => parts[0]!),
            binding.dictKeys,
            threads,
            maxOutputBytes,
          )
        : instance.forwardBatch(args, binding.dictKeys, threads, maxOutputBytes));
    } finally {
      settled = true;
      clearTimeout(timer);
    }
    const outputs = splitOutputs(this.spec, binding, result, rows);
    checkOutputBytes(outputs, limits);
    return outputs;
  }
}
