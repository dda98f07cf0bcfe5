/**
 * A canary's verdict (canary.ts watches it): its error rate against the serving versions' as it
 * goes; at the end of its window, too few calls, then its latency against theirs.
 *
 * Latency is compared at a percentile both sides can estimate from their own samples. A sample
 * percentile is an order statistic: from n calls, the p-quantile is the value with n·(1−p) calls
 * above it, and with none or one above it is the sample's maximum — one slow call (a GC pause, a
 * busy neighbour) decides it, however healthy the version (with 31 calls a "p99" is the slowest
 * call). The number of calls above the true p-quantile is Binomial(n, 1−p): with k = n·(1−p) of
 * them expected, it varies by about √k, so the estimate stands on k calls, not one. We ask k ≥ 10
 * (±~30% in the tail count, where k = 1 is ±100%): p99 needs 1000 timed calls on each side, p90
 * 100, p50 20. The highest percentile both sides reach is compared; below 20 on either side latency
 * is not judged and the canary stands on its errors (the verdict says so and why) — Argo Rollouts'
 * "inconclusive", not a failure. The serving side's sample is its versions' calls pooled.
 */
import type { Canary, CanaryObserved, CanaryPercentile } from '../../sdk/api/index.js';
import { CANARY_PERCENTILES, splitShares } from '../../sdk/api/index.js';

export const CANARY_DEFAULTS = { maxErrorRate: 5, maxP99Ratio: 1.5, minCalls: 10 } as const;
/** A percentile this close to the serving versions' is never a regression (timer noise on sub-ms models). */
export const LATENCY_FLOOR_MS = 2;
/** Calls above a percentile, in each side's sample, for its estimate to be compared. */
export const CALLS_ABOVE = 10;
/** Each percentile as a fraction in thousandths (whole numbers: no rounding at the sample sizes' edges). */
const PER_MILLE: Record<CanaryPercentile, number> = { p99: 990, p90: 900, p50: 500 };

/** Timed calls a side needs for `p`: CALLS_ABOVE of them above it (p99: 1000, p90: 100, p50: 20). */
export const samplesFor = (p: CanaryPercentile): number => Math.ceil((CALLS_ABOVE * 1000) / (1000 - PER_MILLE[p]));

/** The latency a side shows: its timed calls and each percentile they estimate (null: too few). */
export type SideLatency = Required<Pick<CanaryObserved, 'sampled' | 'p50Ms' | 'p90Ms' | 'p99Ms'>>;

/**
 * Nearest-rank percentiles of durations (µs) in ms, 0.01 ms apart: the value with ⌈p·n⌉ calls at
 * or under it, so n − ⌈p·n⌉ above it — given only when that is CALLS_ABOVE or more.
 */
export function percentilesOf(us: Float64Array): SideLatency {
  const sorted = us.slice().sort();
  const n = sorted.length;
  const at = (p: CanaryPercentile) =>
    n >= samplesFor(p) ? Math.round(sorted[Math.ceil((PER_MILLE[p] * n) / 1000) - 1]! / 10) / 100 : null;
  return { sampled: n, p50Ms: at('p50'), p90Ms: at('p90'), p99Ms: at('p99') };
}

export type Verdict =
  | { verdict: 'watch' }
  | { verdict: 'promote'; reason: string; percentile: CanaryPercentile | null }
  | {
      verdict: 'rollback';
      reason: string;
      cause: 'errors' | 'latency' | 'calls';
      percentile?: CanaryPercentile | null;
    };

const rate = (o: CanaryObserved) => (o.calls > 0 ? o.failed / o.calls : 0);
const pct = (r: number) => `${(r * 100).toFixed(1)}%`;
export const seconds = (ms: number) => `${Math.round(ms / 100) / 10} s`;
const calls = (n: number) => `${n} call${n === 1 ? '' : 's'}`;
const versions = (split: Record<string, number>) =>
  Object.keys(split)
    .map((v) => `v${v}`)
    .join('+');

/**
 * The decision, from what each side saw since the canary started: roll back as soon as the
 * canary's error rate is more than `maxErrorRate` points over the serving versions' (once it has
 * `minCalls` calls); at the end of the window roll back with fewer calls than that, or with its
 * latency percentile (latencyRule) over `maxP99Ratio` × theirs and LATENCY_FLOOR_MS over it; else promote.
 */
export function judge(c: Canary, canary: CanaryObserved, baseline: CanaryObserved, ended: boolean): Verdict {
  const base = versions(c.baseline);
  const over = (rate(canary) - rate(baseline)) * 100;
  if (canary.calls >= c.minCalls && canary.failed > 0 && over > c.maxErrorRate)
    return {
      verdict: 'rollback',
      cause: 'errors',
      reason: `v${c.version} failed ${canary.failed} of ${canary.calls} calls (${pct(rate(canary))}) against ${pct(rate(baseline))} on ${base}: more than ${c.maxErrorRate} points over`,
    };
  if (!ended) return { verdict: 'watch' };
  if (canary.calls < c.minCalls)
    return {
      verdict: 'rollback',
      cause: 'calls',
      reason: `only ${calls(canary.calls)} reached v${c.version} in ${seconds(c.windowMs)}, fewer than the ${c.minCalls} it needs to be judged`,
    };
  const errors = `errors ${pct(rate(canary))} over ${calls(canary.calls)} against ${pct(rate(baseline))} on ${base}`;
  const latency = latencyRule(c, canary, baseline);
  if (!latency.judged) return { verdict: 'promote', percentile: null, reason: `${errors}; ${latency.text}` };
  const { p, mine, theirs } = latency;
  const compared = `${p} ${mine} ms against ${theirs} ms`;
  if (c.maxP99Ratio !== 'off' && mine > theirs * c.maxP99Ratio && mine - theirs >= LATENCY_FLOOR_MS)
    return {
      verdict: 'rollback',
      cause: 'latency',
      percentile: p,
      reason: `v${c.version}'s ${compared} on ${base} is over ${c.maxP99Ratio}× (${errors})`,
    };
  return { verdict: 'promote', percentile: p, reason: `${errors}; ${compared}` };
}

type LatencyRule =
  | { judged: false; text: string }
  | { judged: true; p: CanaryPercentile; mine: number; theirs: number };

/**
 * Which percentile the latency rule compares: the highest both sides' samples estimate (each side's
 * `sampled` at least samplesFor it) — or why latency is not judged.
 */
export function latencyRule(c: Canary, canary: CanaryObserved, baseline: CanaryObserved): LatencyRule {
  if (c.maxP99Ratio === 'off') return { judged: false, text: 'latency not judged: its limit is off' };
  const sides = [
    { who: `v${c.version}`, o: canary },
    { who: versions(c.baseline), o: baseline },
  ];
  for (const p of CANARY_PERCENTILES) {
    const mine = canary[`${p}Ms`];
    const theirs = baseline[`${p}Ms`];
    if (
      sides.every((s) => (s.o.sampled ?? 0) >= samplesFor(p)) &&
      typeof mine === 'number' &&
      typeof theirs === 'number'
    )
      return { judged: true, p, mine, theirs };
  }
  const short = sides
    .filter((s) => (s.o.sampled ?? 0) < samplesFor('p50'))
    .map((s) => `${s.who} ${s.o.sampled ?? 0}`)
    .join(', ');
  return {
    judged: false,
    text: `latency not judged: too few calls timed on this node (${short}) for a p50, which needs ${samplesFor('p50')} on each side`,
  };
}

/** What the function's log says of a decision, in a sentence. */
export function decisionText(c: Canary, state: Canary['state'], reason: string): string {
  const what =
    state === 'rolled-back'
      ? `rolled back to ${splitShares(c.baseline)}`
      : state === 'promoted'
        ? `promoted v${c.version} to 100%`
        : 'cancelled';
  return `canary: ${what}: ${reason}`;
}
