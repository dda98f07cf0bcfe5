/**
 * A node's readiness: starting, serving, or stopping (draining, closed).
 *
 * Health checks read `ready()`: a load balancer sends nothing to a node that is not serving. A
 * request that reaches a starting node anyway — a client that calls as soon as the port answers,
 * after a restart or in a rollout — is held until the node serves, as a request to a function
 * scaled to zero is held through its cold start, not refused; it is refused only if the node stops
 * first, its deadline passes, its caller goes, or the node is still starting after HOLD_MS. A
 * stopping node refuses at once (a draining node's callers should go to another).
 */
import { CancelledError, DeadlineExceededError, UnavailableError } from '../../sdk/errors.js';

/** The longest a request is held for a starting node (its functions with minInstances warming). */
export const HOLD_MS = 120_000;

type State = 'starting' | 'serving' | 'stopping';

export class Readiness {
  #state: State = 'starting';
  readonly #waiters = new Set<(state: State) => void>();

  ready(): boolean {
    return this.#state === 'serving';
  }

  /** The node serves: held requests go on. */
  serve(): void {
    this.#move('serving');
  }

  /** The node drains or closes: held and new requests are refused. */
  stop(): void {
    this.#move('stopping');
  }

  /**
   * Undefined when the node serves (no promise on the hot path); else a promise that settles when
   * the request may go on, or rejects with why it may not. `deadline` is performance.now() ms.
   */
  admit(options: { deadline?: number; signal?: AbortSignal } = {}): Promise<void> | undefined {
    if (this.#state === 'serving') return undefined;
    if (this.#state === 'stopping') return Promise.reject(new UnavailableError('this node is draining or closed'));
    const { deadline, signal } = options;
    return new Promise<void>((resolve, reject) => {
      const waitMs = Math.min(HOLD_MS, deadline === undefined ? HOLD_MS : Math.max(0, deadline - performance.now()));
      const done = (error?: Error): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        this.#waiters.delete(onState);
        if (error) reject(error);
        else resolve();
      };
      const onState = (state: State): void =>
        done(state === 'serving' ? undefined : new UnavailableError('this node stopped while it started'));
      const onAbort = (): void => done(new CancelledError('the caller went while the node started'));
      const timer = setTimeout(
        () =>
          done(
            waitMs < HOLD_MS
              ? new DeadlineExceededError('the deadline passed while the node started')
              : new UnavailableError(`this node is still starting after ${HOLD_MS / 1000} s`),
          ),
        waitMs,
      );
      if (signal?.aborted) return onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#waiters.add(onState);
    });
  }

  #move(state: State): void {
    if (this.#state === state) return;
    this.#state = state;
    for (const waiter of [...this.#waiters]) waiter(state);
  }
}
