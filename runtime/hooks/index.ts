export { HookPool } from './hook-pool.js';
export type { HookPoolOptions, CallOptions, PostOutcome } from './hook-pool.js';
export { bundleHook, hookWorkerFile } from './bundle.js';
export type { RawRequest } from './messages.js';
