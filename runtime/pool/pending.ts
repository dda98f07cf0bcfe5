/**
 * A request inside a pool: a promise that settles exactly once — by its batch (resolve or reject),
 * by its deadline, or by its caller's cancellation, whichever comes first. Past the queue, a
 * deadline or a cancellation still answers the caller at once; the batch the request is in runs on,
 * and its share of the outputs is dropped.
 */
import type { HearthError } from '../../sdk/errors.js';
import { CancelledError, DeadlineExceededError, toHearthError } from '../../sdk/errors.js';
import type { HookTensors } from '../../sdk/hook.js';
import type { RawRequest } from '../hooks/index.js';
import type { InvokeOptions, InvokeResponse } from './types.js';

export interface Pending {
  tensors: HookTensors;
  /** Present for hook requests; raw infer() requests have none. */
  request?: RawRequest;
  deadline?: number;
  resolve(value: HookTensors | InvokeResponse): void;
  reject(error: HearthError): void;
  settled: boolean;
}

/**
 * A pending request for `tensors`, handed to `queue` with the milliseconds left before its
 * deadline; the promise settles once (see above). A request whose deadline has passed is refused
 * before it is queued.
 */
export function settleable(
  tensors: HookTensors,
  request: RawRequest | undefined,
  options: InvokeOptions,
  queue: (pending: Pending, remainingMs: number | undefined) => void,
): Promise<HookTensors | InvokeResponse> {
  return new Promise((resolve, reject) => {
    const pending: Pending = { tensors, request, deadline: options.deadline, resolve, reject, settled: false };
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
