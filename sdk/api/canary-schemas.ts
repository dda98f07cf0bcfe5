/**
 * A deploy's canary in the management API: what a deploy asks for, what the node keeps in the
 * function's record while it watches, and what it decided and why.
 */
import { z } from 'zod';

import { CANARY_PERCENTILES } from './canary-percentiles.js';

export * from './canary-percentiles.js';

/**
 * A deploy's canary (`hearth deploy --canary 10 --canary-window 60s`): the new version takes
 * `percent` of the traffic for `windowMs` while the node compares its error rate and latency with
 * the serving versions'; past a limit it rolls back on its own, else it promotes.
 */
export const CanaryRequestSchema = z.strictObject(
  {
    percent: z
      .number({ message: 'canary.percent is the share of traffic the new version takes, 1 to 99' })
      .min(1, 'canary.percent is 1 to 99')
      .max(99, 'canary.percent is 1 to 99'),
    windowMs: z
      .number({ message: 'canary.windowMs is how long the canary is watched, in milliseconds' })
      .int('canary.windowMs is a whole number of milliseconds')
      .min(1000, 'canary.windowMs is at least 1000 (1 s)')
      .max(86_400_000, 'canary.windowMs is at most 86400000 (24 h)'),
    /** Roll back when the canary's error rate is this many percentage points over the serving versions' (default 5). */
    maxErrorRate: z.number().min(0, 'canary.maxErrorRate is 0 to 100 points').max(100).optional(),
    /**
     * Roll back when the canary's latency percentile (p99, or p90 or p50 when the calls are too few
     * to estimate a p99 on both sides) is over this multiple of the serving versions' (default 1.5);
     * "off": latency is not judged, errors still are.
     */
    maxP99Ratio: z
      .union([z.number().min(1, 'canary.maxP99Ratio is at least 1'), z.literal('off')], {
        message: 'canary.maxP99Ratio is a number ≥ 1, or "off"',
      })
      .optional(),
    /** Calls the canary must take before it is judged (default 10). */
    minCalls: z.number().int().min(1, 'canary.minCalls is at least 1').max(1_000_000).optional(),
  },
  {
    error: (issue) =>
      issue.code === 'unrecognized_keys'
        ? `unknown canary setting ${issue.keys.map((k) => `"${k}"`).join(', ')}: send percent, windowMs, maxErrorRate, maxP99Ratio or minCalls`
        : 'send "canary": {"percent": 10, "windowMs": 60000}',
  },
);
export type CanaryRequest = z.infer<typeof CanaryRequestSchema>;

/** A latency percentile in ms, null when the side's timed calls are too few to estimate it. */
const percentileMs = z.number().nullable();

/** What a canary saw of one side (the canary, or the serving versions together) over its window. */
export const CanaryObservedSchema = z.looseObject({
  /** Calls answered or failed since the canary started. */
  calls: z.number(),
  failed: z.number(),
  /** Answered calls timed on the watching node since the canary started (the latest 1024 at most). */
  sampled: z.number().optional(),
  /** Percentiles of those, each null until the sample has 10 calls above it (p50: 20 calls, p90: 100, p99: 1000). */
  p50Ms: percentileMs.optional(),
  p90Ms: percentileMs.optional(),
  p99Ms: percentileMs,
});
export type CanaryObserved = z.infer<typeof CanaryObservedSchema>;

/**
 * A function's latest canary, kept in its record: what it watches, and once decided, what it did
 * and why (`promoted`, `rolled-back`; `cancelled` when the traffic was changed by hand meanwhile).
 */
export const CanarySchema = z.looseObject({
  version: z.number(),
  percent: z.number(),
  windowMs: z.number(),
  maxErrorRate: z.number(),
  /** The latency limit as a multiple of the serving versions' percentile; "off": latency not judged. */
  maxP99Ratio: z.union([z.number(), z.literal('off')]),
  minCalls: z.number(),
  /** The split before the canary: what a rollback returns to. */
  baseline: z.record(z.string(), z.number()),
  /** The split while it is watched. */
  split: z.record(z.string(), z.number()),
  startedAt: z.string(),
  state: z.enum(['watching', 'promoted', 'rolled-back', 'cancelled']),
  reason: z.string().optional(),
  /** Once decided: what decided a rollback (its error rate, its latency, or too few calls to judge). */
  cause: z.enum(['errors', 'latency', 'calls']).optional(),
  /** Once decided: the latency percentile compared (null: latency was not judged; the reason says why). */
  percentile: z.enum(CANARY_PERCENTILES).nullable().optional(),
  decidedAt: z.string().optional(),
  observed: z.looseObject({ canary: CanaryObservedSchema, baseline: CanaryObservedSchema }).optional(),
});
export type Canary = z.infer<typeof CanarySchema>;
