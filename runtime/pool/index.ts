export type { ThreadPlan } from './capacity.js';
export { threadPlan } from './capacity.js';
export { namedIndex } from './io-binding.js';
export type { PoolEvent, PoolState } from './lifecycle.js';
export { PoolLifecycle } from './lifecycle.js';
export { Pool } from './pool.js';
export { rowViews } from './split.js';
export type { DurationSummary, PoolCounters } from './stats.js';
export { addCounters, countFailure, newCounters, observe, RecentLatencies } from './stats.js';
export type {
  CallOptions,
  ColdStart,
  InvokeResponse,
  PoolArtifacts,
  PoolOptions,
  PoolStats,
  PoolSummary,
  ServingPool,
} from './types.js';
