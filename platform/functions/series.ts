/**
 * Per-version time series for the console's charts (and any client): one sample a second for the
 * last 15 minutes, in memory, from the pools' counters — requests and errors per second, p50/p99
 * latency (of the latest requests), mean batch size of the second's forwards, queue depth and
 * instances by state. Versions with no pool keep their ring (zeros go in) until it ages out.
 */
import type { PoolSummary } from '../../runtime/index.js';
import type { SeriesSample } from '../../sdk/api/index.js';
import { functionOfKey, versionKey } from '../../sdk/spec/index.js';

export type { SeriesSample };

/** Samples kept per version: 15 minutes at one a second. */
export const SERIES_LENGTH = 900;
/** Rings kept at most (versions seen on this node). */
const MAX_RINGS = 2000;

interface Last {
  at: number;
  success: number;
  failure: number;
  execCount: number;
  inferenceCount: number;
}

export class FunctionSeries {
  readonly #rings = new Map<string, SeriesSample[]>();
  readonly #last = new Map<string, Last>();

  /** One sample for every pool now listed; `now` for tests. */
  sample(pools: readonly PoolSummary[], now = Date.now()): void {
    const seen = new Set<string>();
    for (const p of pools) {
      const key = versionKey(p.function, p.version);
      seen.add(key);
      const last = this.#last.get(key);
      const current: Last = {
        at: now,
        success: p.success,
        failure: p.failure,
        execCount: p.execCount,
        inferenceCount: p.inferenceCount,
      };
      this.#last.set(key, current);
      const seconds = last ? Math.max(0.001, (now - last.at) / 1000) : 1;
      // A pool replaced (restarted, scaled from zero) starts its counters again: no negative rates.
      const delta = (k: keyof Omit<Last, 'at'>) => (last ? Math.max(0, current[k] - last[k]) : 0);
      const forwards = delta('execCount');
      this.#push(key, {
        at: now,
        reqPerS: delta('success') / seconds,
        errPerS: delta('failure') / seconds,
        p50Ms: p.latency?.p50Ms ?? null,
        p99Ms: p.latency?.p99Ms ?? null,
        meanBatch: forwards > 0 ? delta('inferenceCount') / forwards : null,
        queueDepth: p.queueDepth,
        instances: p.instances.total,
        busy: p.instances.busy,
        loading: p.instances.loading,
      });
    }
    // A version without a pool now (scaled to zero) gets an empty second, so its chart moves on.
    for (const [key, ring] of this.#rings) {
      if (seen.has(key)) continue;
      this.#last.delete(key);
      if (now - ring.at(-1)!.at > SERIES_LENGTH * 1000) {
        this.#rings.delete(key);
        continue;
      }
      this.#push(key, {
        at: now,
        reqPerS: 0,
        errPerS: 0,
        p50Ms: null,
        p99Ms: null,
        meanBatch: null,
        queueDepth: 0,
        instances: 0,
        busy: 0,
        loading: 0,
      });
    }
  }

  #push(key: string, sample: SeriesSample): void {
    let ring = this.#rings.get(key);
    if (!ring) {
      if (this.#rings.size >= MAX_RINGS) return;
      ring = [];
      this.#rings.set(key, ring);
    }
    ring.push(sample);
    if (ring.length > SERIES_LENGTH) ring.splice(0, ring.length - SERIES_LENGTH);
  }

  /** A function's rings, by version (oldest sample first). */
  of(name: string, version?: number): Record<string, SeriesSample[]> {
    const out: Record<string, SeriesSample[]> = {};
    for (const [key, ring] of this.#rings) {
      if (functionOfKey(key) !== name) continue;
      if (version !== undefined && key !== versionKey(name, version)) continue;
      out[key.slice(name.length + 1)] = ring;
    }
    return out;
  }

  forget(name: string): void {
    for (const key of [...this.#rings.keys()]) if (functionOfKey(key) === name) this.#rings.delete(key);
  }
}
