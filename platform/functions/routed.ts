/**
 * The calls the traffic split sent to each version on this node — not those that named their
 * version (`/fn/NAME/versions/N`, KServe's `/v2/models/NAME/versions/N/infer`): what a canary is
 * judged by, on both sides, so calls pinned to a version by anyone cannot roll it back or promote
 * it. Counted where the version was picked (a call forwarded to another node counts here), with
 * the durations of the latest answered ones for its latency. Each node's counts reach the canary's
 * watcher in its heartbeat (cluster/presence.ts).
 */
import { LRUCache } from 'lru-cache';

import { RecentLatencies } from '../../runtime/index.js';
import { versionKey } from '../../sdk/spec/index.js';
import type { RoutedBrief } from '../cluster/index.js';
import type { Counted, TimedCalls } from './canary.js';

/** Versions counted at once (the least recently called go first). */
const MAX_VERSIONS = 10_000;

interface Tally extends Counted {
  name: string;
  version: number;
  /** The latest answered calls' durations. */
  latencies: RecentLatencies;
  /** When each of them ended (ms, the same ring's order): what lines two sides' samples up in time. */
  ended: RecentLatencies;
}

export class RoutedCalls {
  readonly #tallies = new LRUCache<string, Tally>({ max: MAX_VERSIONS });
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** A call the split sent to `version` finished: answered (with its duration, µs) or failed. */
  count(name: string, version: number, us: number, failed: boolean): void {
    const key = versionKey(name, version);
    let t = this.#tallies.get(key);
    if (!t) {
      t = { name, version, success: 0, failure: 0, latencies: new RecentLatencies(), ended: new RecentLatencies() };
      this.#tallies.set(key, t);
    }
    if (failed) {
      t.failure++;
      return;
    }
    t.success++;
    t.latencies.add(us);
    t.ended.add(this.#now());
  }

  /** The version's routed calls on this node since it started. */
  counts(name: string, version: number): Counted {
    const t = this.#tallies.peek(versionKey(name, version));
    return { success: t?.success ?? 0, failure: t?.failure ?? 0 };
  }

  /**
   * The version's answered routed calls after its `since`-th (the latest 1024 at most): a canary's,
   * over its window. Counted anew (fewer than `since`): all it holds.
   */
  latencies(name: string, version: number, since: number): TimedCalls {
    const t = this.#tallies.peek(versionKey(name, version));
    if (!t) return { us: new Float64Array(0), at: new Float64Array(0), dropped: false };
    const n = t.success >= since ? t.success - since : t.success;
    const us = t.latencies.latest(n);
    return { us, at: t.ended.latest(n), dropped: n > us.length };
  }

  /** A deleted function's counts go. */
  forget(name: string): void {
    for (const t of [...this.#tallies.values()]) if (t.name === name) this.#tallies.delete(versionKey(name, t.version));
  }

  /** What this node tells the others in its heartbeat. */
  briefs(node: string): RoutedBrief[] {
    return [...this.#tallies.values()].map((t) => ({
      node,
      function: t.name,
      version: t.version,
      success: t.success,
      failure: t.failure,
    }));
  }
}
