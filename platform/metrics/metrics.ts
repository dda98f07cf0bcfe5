/**
 * Prometheus metrics (prom-client) on the metrics port, per function and version, with Triton's
 * names where Triton has one. Counters are read from the pools when Prometheus scrapes, so the
 * request path pays nothing for them; they restart from zero when a pool is reloaded, as Triton's do.
 */
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { ServerOptions as HttpsOptions } from 'node:https';
import type { AddressInfo } from 'node:net';

import { Counter, Gauge, Histogram, Registry as PromRegistry, collectDefaultMetrics } from 'prom-client';

import type { ColdStart, GpuMetric } from '../../runtime/index.js';
import type { PoolSummary } from '../../runtime/index.js';

const LABELS = ['model', 'version'] as const;

export class Metrics {
  readonly registry = new PromRegistry();
  readonly #coldStart: Histogram<'model' | 'version' | 'phase'>;
  readonly #uploaded: Counter;

  readonly #refresh: () => Promise<void>;

  /**
   * `refresh` brings the pools' counters up to now before a scrape (runner processes report theirs);
   * `gpus` reads the GPUs (NVML), whose series exist only when it saw one at start.
   */
  constructor(
    pools: () => PoolSummary[],
    refresh: () => Promise<void> = async () => undefined,
    gpus: () => GpuMetric[] = () => [],
  ) {
    this.#refresh = refresh;
    collectDefaultMetrics({ register: this.registry, prefix: 'hearth_process_' });
    const labels = (p: PoolSummary) => ({ model: p.function, version: String(p.version) });
    // One series per pool and version, read from the pools' summaries at each scrape (reset first,
    // so the series of a pool that has gone go with it).
    type PerPool = { reset(): void; inc(series: ReturnType<typeof labels>, value: number): void };
    const perPool = (value: (p: PoolSummary) => number) =>
      function collect(this: PerPool): void {
        this.reset();
        for (const p of pools()) this.inc(labels(p), value(p));
      };
    const counter = (name: string, help: string, value: (p: PoolSummary) => number): void => {
      new Counter({ name, help, labelNames: LABELS, registers: [this.registry], collect: perPool(value) });
    };
    const gauge = (name: string, help: string, value: (p: PoolSummary) => number): void => {
      new Gauge({ name, help, labelNames: LABELS, registers: [this.registry], collect: perPool(value) });
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
      registers: [this.registry],
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
      registers: [this.registry],
      collect() {
        this.reset();
        for (const p of pools()) {
          this.inc({ ...labels(p), phase: 'pre' }, Math.round(p.durations.pre.totalUs));
          this.inc({ ...labels(p), phase: 'post' }, Math.round(p.durations.post.totalUs));
        }
      },
    });
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
      registers: [this.registry],
      collect() {
        this.reset();
        for (const p of pools()) {
          this.set({ ...labels(p), state: 'idle' }, p.instances.idle);
          this.set({ ...labels(p), state: 'busy' }, p.instances.busy);
          this.set({ ...labels(p), state: 'loading' }, p.instances.loading);
        }
      },
    });
    if (gpus().length > 0) this.#gpuGauges(gpus);
    new Gauge({
      name: 'hearth_pool_gpu_memory_bytes',
      help: "A CUDA pool's process's caching allocator on its device: allocated, reserved, and the cap (instances.gpuMemory)",
      labelNames: [...LABELS, 'kind'],
      registers: [this.registry],
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
    this.#uploaded = new Counter({
      name: 'hearth_artifact_upload_bytes_total',
      help: 'Bytes of artifact uploads this node stored',
      registers: [this.registry],
    });
    this.#coldStart = new Histogram({
      name: 'hearth_cold_start_seconds',
      help: "Cold start time by phase: queue (the first request's whole wait), fetch, load, warmup",
      labelNames: [...LABELS, 'phase'],
      registers: [this.registry],
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    });
  }

  /** Triton's GPU series, labelled by gpu_uuid as Triton labels them, read from NVML at each scrape. */
  #gpuGauges(gpus: () => GpuMetric[]): void {
    let latest: GpuMetric[] = [];
    const gpuGauge = (name: string, help: string, value: (g: GpuMetric) => number | undefined, first = false) =>
      new Gauge({
        name,
        help,
        labelNames: ['gpu_uuid'],
        registers: [this.registry],
        collect() {
          // One NVML read per scrape, by the first gauge collected; the others use it.
          if (first) latest = gpus();
          this.reset();
          for (const g of latest) {
            const v = value(g);
            if (v !== undefined) this.set({ gpu_uuid: g.uuid ?? String(g.index) }, v);
          }
        },
      });
    gpuGauge('nv_gpu_utilization', 'GPU utilization rate [0.0 - 1.0)', (g) => g.utilization, true);
    gpuGauge('nv_gpu_memory_total_bytes', 'GPU total memory, in bytes', (g) => g.memoryTotalBytes);
    gpuGauge('nv_gpu_memory_used_bytes', 'GPU used memory, in bytes', (g) => g.memoryUsedBytes);
    gpuGauge('nv_gpu_power_usage', 'GPU power usage in watts', (g) => g.powerWatts);
  }

  /** Counts the bytes of an artifact upload this node stored. */
  observeUpload(bytes: number): void {
    this.#uploaded.inc(bytes);
  }

  /** Observes each phase given (queue arrives later than the others, on its own). */
  observeColdStart(name: string, version: number, phases: Partial<ColdStart>): void {
    for (const phase of ['queue', 'fetch', 'load', 'warmup'] as const) {
      const seconds = phases[phase];
      if (seconds !== undefined) this.#coldStart.observe({ model: name, version: String(version), phase }, seconds);
    }
  }

  /** Serves /metrics; resolves with the port. */
  /**
   * Serves /metrics. `refuse` says why a request may not read them (a missing bearer key, a
   * browser's request to a node with no key), or undefined.
   */
  async listen(
    host: string,
    port: number,
    refuse: (req: IncomingMessage) => { status: number; error: string; code: string } | undefined = () => undefined,
    tls?: HttpsOptions,
  ): Promise<{ server: Server; port: number }> {
    const handler = (req: IncomingMessage, res: ServerResponse) => {
      const refusal = refuse(req);
      if (refusal) {
        res
          .writeHead(refusal.status, {
            'content-type': 'application/json',
            ...(refusal.status === 401 ? { 'www-authenticate': 'Bearer' } : {}),
          })
          .end(JSON.stringify({ error: refusal.error, code: refusal.code }));
        return;
      }
      if (req.url !== '/metrics') {
        res
          .writeHead(404, { 'content-type': 'application/json' })
          .end(JSON.stringify({ error: 'metrics are at /metrics', code: 'NOT_FOUND' }));
        return;
      }
      this.#refresh()
        .then(() => this.registry.metrics())
        .then(
          (text) => res.writeHead(200, { 'content-type': this.registry.contentType }).end(text),
          (error: unknown) => res.writeHead(500).end(String(error)),
        );
    };
    const server = tls ? createHttpsServer(tls, handler) : createServer(handler);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => resolve());
    });
    return { server, port: (server.address() as AddressInfo).port };
  }
}
