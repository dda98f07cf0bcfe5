/**
 * A request inside a pool, and how a batch answers its requests. A request is a promise that
 * settles exactly once — by its batch (resolve or reject), by its deadline, or by its caller's
 * cancellation, whichever comes first. Past the queue, a deadline or a cancellation still answers
 * the caller at once; the batch the request is in runs on, and its share of the outputs is dropped.
 */
import type { HearthError } from '../../sdk/errors.js';
import { CancelledError, DeadlineExceededError, toHearthError, UnavailableError } from '../../sdk/errors.js';
import type { Tensor, TensorsByName } from '../../sdk/tensor.js';
import type { HookPool, RawRequest } from '../hooks/index.js';
import type { CallOptions, InvokeResponse } from './types.js';

export interface Pending {
  tensors: TensorsByName;
  /** Present for hook requests; raw infer() requests have none. */
  request?: RawRequest;
  deadline?: number;
  /** The callers it carries (CallOptions.requests). */
  requests: number;
  resolve(value: TensorsByName | InvokeResponse): void;
  reject(error: HearthError): void;
  settled: boolean;
  /** Where its tensors lie in the hook pool's exchange, a hold for the forward that reads them (PreOutcome.hold). */
  hold?: () => (() => void) | undefined;
}

/**
 * A pending request for `tensors`, handed to `queue` with the milliseconds left before its
 * deadline; the promise settles once (see above). A request whose deadline has passed is refused
 * before it is queued.
 */
export function settleable(
  tensors: TensorsByName,
  request: RawRequest | undefined,
  options: CallOptions,
  queue: (pending: Pending, remainingMs: number | undefined) => void,
): Promise<TensorsByName | InvokeResponse> {
  return new Promise((resolve, reject) => {
    const pending: Pending = {
      tensors,
      request,
      deadline: options.deadline,
      requests: options.requests ?? 1,
      resolve,
      reject,
      settled: false,
    };
    const settle = (fn: () => void): void => {
      if (pending.settled) return;
      pending.settled = true;
      cleanup();
      fn();
    };
    pending.resolve = (v) => settle(() => resolve(v));
    pending.reject = (e) => settle(() => reject(e));
    let timer: NodeJS.Timeout | undefined;
    const onAbort = (): void => pending.reject(new CancelledError('the request was cancelled'));
    const cleanup = (): void => {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
    };
    const remainingMs = options.deadline === undefined ? undefined : options.deadline - performance.now();
    if (remainingMs !== undefined) {
      if (remainingMs <= 0)
        return pending.reject(new DeadlineExceededError("the request's deadline passed before it was queued"));
      timer = setTimeout(
        () => pending.reject(new DeadlineExceededError("the request's deadline passed before its response was ready")),
        remainingMs,
      );
    }
    options.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      queue(pending, remainingMs);
    } catch (error) {
      pending.reject(toHearthError(error));
    }
  });
}

/**
 * Answers a batch's requests from their outputs (`outputs[i]` is `pendings[i]`'s): a raw request at
 * once, the hook requests still waiting after one post call for all of them, under the earliest of
 * their deadlines; `inline` when the batch is all the pool holds (HookPool's inline calls). How long
 * post took (µs), when it ran.
 */
export async function answerBatch(
  pendings: readonly Pending[],
  outputs: readonly TensorsByName[],
  hooks: HookPool | undefined,
  inline = false,
): Promise<number | undefined> {
  const hooked = pendings.map((p, i) => ({ p, outputs: outputs[i]! })).filter(({ p }) => p.request && !p.settled);
  pendings.forEach((p, i) => {
    if (!p.request) p.resolve(outputs[i]!);
  });
  if (hooked.length === 0) return undefined;
  const t0 = performance.now();
  try {
    if (!hooks) throw new UnavailableError('the pool has no hook threads');
    const deadline = Math.min(...hooked.map(({ p }) => p.deadline ?? Infinity));
    const outcomes = await hooks.post(
      hooked.map(({ p, outputs }) => ({ outputs, request: p.request! })),
      { deadline: deadline === Infinity ? undefined : deadline, inline },
    );
    outcomes.forEach((o, i) => {
      if (o.ok) hooked[i]!.p.resolve({ body: o.body, contentType: o.contentType });
      else hooked[i]!.p.reject(o.error);
    });
  } catch (error) {
    for (const { p } of hooked) p.reject(toHearthError(error));
  }
  return (performance.now() - t0) * 1000;
}

/**
 * A batch's inputs, held where they lie in the hook pool's exchange until `letGo` (after the
 * forward): a request answered already (its deadline) that let its place there go runs on zeros
 * instead (its answer is dropped; the place may be another request's now).
 */
export function heldInputs(payloads: readonly Pending[]): { inputs: TensorsByName[]; letGo: () => void } {
  const holds = payloads.map((p) => p.hold?.());
  const inputs = payloads.map((p, i) => (p.hold && !holds[i] ? zerosForShared(p.tensors) : p.tensors));
  return {
    inputs,
    letGo: () => {
      for (const h of holds) h?.();
    },
  };
}

/** `tensors` with those that are views of a SharedArrayBuffer made zeros of their own. */
function zerosForShared(tensors: TensorsByName): TensorsByName {
  const out: TensorsByName = {};
  for (const [name, t] of Object.entries(tensors)) {
    const View = t.data.constructor as new (n: number) => Tensor['data'];
    out[name] = t.data.buffer instanceof SharedArrayBuffer ? ({ ...t, data: new View(t.data.length) } as Tensor) : t;
  }
  return out;
}
