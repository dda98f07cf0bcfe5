/**
 * The per-pool series, one per function and version, read from the pools' summaries at each scrape
 * (reset first, so the series of a pool that has gone go with it), with Triton's names where Triton
 * has one.
 */

import type { Registry as PromRegistry } from 'prom-client';
import { Counter, Gauge } from 'prom-client';

import type { PoolSummary } from '../../runtime/index.js';

/** Every per-pool series' labels (Triton's). */
export const LABELS = ['model', 'version'] as const;

type Pools = () => PoolSummary[];

const labels = (p: PoolSummary) => ({ model: p.function, version: String(p.version) });

type PerPool = { reset(): void; inc(series: ReturnType<typeof labels>, value: number): void };

/** A collect() that sets one series per pool to `value`. */
const perPool = (pools: Pools, value: (p: PoolSummary) => number) =>
  function collect(this: PerPool): void {
    this.reset();
    for (const p of pools()) this.inc(labels(p), value(p));
  };

/** Requests, inferences, batches and their cumulative times; failures by reason; hook time by phase. */
export function poolCounters(registry: PromRegistry, pools: Pools): void {
  const counter = (name: string, help: string, value: (p: PoolSummary) => number): void => {
    new Counter({ name, help, labelNames: LABELS, registers: [registry], collect: perPool(pools, value) });
  };
  counter('nv_inference_request_success', 'Requests that got a response', (p) => p.success);
  counter('nv_inference_count', 'Inferences (rows) performed', (p) => p.inferenceCount);
  counter('nv_inference_exec_count', 'Forward passes (batches) run', (p) => p.execCount);
  counter('nv_inference_request_duration_us', 'Cumulative request time, microseconds', (p) =>
    Math.round(p.durations.request.totalUs),
  );
  counter('nv_inference_queue_duration_us', 'Cumulative time requests waited in the queue, microseconds', (p) =>
    Math.round(p.durations.queue.totalUs),
  );
  counter('nv_inference_compute_infer_duration_us', 'Cumulative forward time of batches, microseconds', (p) =>
    Math.round(p.durations.compute.totalUs),
  );
  new Counter({
    name: 'nv_inference_request_failure',
    help: 'Requests that failed, by reason',
    labelNames: [...LABELS, 'reason'],
    registers: [registry],
    collect() {
      this.reset();
      for (const p of pools())
        for (const [reason, n] of Object.entries(p.failures)) this.inc({ ...labels(p), reason }, n);
    },
  });
  new Counter({
    name: 'hearth_hook_duration_us',
    help: 'Cumulative time in hooks, microseconds, by phase',
    labelNames: [...LABELS, 'phase'],
    registers: [registry],
    collect() {
      this.reset();
      for (const p of pools()) {
        this.inc({ ...labels(p), phase: 'pre' }, Math.round(p.durations.pre.totalUs));
        this.inc({ ...labels(p), phase: 'post' }, Math.round(p.durations.post.totalUs));
      }
    },
  });
}

/** Requests inside each pool and in its queue; its instances by state. */
export function poolGauges(registry: PromRegistry, pools: Pools): void {
  const gauge = (name: string, help: string, value: (p: PoolSummary) => number): void => {
    new Gauge({ name, help, labelNames: LABELS, registers: [registry], collect: perPool(pools, value) });
  };
  gauge(
    'nv_inference_pending_request_count',
    'Requests inside the pool: in hooks, queued or running',
    (p) => p.pending,
  );
  gauge('hearth_queue_depth', 'Requests waiting in the batcher queue', (p) => p.queueDepth);
  new Gauge({
    name: 'hearth_pool_instances',
    help: 'Model instances by state',
    labelNames: [...LABELS, 'state'],
    registers: [registry],
    collect() {
      this.reset();
      for (const p of pools()) {
        this.set({ ...labels(p), state: 'idle' }, p.instances.idle);
        this.set({ ...labels(p), state: 'busy' }, p.instances.busy);
        this.set({ ...labels(p), state: 'loading' }, p.instances.loading);
      }
    },
  });
}

/** A CUDA pool's GPU memory: its process's caching allocator on its device. */
export function poolGpuMemory(registry: PromRegistry, pools: Pools): void {
  new Gauge({
    name: 'hearth_pool_gpu_memory_bytes',
    help: "A CUDA pool's process's caching allocator on its device: allocated, reserved, and the cap (instances.gpuMemory)",
    labelNames: [...LABELS, 'kind'],
    registers: [registry],
    collect() {
      this.reset();
      for (const p of pools()) {
        if (!p.gpuMemory) continue;
        this.set({ ...labels(p), kind: 'allocated' }, p.gpuMemory.allocatedBytes);
        this.set({ ...labels(p), kind: 'reserved' }, p.gpuMemory.reservedBytes);
        if (p.gpuMemory.capBytes !== undefined) this.set({ ...labels(p), kind: 'cap' }, p.gpuMemory.capBytes);
      }
    },
  });
}
