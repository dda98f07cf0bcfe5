export { Pool } from './pool.js';
export type { PoolOptions, PoolState, PoolEvent, PoolStats, InvokeOptions, InvokeResponse, ColdStart } from './pool.js';
export type { PoolCounters, DurationSummary } from './stats.js';
