/**
 * What every pool shares, in the node or in a runner process: its function version, its state and
 * the log of its events (state changes, instances, cold starts), each also emitted as `event`.
 */
import { EventEmitter } from 'node:events';

import { DeadlineExceededError } from '../../sdk/errors.js';
import type { FunctionSpec } from '../../sdk/spec/function-spec.js';

/** `restarting`: a runner process ended and is being started again (runtime/runner); not ready meanwhile. */
export type PoolState = 'cold' | 'loading' | 'warm' | 'restarting' | 'draining' | 'stopped' | 'failed';

export interface PoolEvent {
  /** Date.now() milliseconds. */
  at: number;
  type: 'state' | 'instance-added' | 'instance-removed' | 'load-failed' | 'cold-start';
  state: PoolState;
  detail?: string;
}

/** Events kept per pool (the oldest go first). */
const KEPT_EVENTS = 1000;

export abstract class PoolLifecycle extends EventEmitter {
  readonly spec: FunctionSpec;
  readonly version: number;
  #state: PoolState = 'cold';
  readonly #events: PoolEvent[] = [];

  protected constructor(spec: FunctionSpec, version: number) {
    super();
    this.spec = spec;
    this.version = version;
    this.event('state', 'cold');
  }

  get state(): PoolState {
    return this.#state;
  }

  get events(): readonly PoolEvent[] {
    return this.#events;
  }

  /** Waits for `starting` (its failure is the caller's to see in the state), up to `deadline` (performance.now() ms). */
  protected async untilStarted(starting: Promise<void>, deadline: number | undefined): Promise<void> {
    const started = starting.catch(() => undefined);
    if (deadline === undefined) return started;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new DeadlineExceededError(
              `function ${this.spec.name} v${this.version} was still loading at the request's deadline`,
            ),
          ),
        Math.max(0, deadline - performance.now()),
      );
    });
    try {
      await Promise.race([started, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  protected setState(state: PoolState): void {
    if (this.#state === state) return;
    this.#state = state;
    this.event('state', state);
  }

  protected event(type: PoolEvent['type'], state: PoolState, detail?: string): void {
    const event: PoolEvent = { at: Date.now(), type, state, ...(detail === undefined ? {} : { detail }) };
    this.#events.push(event);
    if (this.#events.length > KEPT_EVENTS) this.#events.splice(0, this.#events.length - KEPT_EVENTS);
    this.emit('event', event);
  }
}
