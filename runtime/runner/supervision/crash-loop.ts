/**
 * When a runner that crashed is started again: at once the first time; a version that keeps
 * crashing waits longer before each restart (1 s, 2 s, 4 s … 60 s, as Kubernetes'
 * CrashLoopBackOff does); a runner that stays up for a minute resets the count.
 */
import type { RunnerExit } from './runner-process.js';

/** What a `crash` event carries: how the runner ended, and when it restarts. */
export interface RunnerCrash {
  exit: RunnerExit;
  restarts: number;
  delayMs: number;
}

const BACKOFF_MS = [0, 1000, 2000, 4000, 8000, 16_000, 32_000, 60_000];
/** A runner up this long is healthy again: its next crash restarts it at once. */
const HEALTHY_MS = 60_000;

export class CrashLoop {
  #crashes = 0;
  #upSince = 0;

  /** Restarts counted since the runner was last healthy. */
  get restarts(): number {
    return this.#crashes;
  }

  /** The runner is up and serving: it is healthy again HEALTHY_MS from now. */
  up(): void {
    this.#upSince = performance.now();
  }

  /** The runner ended while it served: after a healthy run, the count starts again. */
  crashed(): void {
    if (performance.now() - this.#upSince > HEALTHY_MS) this.#crashes = 0;
  }

  /** Counts one more restart; how long to wait before it. */
  next(): number {
    const delay = BACKOFF_MS[Math.min(this.#crashes, BACKOFF_MS.length - 1)]!;
    this.#crashes++;
    return delay;
  }
}
