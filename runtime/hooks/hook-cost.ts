/**
 * What a function's hook costs a request, per phase: a moving average of the hook's own time (its
 * code in its isolate, on whichever thread ran it), so the pool can tell a hook worth a thread from
 * one that is not.
 *
 * A hook thread is there to take work off the runner's thread. Sending a task to one and taking
 * its answer back costs the runner's thread itself (piscina's task message, the structured clone of
 * the requests and results, two cross-thread wake-ups) and costs the machine the other thread's
 * wake-up and its own copy of the isolate's work. For a hook that costs less than that, the hop
 * spares the runner's thread nothing and adds CPU: such a hook runs on the runner's thread even
 * under load, a turn's requests in one crossing (hook-pool.ts).
 */

/**
 * The hook's own time a request (µs) under which it runs on the runner's thread: about what a hop
 * to a hook thread and back costs that thread (bench:ceiling's fn-binary vector at c=64: the
 * runner's thread took ~110 µs a request with the hook on threads, a third of it piscina's hops).
 */
export const INLINE_UNDER_US = 100;

/** How far one task's figure moves the average. */
const WEIGHT = 0.2;
/**
 * Tasks of fewer requests say nothing of the cost a request: their figure is mostly the crossing's
 * own, which a task pays once wherever it runs (a lone request's pre, 1 request: ~60-300 µs on
 * this machine, where the same hook costs ~30 µs a request in a group of 64).
 */
export const MIN_REQUESTS = 8;
/**
 * A smaller task counts where it cost a request more than this, far past what a crossing, a first
 * call's compile or a collection in the isolate costs (a lone call here: ~0.1-0.4 ms, its first
 * ~2 ms): a hook that turned slow (a larger body, a loop to its time limit) is costly from its
 * next turn, whether or not its turns still gather eight requests. (Under it a small task's figure
 * would only ever raise the average: the cheap ones among them are not counted.)
 */
export const SURELY_COSTLY_US = 10_000;

export type Phase = 'pre' | 'post';

/**
 * Starts timing a task of `requests` requests; the returned function gives the µs since. A task
 * whose figure counts as it is (MIN_REQUESTS or more) is timed by `cpuUs`, the thread's CPU clock
 * (a system call, ~3 µs here); a smaller one, whose figure counts only past SURELY_COSTLY_US, by
 * the wall clock, which bounds the CPU time from above and costs a lone request nothing.
 */
export function taskClock(requests: number, cpuUs: () => number): () => number {
  if (requests >= MIN_REQUESTS) {
    const t0 = cpuUs();
    return () => cpuUs() - t0;
  }
  const t0 = performance.now();
  return () => (performance.now() - t0) * 1000;
}

export class HookCost {
  /** µs a request, by phase; Infinity until a task says (a hook of unknown cost is not cheap). */
  readonly #us: Record<Phase, number> = { pre: Number.POSITIVE_INFINITY, post: Number.POSITIVE_INFINITY };

  /** A task of `requests` requests took the hook `us` in `phase`. */
  observe(phase: Phase, us: number, requests: number): void {
    if (!(us >= 0) || !(requests > 0)) return;
    const each = us / requests;
    if (requests < MIN_REQUESTS && each < SURELY_COSTLY_US) return;
    const last = this.#us[phase];
    this.#us[phase] = last === Number.POSITIVE_INFINITY ? each : last + WEIGHT * (each - last);
  }

  /** The average in `phase`, µs a request. */
  of(phase: Phase): number {
    return this.#us[phase];
  }

  /** Whether the hook costs a request so little in `phase` that it runs on the runner's thread. */
  cheap(phase: Phase): boolean {
    return this.#us[phase] < INLINE_UNDER_US;
  }
}
