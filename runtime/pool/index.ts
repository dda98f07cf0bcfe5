export { Pool } from './pool.js';
export type {
  PoolArtifacts,
  PoolOptions,
  PoolStats,
  PoolSummary,
  CallOptions,
  InvokeResponse,
  ColdStart,
  ServingPool,
} from './types.js';
export type { PoolState, PoolEvent } from './lifecycle.js';
export type { PoolCounters, DurationSummary } from './stats.js';
export { addCounters, countFailure, newCounters, observe } from './stats.js';
export { PoolLifecycle } from './lifecycle.js';
export { namedIndex } from './io-binding.js';
export { rowViews } from './split.js';
