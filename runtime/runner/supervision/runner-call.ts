/**
 * One call to a runner: a frame out with the request's remaining time, priority and sequence
 * flags, its reply back as `read` makes of it. A request whose deadline has passed is not sent; a
 * caller that goes away (its signal aborts) is answered at once and the runner told to cancel.
 */
import type { HearthError } from '../../../sdk/errors.js';
import { CancelledError, DeadlineExceededError } from '../../../sdk/errors.js';
import type { CallOptions } from '../../pool/index.js';
import type { CallFields, OutBlob, Request, Succeeded } from '../wire/index.js';
import { packCall, unpackError } from '../wire/index.js';
import type { RunnerProcess } from './runner-process.js';

/** The two calls a request makes: through the hooks, or tensors straight to the model. */
export type Call = Extract<Request, { t: 'invoke' | 'infer' }>;
type Kind = Call['t'];

/**
 * Sends the call and `blobs` to `runner`; the call's id is in `inflight` until it settles.
 * `nodeFailure` marks the errors the node makes itself (the runner never saw the request).
 */
export function callRunner<K extends Kind, T>(
  runner: RunnerProcess,
  /** The call, made with the fields the options become (the time left, priority, sequence). */
  call: (fields: CallFields) => Extract<Call, { t: K }>,
  blobs: readonly OutBlob[],
  options: CallOptions,
  read: (reply: Succeeded<K>, blobs: Uint8Array[]) => T,
  inflight: Set<number>,
  nodeFailure: (e: HearthError) => HearthError,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const remainingMs = options.deadline === undefined ? undefined : options.deadline - performance.now();
    if (remainingMs !== undefined && remainingMs <= 0)
      return reject(nodeFailure(new DeadlineExceededError("the request's deadline passed before it was queued")));
    if (options.signal?.aborted) return reject(nodeFailure(new CancelledError('the request was cancelled')));
    let id = 0;
    const onAbort = (): void => {
      runner.tell({ t: 'cancel', id });
      done(new CancelledError('the request was cancelled'));
    };
    const done = (error: HearthError | undefined, reply?: Succeeded<K>, replyBlobs: Uint8Array[] = []): void => {
      if (!inflight.delete(id)) return;
      options.signal?.removeEventListener('abort', onAbort);
      if (error) {
        reject(error);
        return;
      }
      try {
        resolve(read(reply!, replyBlobs));
      } catch (e) {
        reject(e);
      }
    };
    id = runner.send<K>(call(packCall(options, remainingMs)), blobs, (reply, replyBlobs) => {
      if (reply.ok) return done(undefined, reply, replyBlobs);
      const error = unpackError(reply.error);
      // A runner that died holding it never counted it.
      done(reply.unanswered ? nodeFailure(error) : error);
    });
    inflight.add(id);
    options.signal?.addEventListener('abort', onAbort, { once: true });
  });
}
