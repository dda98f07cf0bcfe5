/** A pool's counters: what Triton's metrics report, readable through Pool.stats(). */

/** Count, total and max of a duration, in microseconds. */
export interface DurationSummary {
  count: number;
  totalUs: number;
  maxUs: number;
}

export interface PoolCounters {
  /** Requests that got a response / that failed, by reason (the error's code). */
  success: number;
  failure: number;
  failures: Record<string, number>;
  /** Forward passes run (Triton's execution count). */
  execCount: number;
  /** Rows inferred (Triton's inference count). */
  inferenceCount: number;
  /** Batch size (rows) → forwards run at that size. */
  batchSizes: Record<number, number>;
  /** Batch size (rows) → the forward time of batches of that size (Triton's batch statistics). */
  batchCompute: Record<number, DurationSummary>;
  /** Date.now() of the latest request that finished successfully (0 = none yet). */
  lastInferenceMs: number;
  durations: {
    /** Whole request, from invoke() to the response. */
    request: DurationSummary;
    /** The same, for requests that succeeded / that failed. */
    success: DurationSummary;
    failure: DurationSummary;
    /** Waiting in the batcher's queue. */
    queue: DurationSummary;
    /** The forward pass of the request's batch, input concatenation included: one per batch. */
    compute: DurationSummary;
    /** The same, charged to each request of the batch (Triton's compute_infer per request). */
    requestCompute: DurationSummary;
    pre: DurationSummary;
    post: DurationSummary;
  };
}

const summary = (): DurationSummary => ({ count: 0, totalUs: 0, maxUs: 0 });

export function newCounters(): PoolCounters {
  return {
    success: 0,
    failure: 0,
    failures: {},
    execCount: 0,
    inferenceCount: 0,
    batchSizes: {},
    batchCompute: {},
    lastInferenceMs: 0,
    durations: {
      request: summary(),
      success: summary(),
      failure: summary(),
      queue: summary(),
      compute: summary(),
      requestCompute: summary(),
      pre: summary(),
      post: summary(),
    },
  };
}

/** Adds `b` into `a` (a retired pool's counters into its version's running total). */
export function addCounters(a: PoolCounters, b: PoolCounters): PoolCounters {
  const sum = (x: DurationSummary, y: DurationSummary): DurationSummary => ({
    count: x.count + y.count,
    totalUs: x.totalUs + y.totalUs,
    maxUs: Math.max(x.maxUs, y.maxUs),
  });
  const merge = <T>(x: Record<string, T>, y: Record<string, T>, add: (p: T, q: T) => T): Record<string, T> => {
    const out = { ...x };
    for (const [k, v] of Object.entries(y)) out[k] = out[k] === undefined ? v : add(out[k]!, v);
    return out;
  };
  const durations = Object.fromEntries(
    Object.entries(a.durations).map(([k, v]) => [k, sum(v, b.durations[k as keyof PoolCounters['durations']])]),
  ) as PoolCounters['durations'];
  return {
    success: a.success + b.success,
    failure: a.failure + b.failure,
    failures: merge(a.failures, b.failures, (p, q) => p + q),
    execCount: a.execCount + b.execCount,
    inferenceCount: a.inferenceCount + b.inferenceCount,
    batchSizes: merge(a.batchSizes, b.batchSizes, (p, q) => p + q),
    batchCompute: merge(a.batchCompute, b.batchCompute, sum),
    lastInferenceMs: Math.max(a.lastInferenceMs, b.lastInferenceMs),
    durations,
  };
}

/**
 * `n` requests that failed with `code` after `us` microseconds (their whole-request duration is
 * observed apart). `n` > 1: one call that carried several callers (a node's gathered requests).
 */
export function countFailure(c: PoolCounters, code: string, us: number, n = 1): void {
  c.failure += n;
  c.failures[code] = (c.failures[code] ?? 0) + n;
  observe(c.durations.failure, us, n);
}

/** `n` observations of `us` microseconds each. */
export function observe(s: DurationSummary, us: number, n = 1): void {
  s.count += n;
  s.totalUs += us * n;
  if (us > s.maxUs) s.maxUs = us;
}

/** `n` requests' outcome: success (and when), or failure by code; their duration either way. */
export function countOutcome(c: PoolCounters, us: number, failure?: { code: string }, n = 1): void {
  if (failure) countFailure(c, failure.code, us, n);
  else {
    c.success += n;
    c.lastInferenceMs = Date.now();
    observe(c.durations.success, us, n);
  }
  observe(c.durations.request, us, n);
}

/** A forward's counters: `rows` in the batch, `requests` of them callers' (the rest fillers), `computeUs` it took. */
export function countForward(c: PoolCounters, rows: number, requests: number, computeUs: number): void {
  c.execCount++;
  c.inferenceCount += rows;
  c.batchSizes[rows] = (c.batchSizes[rows] ?? 0) + 1;
  observe(c.durations.compute, computeUs);
  const shared = c.durations.requestCompute;
  shared.count += requests;
  shared.totalUs += computeUs * requests;
  shared.maxUs = Math.max(shared.maxUs, computeUs);
  c.batchCompute[rows] ??= { count: 0, totalUs: 0, maxUs: 0 };
  observe(c.batchCompute[rows], computeUs);
}

/** The latest request durations (a ring of `size`), for percentiles over recent traffic. */
export class RecentLatencies {
  readonly #ring: Float64Array;
  #next = 0;
  #filled = 0;

  constructor(size = 1024) {
    this.#ring = new Float64Array(size);
  }

  add(us: number): void {
    this.#ring[this.#next] = us;
    this.#next = (this.#next + 1) % this.#ring.length;
    if (this.#filled < this.#ring.length) this.#filled++;
  }

  /** The latest `n` durations (all it holds, when fewer), oldest first. */
  latest(n: number): Float64Array {
    const k = Math.max(0, Math.min(n, this.#filled));
    const size = this.#ring.length;
    const start = (this.#next - k + size) % size;
    if (start + k <= size) return this.#ring.slice(start, start + k);
    const out = new Float64Array(k);
    out.set(this.#ring.subarray(start));
    out.set(this.#ring.subarray(0, k - (size - start)), size - start);
    return out;
  }

  /** p50 and p99 in milliseconds over the recent requests (undefined before any). */
  percentiles(): { p50Ms: number; p99Ms: number; of: number } | undefined {
    if (this.#filled === 0) return undefined;
    const sorted = this.#ring.slice(0, this.#filled).sort();
    const at = (q: number) =>
      Math.round(sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))]! / 10) / 100;
    return { p50Ms: at(0.5), p99Ms: at(0.99), of: this.#filled };
  }
}
