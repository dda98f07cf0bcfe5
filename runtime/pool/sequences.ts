/**
 * The request path of a stateful model (spec.sequence): each sequence is placed on one instance
 * (a lane) and its requests run there in order, one row each, batched with other sequences' rows
 * on the same lane; the control inputs (START, END, READY, CORRID) are filled per row.
 */
import type { HearthError } from '../../sdk/errors.js';
import { toHearthError } from '../../sdk/errors.js';
import type { HookTensors } from '../../sdk/hook.js';
import type { FunctionSpec } from '../../sdk/spec/function-spec.js';
import type { Clock, SequenceRow } from '../batcher/index.js';
import { SequenceRouter } from '../batcher/index.js';
import type { Instances } from './instances.js';
import type { IoBinding } from './io-binding.js';
import type { Pending } from './pending.js';
import { settleable } from './pending.js';
import { checkSequenceRequest, sequenceControls } from './pool-tensors.js';
import type { PoolCounters } from './stats.js';
import { countForward } from './stats.js';
import type { InvokeOptions } from './types.js';

export class SequenceLanes {
  readonly #router: SequenceRouter<Pending>;

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
  enqueue(tensors: HookTensors, options: InvokeOptions): Promise<HookTensors> {
    const flags = checkSequenceRequest(this.spec, tensors, options.sequence);
    return settleable(tensors, undefined, options, (pending) =>
      this.#router.enqueue(pending, flags, (error) => pending.reject(error)),
    ) as Promise<HookTensors>;
  }

  /** A batch on its lane's instance: the callers' rows and fillers; each caller gets its own row back. */
  async #run(lane: number, rows: SequenceRow<Pending>[]): Promise<void> {
    const instance = this.instances.take(this.instances.at(lane)!);
    const callers = rows.flatMap((r) => (r.filler ? [] : [r.payload]));
    const t0 = performance.now();
    let outputs: HookTensors[] | HearthError;
    try {
      outputs = await this.instances.run(
        instance,
        this.binding(),
        rows.map((r) => (r.filler ? {} : r.payload.tensors)),
        sequenceControls(this.spec, rows),
        rows.map(() => 1),
      );
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
