export { Pool } from './pool.js';
export type { PoolOptions, PoolStats, InvokeOptions, InvokeResponse, ColdStart } from './pool.js';
export type { PoolState, PoolEvent } from './lifecycle.js';
export type { PoolCounters, DurationSummary } from './stats.js';
export { addCounters, newCounters } from './stats.js';
export { namedIndex } from './io-binding.js';
