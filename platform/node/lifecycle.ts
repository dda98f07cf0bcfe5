/**
 * How a node ends. close(): readiness 503, jobs and in-flight responses get a bounded wait, then the
 * servers, pools, secrets and shared memory close, in that order. drain() (SIGTERM): the same, after
 * jobs, calls forwarded here, pools and responses have had until HEARTH_DRAIN_TIMEOUT_MS to finish.
 */
import type { Server } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';

import type { RunnerHost } from '../../runtime/index.js';
import type { Cluster } from '../cluster/index.js';
import type { FunctionService } from '../functions/index.js';
import type { createGrpcServer } from '../grpc/index.js';
import type { InFlight } from '../http/index.js';
import type { JobQueue } from '../jobs/index.js';
import type { Kserve } from '../kserve/index.js';
import type { Logger } from '../log/index.js';
import type { Readiness } from './readiness.js';

/** The longest close() waits for the responses of requests in flight. */
const CLOSE_WAIT_MS = 10_000;

/** What a node's end stops. */
export interface Running {
  readiness: Readiness;
  stopReload: (() => void) | undefined;
  /** The cluster sweep's timer. */
  serving: NodeJS.Timeout | undefined;
  jobs: JobQueue;
  cluster: Cluster | undefined;
  server: Server;
  inflight: InFlight;
  grpcServer: ReturnType<typeof createGrpcServer>;
  metricsServer: Server;
  service: FunctionService;
  secrets: { close(): Promise<void> };
  kserve: Kserve;
  runners: RunnerHost | undefined;
}

/** close(), which runs once however often it is called. */
export function closer(r: Running): () => Promise<void> {
  let closed = false;
  return async (): Promise<void> => {
    if (closed) return;
    closed = true;
    r.readiness.stop();
    r.stopReload?.();
    clearInterval(r.serving);
    // Jobs still running when the wait ends fail as their pools stop below.
    await Promise.race([r.jobs.close(), sleep(CLOSE_WAIT_MS, undefined, { ref: false })]);
    await r.cluster?.close();
    // New connections are refused and idle ones closed at once; requests in flight get their
    // responses (for at most CLOSE_WAIT_MS); then what is still open goes too — a kept-alive
    // socket whose client sent part of a request would otherwise hold the server for its 65 s.
    const httpClosed = new Promise<void>((resolve) => r.server.close(() => resolve()));
    await Promise.race([r.inflight.idle(), sleep(CLOSE_WAIT_MS, undefined, { ref: false })]);
    r.server.closeAllConnections();
    await httpClosed;
    await new Promise<void>((resolve) => r.grpcServer.tryShutdown(() => resolve()));
    await new Promise<void>((resolve) => r.metricsServer.close(() => resolve()));
    await r.service.close();
    await r.secrets.close();
    r.kserve.sharedMemory.close();
    await r.kserve.tracer.close();
  };
}

/** drain(): readiness 503, in-flight work finishes (until `drainTimeoutMs`), then close(). */
export function drainer(
  r: Running,
  drainTimeoutMs: number,
  close: () => Promise<void>,
  log: Logger,
): () => Promise<void> {
  return async (): Promise<void> => {
    r.readiness.stop();
    log.info({ inflight: r.inflight.count }, 'draining');
    // Running jobs and calls forwarded here finish while their pools still serve (or, killed, go
    // back to the queue) — until the drain's deadline: then what is left fails as the node closes.
    const end = performance.now() + drainTimeoutMs;
    let late = false;
    const bounded = async (step: Promise<unknown> | undefined): Promise<void> => {
      const left = end - performance.now();
      if (late || left <= 0) {
        late = true;
        return;
      }
      late = (await Promise.race([step?.then(() => false), sleep(left, true, { ref: false })])) === true;
    };
    await bounded(r.jobs.close());
    await bounded(r.cluster?.close());
    await bounded(r.service.drain());
    // Responses of requests the pools have finished may still be on their way out.
    await bounded(r.inflight.idle());
    if (late) {
      log.warn(
        { inflight: r.inflight.count, waitedMs: drainTimeoutMs },
        'the drain ran past HEARTH_DRAIN_TIMEOUT_MS: what is left fails as the node closes',
      );
      // Runners end at once: what they still hold is answered 503 rather than cut off.
      await r.runners?.close();
    }
    await close();
    log.info({}, 'drained');
  };
}
