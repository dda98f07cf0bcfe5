/**
 * Prometheus metrics (prom-client) on the metrics port, per function and version, with Triton's
 * names where Triton has one. Counters are read from the pools when Prometheus scrapes, so the
 * request path pays nothing for them; they restart from zero when a pool is reloaded, as Triton's do.
 */

import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer } from 'node:http';
import type { ServerOptions as HttpsOptions } from 'node:https';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';

import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry as PromRegistry } from 'prom-client';

import type { ColdStart, GpuMetric, PoolSummary } from '../../runtime/index.js';
import { gpuGauges } from './gpu-series.js';
import { LABELS, poolCounters, poolGauges, poolGpuMemory } from './pool-series.js';

export class Metrics {
  readonly registry = new PromRegistry();
  readonly #coldStart: Histogram<'model' | 'version' | 'phase'>;
  readonly #uploaded: Counter;
  readonly #nodeStart: Gauge<'phase'>;

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
    poolCounters(this.registry, pools);
    poolGauges(this.registry, pools);
    if (gpus().length > 0) gpuGauges(this.registry, gpus);
    poolGpuMemory(this.registry, pools);
    this.#uploaded = new Counter({
      name: 'hearth_artifact_upload_bytes_total',
      help: 'Bytes of artifact uploads this node stored',
      registers: [this.registry],
    });
    this.#nodeStart = new Gauge({
      name: 'hearth_node_start_seconds',
      help: "This node's start, from its process's: modules (its code loaded), stores (registry, artifacts, runners opened), port_live (HTTP answers), ready (it serves)",
      labelNames: ['phase'],
      registers: [this.registry],
    });
    this.#coldStart = new Histogram({
      name: 'hearth_cold_start_seconds',
      help: "Cold start time by phase: queue (the first request's whole wait), fetch, runner (the wait for a runner process past the fetch), runner_jail and runner_runtime (that runner's own start), load, warmup",
      labelNames: [...LABELS, 'phase'],
      registers: [this.registry],
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    });
  }

  /** Sets when each phase of this node's start ended, in seconds since its process began. */
  observeNodeStart(phases: Record<string, number>): void {
    for (const [phase, seconds] of Object.entries(phases)) this.#nodeStart.set({ phase }, seconds);
  }

  /** Counts the bytes of an artifact upload this node stored. */
  observeUpload(bytes: number): void {
    this.#uploaded.inc(bytes);
  }

  /** Observes each phase given (queue arrives later than the others, on its own). */
  observeColdStart(name: string, version: number, phases: Partial<ColdStart>): void {
    const named = { ...phases, runner_jail: phases.runnerJail, runner_runtime: phases.runnerRuntime };
    for (const phase of ['queue', 'fetch', 'runner', 'runner_jail', 'runner_runtime', 'load', 'warmup'] as const) {
      const seconds = named[phase];
      if (seconds !== undefined) this.#coldStart.observe({ model: name, version: String(version), phase }, seconds);
    }
  }

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
