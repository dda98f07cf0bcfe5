/**
 * The autoscaler's decision, per pool, once a tick: how many instances the load asks for, and when
 * to move there. Pure logic over samples; the platform ticks it and applies what it decides.
 *
 * - Wanted = ceil((queued + in flight) / targetQueueDepth), clamped to [minInstances (at least 1
 *   while there is load), maxInstances].
 * - Up at once, to the wanted count or as many as the device has room for (a scale-up that does not
 *   fit waits for room; it is never attempted).
 * - Down only to the highest count wanted over the last `stableWindowS` (as Kubernetes' HPA
 *   stabilises scale-down): a burst keeps its instances for a window after it, and under a steady
 *   load the count settles instead of following every dip. So after a step up and a step down the
 *   count changes direction at most once per window.
 * - To zero after `scaleDownAfterS` with no request at all, when minInstances is 0.
 */
export interface ScalingPolicy {
  minInstances: number;
  maxInstances: number;
  targetQueueDepth: number;
  scaleDownAfterS: number;
  stableWindowS: number;
}

export interface ScaleSample {
  /** Milliseconds, any monotonic origin. */
  now: number;
  /** Requests queued plus in flight (in hooks or running). */
  load: number;
  instances: number;
  /** When the last request arrived or was answered (same clock as `now`). */
  lastRequestAt: number;
  /** How many more instances the device can hold now. */
  room: number;
}

export type ScaleDecision =
  | { action: 'hold'; wanted: number; reason?: 'no-room' }
  | { action: 'up' | 'down'; to: number; wanted: number }
  | { action: 'zero'; wanted: 0 };

export class ScaleDecider {
  readonly #policy: ScalingPolicy;
  /** Recent wanted counts, oldest first. */
  readonly #window: { at: number; wanted: number }[] = [];
  /** The first sample: nothing scales down before a whole window has been seen. */
  #since: number | undefined;

  constructor(policy: ScalingPolicy) {
    this.#policy = policy;
  }

  /** Instances the load alone asks for. */
  wanted(load: number): number {
    const p = this.#policy;
    const floor = load > 0 ? Math.max(1, p.minInstances) : p.minInstances;
    return Math.min(p.maxInstances, Math.max(floor, Math.ceil(load / p.targetQueueDepth)));
  }

  decide(s: ScaleSample): ScaleDecision {
    const p = this.#policy;
    const wanted = this.wanted(s.load);
    this.#since ??= s.now;
    this.#window.push({ at: s.now, wanted });
    while (this.#window.length > 0 && this.#window[0]!.at < s.now - p.stableWindowS * 1000) this.#window.shift();

    if (
      p.minInstances === 0 &&
      s.load === 0 &&
      s.instances > 0 &&
      s.now - s.lastRequestAt >= p.scaleDownAfterS * 1000
    ) {
      this.#window.length = 0;
      return { action: 'zero', wanted: 0 };
    }
    if (wanted > s.instances) {
      const to = Math.min(wanted, s.instances + Math.max(0, s.room));
      return to > s.instances ? { action: 'up', to, wanted } : { action: 'hold', wanted, reason: 'no-room' };
    }
    // Never below one while the pool is up: going to zero is the idle rule's alone.
    const settled = Math.max(1, p.minInstances, ...this.#window.map((w) => w.wanted));
    if (settled < s.instances && s.now - this.#since >= p.stableWindowS * 1000)
      return { action: 'down', to: settled, wanted };
    return { action: 'hold', wanted };
  }
}
