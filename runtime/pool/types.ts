/** A pool's public shapes: how it is built, how a call is made, what it reports. */
import type { EventEmitter } from 'node:events';

import type { FunctionSpec } from '../../sdk/spec/function-spec.js';
import type { TensorsByName } from '../../sdk/tensor.js';
import type { Clock, SequenceFlags } from '../batcher/index.js';
import type { RawRequest } from '../hooks/index.js';
import type { PoolEvent, PoolState } from './lifecycle.js';
import type { PoolCounters } from './stats.js';

/** A pool's model and hook as it loads them; `source` says where the model came from (cold-start phases). */
export interface PoolArtifacts {
  model: string | Uint8Array;
  hookBundle?: string;
  source?: string;
  /** The values of the secrets the spec lists, for the hook's context (never an environment). */
  secrets?: Record<string, string>;
}

export interface PoolOptions {
  spec: FunctionSpec;
  version: number;
  /** The TorchScript file, or its bytes (or `artifacts`). */
  model?: string | Uint8Array;
  /** The bundled hook (bundleHook); absent: the default JSON hook. */
  hookBundle?: string;
  /**
   * Where the model and hook come from when the pool starts, instead of `model` and `hookBundle`:
   * a platform fetches (and verifies) them from its artifact store as part of the cold start.
   */
  artifacts?: () => Promise<PoolArtifacts>;
  hooks?: {
    threads?: number;
    timeoutMs?: number;
    maxHeapMb?: number;
    sandbox?: boolean;
    inline?: boolean;
    secrets?: Record<string, string>;
  };
  warmupRuns?: number;
  /** Requests waiting for this pool outside it (a runner's node holds them until it is warm). */
  waitingOutside?: number;
  /**
   * The pool has its process to itself (a runner): instances.gpuMemory caps the process's CUDA
   * caching allocator. In a shared process the cap only places and bounds the pool.
   */
  ownProcess?: boolean;
  clock?: Clock;
}

export interface CallOptions {
  /** Absolute deadline, performance.now() milliseconds. */
  deadline?: number;
  signal?: AbortSignal;
  /** 1 (highest) to spec.batching.priorityLevels. */
  priority?: number;
  /** The request's sequence (required by, and only for, a spec with `sequence`). */
  sequence?: SequenceFlags;
  /**
   * How many callers' requests this one call carries, their rows one after another (a node's
   * gathered requests: runtime/runner/wire/gather.ts); 1 by default. The statistics count it as that many.
   */
  requests?: number;
}

export interface InvokeResponse {
  body: Uint8Array;
  contentType: string;
}

/** How long each phase of a cold start took, in seconds. */
export interface ColdStart {
  /**
   * How long the first request that found the pool cold waited for its forward: the queue wait
   * that covers fetch, load and warm-up. Absent until that request runs (and for a pool started
   * with nobody waiting).
   */
  queue?: number;
  fetch: number;
  load: number;
  warmup: number;
  /** Where the model came from: the store on disk, the local cache, or fetched from remote. */
  source?: string;
  /**
   * In a runner process: how long the cold start waited for its runner once the model was fetched
   * (0: a runner was up by then — the spare, or one started beside the fetch).
   */
  runner?: number;
  /** That runner's own start: spawn to its jail applied, then to its runtime up (its hello). */
  runnerJail?: number;
  runnerRuntime?: number;
  /** How that runner started: forked from the runner template, or Node exec'd. */
  runnerFrom?: 'template' | 'exec';
}

export interface PoolStats extends PoolCounters {
  state: PoolState;
  instances: { total: number; idle: number; busy: number; loading: number };
  queueDepth: number;
  /** Requests inside the pool: in hooks, queued or running. */
  pending: number;
  hookThreads: number;
  coldStart?: ColdStart;
  /** Latency percentiles over the latest (up to 1024) requests. */
  latency?: { p50Ms: number; p99Ms: number; of: number };
  /**
   * On CUDA: bytes the pool's process's caching allocator holds on its device (allocated, and
   * reserved from the driver), and instances.gpuMemory's cap in bytes when set.
   */
  gpuMemory?: { allocatedBytes: number; reservedBytes: number; capBytes?: number };
}

/** A pool as a node lists it: its version, device, counters and latest events. */
export interface PoolSummary extends PoolStats {
  function: string;
  version: number;
  device: string;
  /** The pool's latest events (state changes, instances added and removed), oldest first. */
  events: PoolEvent[];
}

/**
 * A function version's pool as the platform drives it, wherever it runs: `Pool` in this process
 * (isolation none), `RunnerPool` in a runner process. Events: `event` (PoolEvent), `cold-start`
 * (ColdStart), `cold-start-queue` (seconds), and for a runner `crash`.
 */
export interface ServingPool extends EventEmitter {
  readonly spec: FunctionSpec;
  readonly version: number;
  readonly state: PoolState;
  readonly events: readonly PoolEvent[];
  /** Where its instances run: `cpu`, `cuda:0`, … */
  readonly device: string;
  /**
   * performance.now() its last request arrived or was answered, whichever is later (the autoscaler's
   * idle clock: a burst that outlasts scaleDownAfterS is not idle the moment it ends).
   */
  readonly lastRequestAt: number;
  start(): Promise<void>;
  invoke(request: RawRequest, options?: CallOptions): Promise<InvokeResponse>;
  infer(tensors: TensorsByName, options?: CallOptions): Promise<TensorsByName>;
  addInstance(): void;
  /** False where no instance may go (the last one, a busy one, a sequence pool). */
  removeInstance(): boolean;
  /** How many more requests it would take now without queueing past its batch. */
  room(): number;
  stats(): PoolStats;
  /** Brings stats() up to now (a runner's counters arrive in snapshots); a pool in this process is always current. */
  refresh(): Promise<void>;
  drain(): Promise<void>;
  stop(): Promise<void>;
}
