export { bundleHook } from '../../sdk/hooks/bundle.js';
export { bundleEntry, hookWorkerFile } from './bundle.js';
export { Exchange } from './exchange.js';
export type { HookPoolOptions, PostOutcome } from './hook-pool.js';
export { HookPool } from './hook-pool.js';
export type { HookCallOptions } from './hook-threads.js';
export type { RawRequest } from './messages.js';
export type { PreOutcome } from './pre-waiters.js';
