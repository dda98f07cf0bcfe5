/**
 * Hearth's data plane for one node — the engine, the batcher, hook threads and pools — as the
 * platform uses it: a pool per function version (in this process, or in a runner process from a
 * RunnerHost), its counters, and the few engine calls a node makes itself.
 */

// Pools, wherever they run, and what they report.
export { Pool, addCounters, newCounters } from './pool/index.js';
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
} from './pool/index.js';
export type { SequenceFlags } from './batcher/index.js';

// Runner processes.
export { DEFAULT_ARENA_MB, RunnerHost, RunnerPool, groupOf, runnerEntryFile } from './runner/index.js';
export type { RunnerCrash, SandboxReport } from './runner/index.js';

// Hooks: bundled once per version, run on hook threads.
export { bundleHook, hookWorkerFile } from './hooks/index.js';

// The engine, where the node calls it itself: devices and GPU metrics, threads, the KServe JSON parse.
export { devices, gpuMetrics, loadModel, parseInferJsonAsync, setIntraOpThreads, threads } from './engine/index.js';
export type { GpuMetric } from './engine/index.js';
