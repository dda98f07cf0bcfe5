/**
 * The percentiles a canary's latency rule may compare, from the highest (its samples allowing).
 * A file of its own, with no zod: the schemas, the console's canary text and the judge share it.
 */
export const CANARY_PERCENTILES = ['p99', 'p90', 'p50'] as const;
export type CanaryPercentile = (typeof CANARY_PERCENTILES)[number];
