/** Time for the batcher, in microseconds, with timers: the system's, or a test's manual clock. */
export interface Clock {
  now(): number;
  setTimer(fn: () => void, delayUs: number): unknown;
  clearTimer(handle: unknown): void;
}

export const systemClock: Clock = {
  now: () => performance.now() * 1000,
  setTimer: (fn, delayUs) => setTimeout(fn, Math.max(0, Math.ceil(delayUs / 1000))),
  clearTimer: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/** A clock that moves only when told to: for tests of timing semantics without sleeping. */
export class ManualClock implements Clock {
  #now = 0;
  #timers = new Map<number, { at: number; fn: () => void }>();
  #next = 1;

  now(): number {
    return this.#now;
  }

  setTimer(fn: () => void, delayUs: number): unknown {
    const id = this.#next++;
    this.#timers.set(id, { at: this.#now + Math.max(0, delayUs), fn });
    return id;
  }

  clearTimer(handle: unknown): void {
    this.#timers.delete(handle as number);
  }

  /** Moves time forward, firing due timers in order. */
  advance(us: number): void {
    const until = this.#now + us;
    for (;;) {
      let due: [number, { at: number; fn: () => void }] | undefined;
      for (const entry of this.#timers) if (entry[1].at <= until && (!due || entry[1].at < due[1].at)) due = entry;
      if (!due) break;
      this.#timers.delete(due[0]);
      this.#now = due[1].at;
      due[1].fn();
    }
    this.#now = until;
  }

  get pendingTimers(): number {
    return this.#timers.size;
  }
}
