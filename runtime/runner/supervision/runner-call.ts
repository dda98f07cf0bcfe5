/**
 * One call to a runner: a frame out with the request's remaining time, priority and sequence
 * flags, its reply back as `read` makes of it. A request whose deadline has passed is not sent; a
 * caller that goes away (its signal aborts) is answered at once and the runner told to cancel.
 *
 * A runner pool's calls (RunnerCalls): those in flight, the failures the node made itself, and
 * where infer calls to a runner go to be gathered (../wire/gather.ts).
 */
import type { HearthError } from '../../../sdk/errors.js';
import { CancelledError, DeadlineExceededError } from '../../../sdk/errors.js';
import type { TensorsByName } from '../../../sdk/tensor.js';
import type { CallOptions } from '../../pool/index.js';
import type { CallFields, OutBlob, Request, Succeeded, Target } from '../wire/index.js';
import { packCall, unpackError, unpackTensors } from '../wire/index.js';
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

/** A runner pool's calls to its runner. */
export class RunnerCalls {
  /** Ids of requests sent to the runner and not yet settled (a runner that dies answers them itself: runner-process.ts). */
  readonly inflight = new Set<number>();
  /**
   * Failures the node made itself (never sent, or held by a runner that died): the runner's own
   * counters have the rest, so these are counted by the pool and no others.
   */
  readonly #nodeFailures = new WeakSet<HearthError>();
  #targetOf: { runner: RunnerProcess; target: Target } | undefined;

  /** `maxReplyBytes`: what one caller's reply may carry (limits.maxResponseMb), checked before it is read. */
  constructor(readonly maxReplyBytes = Number.POSITIVE_INFINITY) {}

  /** Sends a call to `runner` (callRunner), its id in flight until it settles. */
  call<K extends Kind, T>(
    runner: RunnerProcess,
    call: (fields: CallFields) => Extract<Call, { t: K }>,
    blobs: readonly OutBlob[],
    options: CallOptions,
    read: (reply: Succeeded<K>, blobs: Uint8Array[]) => T,
  ): Promise<T> {
    return callRunner(runner, call, blobs, options, read, this.inflight, (e) => this.nodeFailure(e));
  }

  /** Where infer calls to `runner` go (one target a runner: calls to one runner are gathered together). */
  target(runner: RunnerProcess): Target {
    if (this.#targetOf?.runner !== runner) {
      const target: Target = {
        send: (wire, blobs, options): Promise<TensorsByName> =>
          this.call(
            runner,
            (fields) => ({ t: 'infer', tensors: wire, ...fields }),
            blobs,
            options,
            (reply, out) => unpackTensors(reply.tensors, out, this.maxReplyBytes * (options.requests ?? 1)),
          ),
        flush: () => runner.flush(),
      };
      this.#targetOf = { runner, target };
    }
    return this.#targetOf.target;
  }

  /** Marks an error the node made itself, for the version's statistics (the pool counts it). */
  nodeFailure(e: HearthError): HearthError {
    this.#nodeFailures.add(e);
    return e;
  }

  /** Whether the node made `e` itself. */
  madeByNode(e: HearthError): boolean {
    return this.#nodeFailures.has(e);
  }
}
