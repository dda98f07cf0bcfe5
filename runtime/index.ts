/**
 * Hearth's data plane for one node — the engine, the batcher, hook threads and pools — as the
 * platform uses it: a pool per function version (in this process, or in a runner process from a
 * RunnerHost), its counters, and the few engine calls a node makes itself.
 */

export type { SequenceFlags } from './batcher/index.js';
export type { GpuMetric } from './engine/index.js';
// The engine, where the node calls it itself: devices and GPU metrics, threads, the KServe JSON parse.
export {
  devices,
  gpuMetrics,
  loadModel,
  parseInferJsonAsync,
  setIntraOpThreads,
  threads,
  usableCores,
} from './engine/index.js';
// Hooks: bundled once per version, run on hook threads.
export { bundleHook, hookWorkerFile } from './hooks/index.js';
// Pools, wherever they run, and what they report.
export type {
  CallOptions,
  ColdStart,
  DurationSummary,
  InvokeResponse,
  PoolCounters,
  PoolEvent,
  PoolStats,
  PoolSummary,
  ServingPool,
  ThreadPlan,
} from './pool/index.js';
export { addCounters, newCounters, Pool, RecentLatencies, threadPlan } from './pool/index.js';
export type { RunnerCrash, SandboxReport } from './runner/index.js';
// Runner processes.
export {
  DEFAULT_ARENA_MB,
  discardEarlyTemplate,
  groupOf,
  limitedLines,
  RunnerHost,
  RunnerPool,
  runnerEntryFile,
} from './runner/index.js';
