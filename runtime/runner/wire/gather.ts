/**
 * Requests without hooks, batched where they arrive: the KServe and gRPC infer requests that reach
 * a runner pool in one turn of the node's event loop cross to the runner as one call — their
 * tensors one after another in one blob per input (written once, into the arena), one frame out
 * and one reply back, the outputs cut into each caller's rows as views. The runner's pool takes
 * the call as one request of all their rows (its batcher may add others to the batch) and counts
 * it as that many requests (CallOptions.requests).
 *
 * Gathered: requests to a batching function (maxBatchSize > 1, not a sequence model, no BYTES
 * input or output) that pass the spec's checks with fewer than maxBatchSize rows, carry no deadline
 * of their own (those go alone, each timed by the runner) and no sequence; together only those of
 * the same dtypes, inner shapes and priority, up to maxBatchSize rows a call. Any other request
 * goes alone, as before, and so does a request that finds the runner idle and nothing gathered (a
 * lone request leaves at once). A call's failure is each of its callers'.
 *
 * A caller that goes away is answered at once; the call runs on for the others, and is cancelled
 * once every caller has gone.
 */
import type { HearthError } from '../../../sdk/errors.js';
import { CancelledError, toHearthError } from '../../../sdk/errors.js';
import type { FunctionSpec } from '../../../sdk/spec/function-spec.js';
import type { TensorsByName } from '../../../sdk/tensor.js';
import { bytesOf } from '../../../sdk/tensor.js';
import type { CallOptions } from '../../pool/index.js';
import { rowViews } from '../../pool/index.js';
import { batchSignature, checkTensors } from '../../tensors/index.js';
import type { OutBlob } from './channel.js';
import type { WireTensors } from './protocol.js';

/** Where calls go: one runner. */
export interface Target {
  /** Sends one call of wire tensors and their blobs; its outputs. */
  send(wire: WireTensors, blobs: OutBlob[], options: CallOptions): Promise<TensorsByName>;
  /** Lets the calls sent go now, not at the end of the next turn. */
  flush(): void;
}

interface Member {
  tensors: TensorsByName;
  rows: number;
  target: Target;
  priority: number | undefined;
  signal: AbortSignal | undefined;
  onAbort: () => void;
  resolve(outputs: TensorsByName): void;
  reject(error: HearthError): void;
  settled: boolean;
}

export class Gatherer {
  readonly #spec: FunctionSpec;
  /** Whether the spec's requests can be gathered at all. */
  readonly #on: boolean;
  /** This turn's requests, by batch signature and priority, in arrival order. */
  #groups = new Map<string, Member[]>();

  constructor(spec: FunctionSpec) {
    this.#spec = spec;
    this.#on =
      spec.maxBatchSize > 1 && !spec.sequence && ![...spec.inputs, ...spec.outputs].some((t) => t.dtype === 'BYTES');
  }

  /** Whether no request waits for the end of this turn. */
  get empty(): boolean {
    return this.#groups.size === 0;
  }

  /**
   * The request's outputs, once the call it is gathered into answers; undefined for a request that
   * is not one to gather (the caller sends it alone).
   */
  take(tensors: TensorsByName, options: CallOptions, target: Target): Promise<TensorsByName> | undefined {
    const spec = this.#spec;
    if (!this.#on || options.deadline !== undefined || options.sequence || options.signal?.aborted) return undefined;
    let rows: number;
    try {
      rows = checkTensors(tensors, spec.inputs, spec.maxBatchSize);
    } catch {
      // Its error is its own: the runner's pool gives it.
      return undefined;
    }
    if (rows >= spec.maxBatchSize) return undefined;
    const key = `${options.priority ?? ''}|${batchSignature(tensors, spec.inputs, spec.maxBatchSize)}`;
    return new Promise<TensorsByName>((resolve, reject) => {
      const member: Member = {
        tensors,
        rows,
        target,
        priority: options.priority,
        signal: options.signal,
        onAbort: () => undefined,
        resolve,
        reject,
        settled: false,
      };
      if (this.#groups.size === 0) setImmediate(this.#flush);
      const group = this.#groups.get(key);
      if (group) group.push(member);
      else this.#groups.set(key, [member]);
    });
  }

  readonly #flush = (): void => {
    const groups = this.#groups;
    this.#groups = new Map();
    const max = this.#spec.maxBatchSize;
    const targets = new Set<Target>();
    for (const members of groups.values()) {
      let call: Member[] = [];
      let rows = 0;
      for (const m of members) {
        targets.add(m.target);
        if (call.length > 0 && (rows + m.rows > max || m.target !== call[0]!.target)) {
          this.#call(call, rows);
          call = [];
          rows = 0;
        }
        call.push(m);
        rows += m.rows;
      }
      this.#call(call, rows);
    }
    for (const target of targets) target.flush();
  };

  /** One call for `members`, their `total` rows. */
  #call(members: Member[], total: number): void {
    const spec = this.#spec;
    const wire: WireTensors = {};
    const blobs: OutBlob[] = [];
    for (const input of spec.inputs) {
      const first = members[0]!.tensors[input.name]!;
      wire[input.name] = { dtype: first.dtype, shape: [total, ...first.shape.slice(1)], blob: blobs.length };
      blobs.push(members.map((m) => bytesOf(m.tensors[input.name]!.data)));
    }
    const controller = new AbortController();
    let left = members.length;
    let done = false;
    const settle = (m: Member, fn: () => void): void => {
      if (m.settled) return;
      m.settled = true;
      m.signal?.removeEventListener('abort', m.onAbort);
      fn();
      if (--left === 0 && !done) controller.abort();
    };
    for (const m of members) {
      m.onAbort = () => settle(m, () => m.reject(new CancelledError('the request was cancelled')));
      m.signal?.addEventListener('abort', m.onAbort, { once: true });
      if (m.signal?.aborted) m.onAbort();
    }
    const { priority } = members[0]!;
    const options: CallOptions = {
      signal: controller.signal,
      requests: members.length,
      ...(priority === undefined ? {} : { priority }),
    };
    members[0]!.target.send(wire, blobs, options).then(
      (outputs) => {
        done = true;
        let pieces: Map<string, ReturnType<typeof rowViews>>;
        try {
          const rows = members.map((m) => m.rows);
          pieces = new Map(Object.entries(outputs).map(([name, t]) => [name, rowViews(name, t, rows, total)]));
        } catch (error) {
          for (const m of members) settle(m, () => m.reject(toHearthError(error)));
          return;
        }
        for (const [i, m] of members.entries())
          settle(m, () => m.resolve(Object.fromEntries([...pieces].map(([name, parts]) => [name, parts[i]!]))));
      },
      (error: unknown) => {
        done = true;
        const e = toHearthError(error);
        for (const m of members) settle(m, () => m.reject(e));
      },
    );
  }
}
