/**
 * The requests waiting for a hook pool's pre, the bodies they send (a buffer of their own, or a
 * slot of the pool's exchange: exchange.ts), and the errors they fail with.
 */
import type { HearthError } from '../../sdk/errors.js';
import { HookError, InvalidInputError, toHearthError } from '../../sdk/errors.js';
import type { TensorsByName } from '../../sdk/tensor.js';
import { clipBytes } from '../../sdk/text.js';
import { copyOf, ownsWholeBuffer } from '../tensors/index.js';
import type { Exchange, Placed, Slot } from './exchange.js';
import type { HookCallOptions } from './hook-threads.js';
import type { HookFailure, RawRequest } from './messages.js';

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
  const slot = exchange?.place(request.body);
  if (!exchange || !slot) return { request: ownBody(request), options, resolve, reject };
  let held = true;
  const release = () => {
    if (held) exchange.release(slot);
    held = false;
  };
  const hold = () => (held ? exchange.holdEach([slot]) : undefined);
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

/** The longest failure message of a hook kept (its frames, cut apart: stack.ts). */
const MAX_MESSAGE = 8 * 1024;

/** A failure of hook `name` (whose limit is `timeoutMs`) as its caller is told it. */
export function hookFailure(f: HookFailure, name: string, timeoutMs: number): HearthError {
  if (f.kind === 'input') return new InvalidInputError(f.message, { reason: f.reason });
  // The isolate stopped a call at the hook's time limit (inline, or on a thread before its abort).
  const message = clipBytes(f.message, MAX_MESSAGE);
  const why = /timed out/i.test(message) ? `ran past its ${timeoutMs} ms limit and was stopped` : message;
  // The first line is what the caller is told; the frames after it go to the function's log.
  const frames = f.stack ? `\n${f.stack}` : '';
  return new HookError(`hook ${name} failed in ${f.phase}: ${why}${frames}`, { reason: f.phase });
}
