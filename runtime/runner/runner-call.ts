/**
 * One call to a runner: a frame out with the request's remaining time, priority and sequence
 * flags, its reply back as `read` makes of it. A request whose deadline has passed is not sent; a
 * caller that goes away (its signal aborts) is answered at once and the runner told to cancel.
 */
import type { HearthError } from '../../sdk/errors.js';
import { CancelledError, DeadlineExceededError } from '../../sdk/errors.js';
import type { InvokeOptions } from '../pool/index.js';
import type { Frame, Header, WireError } from './channel.js';
import { unpackError } from './channel.js';
import type { RunnerProcess } from './runner-process.js';

/**
 * Sends `header` and `blobs` to `runner`; the call's id is in `inflight` until it settles.
 * `nodeFailure` marks the errors the node makes itself (the runner never saw the request).
 */
export function callRunner<T>(
  runner: RunnerProcess,
  header: Header,
  blobs: Uint8Array[],
  options: InvokeOptions,
  read: (frame: Frame) => T,
  inflight: Set<number>,
  nodeFailure: (e: HearthError) => HearthError,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const remainingMs = options.deadline === undefined ? undefined : options.deadline - performance.now();
    if (remainingMs !== undefined && remainingMs <= 0)
      return reject(nodeFailure(new DeadlineExceededError("the request's deadline passed before it was queued")));
    if (options.signal?.aborted) return reject(nodeFailure(new CancelledError('the request was cancelled')));
    const seq = options.sequence;
    let id = 0;
    const onAbort = (): void => {
      runner.tell({ t: 'cancel', id });
      done(new CancelledError('the request was cancelled'));
    };
    const done = (error: HearthError | undefined, frame?: Frame): void => {
      if (!inflight.delete(id)) return;
      options.signal?.removeEventListener('abort', onAbort);
      if (error) {
        reject(error);
        return;
      }
      try {
        resolve(read(frame!));
      } catch (e) {
        reject(e);
      }
    };
    id = runner.send(
      {
        ...header,
        ...(remainingMs === undefined ? {} : { remainingMs }),
        ...(options.priority === undefined ? {} : { priority: options.priority }),
        ...(seq
          ? { sequence: { id: String(seq.id), big: typeof seq.id === 'bigint', start: seq.start, end: seq.end } }
          : {}),
      },
      blobs,
      (frame) => {
        if (frame.header.ok) return done(undefined, frame);
        const error = unpackError(frame.header.error as WireError);
        // A runner that died holding it never counted it.
        done(frame.header.unanswered ? nodeFailure(error) : error, frame);
      },
    );
    inflight.add(id);
    options.signal?.addEventListener('abort', onAbort, { once: true });
  });
}
