/**
 * The request path of a stateful model (spec.sequence): each sequence is placed on one instance
 * (a lane) and its requests run there in order, one row each, batched with other sequences' rows
 * on the same lane; the control inputs (START, END, READY, CORRID) are filled per row, and the
 * implicit state (spec.sequence.states) of each row's sequence is given to the model and kept from
 * what it returns, by sequence — so a row may move between batches (oldest) and keep its state.
 */
import type { HearthError } from '../../sdk/errors.js';
import { InferenceError, toHearthError } from '../../sdk/errors.js';
import type { FunctionSpec } from '../../sdk/spec/function-spec.js';
import type { TensorsByName } from '../../sdk/tensor.js';
import { numel } from '../../sdk/tensor.js';
import type { Clock, SequenceRow } from '../batcher/index.js';
import { SequenceRouter, sequenceKey } from '../batcher/index.js';
import type { Instances } from './instances.js';
import type { IoBinding } from './io-binding.js';
import type { Pending } from './pending.js';
import { settleable } from './pending.js';
import { checkSequenceRequest, sequenceInputs } from './pool-tensors.js';
import type { PoolCounters } from './stats.js';
import { countForward } from './stats.js';
import type { CallOptions } from './types.js';

export class SequenceLanes {
  readonly #router: SequenceRouter<Pending>;
  /** Each sequence's state (by state input name), from its last request's forward; gone with it. */
  readonly #states = new Map<string, TensorsByName>();

  constructor(
    private readonly spec: FunctionSpec & { sequence: NonNullable<FunctionSpec['sequence']> },
    clock: Clock,
    private readonly instances: Instances,
    private readonly binding: () => IoBinding,
    private readonly counters: PoolCounters,
  ) {
    this.#router = new SequenceRouter<Pending>(
      { ...spec.sequence, batchSize: Math.max(1, spec.maxBatchSize), model: spec.name },
      (lane, rows) => void this.#run(lane, rows),
      clock,
      (key) => this.#states.delete(key),
    );
  }

  get queueDepth(): number {
    return this.#router.queueDepth;
  }

  /** One lane per instance: added with each instance, kept until the pool stops (it holds state). */
  addLane(): void {
    this.#router.addLane();
  }

  close(): void {
    this.#router.close();
  }

  /** A request of a sequence: one row, queued behind its sequence's earlier requests. */
  enqueue(tensors: TensorsByName, options: CallOptions): Promise<TensorsByName> {
    const flags = checkSequenceRequest(this.spec, tensors, options.sequence);
    return settleable(tensors, undefined, options, (pending) =>
      this.#router.enqueue(pending, flags, (error) => pending.reject(error)),
    ) as Promise<TensorsByName>;
  }

  /**
   * Takes each row's next state out of its outputs (callers are not answered with it) and keeps it
   * for the row's sequence — unless that was its END request, or it has gone meanwhile (idle).
   */
  #keep(rows: SequenceRow<Pending>[], keys: (string | undefined)[], outputs: TensorsByName[]): void {
    const states = this.spec.sequence.states;
    rows.forEach((r, i) => {
      const out = outputs[i]!;
      const next: TensorsByName = {};
      for (const st of states) {
        const t = out[st.output];
        delete out[st.output];
        if (!t || t.dtype !== st.dtype || numel(t.shape) !== numel(st.dims))
          throw new InferenceError(
            `the model's state output "${st.output}" is ${t ? `${t.dtype} [${t.shape.join(', ')}]` : 'missing'}; sequence_batching.state says ${st.dtype} [${st.dims.join(', ')}] a row`,
          );
        // Its own copy: the batch's output buffer is the callers' to keep.
        next[st.input] = { ...t, data: t.data.slice() } as typeof t;
      }
      const key = keys[i];
      if (key === undefined || r.filler) return;
      if (r.end || !this.#router.has(key)) this.#states.delete(key);
      else this.#states.set(key, next);
    });
  }

  /** A batch on its lane's instance: the callers' rows and fillers; each caller gets its own row back. */
  async #run(lane: number, rows: SequenceRow<Pending>[]): Promise<void> {
    const instance = this.instances.take(this.instances.at(lane)!);
    const callers = rows.flatMap((r) => (r.filler ? [] : [r.payload]));
    const keys = rows.map((r) => (r.filler ? undefined : sequenceKey(r.caller, r.id)));
    const t0 = performance.now();
    let outputs: TensorsByName[] | HearthError;
    try {
      outputs = await this.instances.run(
        instance,
        this.binding(),
        rows.map((r) => (r.filler ? {} : r.payload.tensors)),
        sequenceInputs(
          this.spec,
          rows,
          keys.map((k) => (k === undefined ? undefined : this.#states.get(k))),
        ),
        rows.map(() => 1),
      );
      if (this.spec.sequence.states.length > 0) this.#keep(rows, keys, outputs);
    } catch (error) {
      outputs = toHearthError(error);
    }
    this.instances.free(instance);
    countForward(this.counters, rows.length, callers.length, (performance.now() - t0) * 1000);
    try {
      if (outputs instanceof Error) for (const c of callers) c.reject(outputs);
      else
        rows.forEach((r, i) => {
          if (!r.filler) r.payload.resolve(outputs[i]!);
        });
    } finally {
      this.#router.release(lane);
    }
  }
}
