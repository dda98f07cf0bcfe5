/**
 * The requests waiting for a hook pool's pre, and the bodies they send: a buffer of their own, or a
 * slot of the pool's exchange (exchange.ts).
 */
import type { HearthError } from '../../sdk/errors.js';
import { toHearthError } from '../../sdk/errors.js';
import type { TensorsByName } from '../../sdk/tensor.js';
import { copyOf, ownsWholeBuffer } from '../tensors/index.js';
import type { Exchange, Placed, Slot } from './exchange.js';
import type { HookCallOptions } from './hook-threads.js';
import type { RawRequest } from './messages.js';

/**
 * What pre answers: the tensors, the body post will see, and where the tensors lie in the pool's
 * exchange (exchange.ts), `release`, for the caller to call once it is done with them.
 */
export interface PreOutcome {
  tensors: TensorsByName;
  body: Uint8Array;
  release?: () => void;
  /**
   * Another hold on where the tensors lie (a forward that reads them, until it ends), and the
   * function that lets it go; undefined once `release` has let them go (their place may be reused).
   */
  hold?: () => (() => void) | undefined;
}

export interface PreWaiter {
  request: RawRequest;
  /** Its slot in the exchange (a thread's request only). */
  slot?: Slot;
  options: HookCallOptions;
  resolve(value: { tensors: TensorsByName; body: Uint8Array; placed?: Placed }): void;
  reject(error: HearthError): void;
}

const EMPTY = new Uint8Array(0);

/** The bytes of a waiter's body, wherever it lies. */
export const bodyBytes = (w: PreWaiter): number =>
  w.slot && w.slot.body >= 0 ? w.slot.body : w.request.body.byteLength;

/**
 * The request with its body the whole of an ArrayBuffer of its own, as the SDK promises hooks
 * (HookRequest): copied where it is a view of a larger one (a node's reused body buffer, a socket
 * chunk), which a thread would otherwise be handed whole, and the caller's buffer moved away. A
 * group's bodies are copied anyway, and a sandbox's crossing packs its own (crossing.ts).
 */
export function ownBody(request: RawRequest): RawRequest {
  return ownsWholeBuffer(request.body) ? request : { ...request, body: copyOf(request.body) };
}

/**
 * A request bound for a hook thread: its body and tensors in a slot of the exchange where they
 * are large (exchange.ts; the caller releases it once done with the tensors), or else its body a
 * buffer of its own, to move there.
 */
export function threadWaiter(
  exchange: Exchange | undefined,
  request: RawRequest,
  options: HookCallOptions,
  resolve: (value: PreOutcome) => void,
  reject: (error: HearthError) => void,
): PreWaiter {
  const placed = exchange?.place(request.body);
  if (!exchange || !placed) return { request: ownBody(request), options, resolve, reject };
  const { slot, hold: mine } = placed;
  const { letGo: release, again: hold } = mine;
  const inSlot = slot.body >= 0;
  return {
    request: inSlot ? { body: EMPTY, contentType: request.contentType } : ownBody(request),
    slot,
    options,
    resolve: ({ tensors, body, placed }) => {
      try {
        // The body post sees is the caller's, held by it until the request is answered.
        resolve({ tensors: exchange.views(tensors, placed, slot), body: inSlot ? request.body : body, release, hold });
      } catch (error) {
        release();
        reject(toHearthError(error));
      }
    },
    reject: (error) => {
      release();
      reject(error);
    },
  };
}
