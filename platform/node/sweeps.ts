/**
 * What a node does in the background of serving: in cluster mode, a sweep of the shared registry
 * every few seconds; and, once it serves, the canaries it watched before it stopped, watched again.
 */
import type { FunctionService } from '../functions/index.js';
import type { JobQueue } from '../jobs/index.js';
import type { Logger } from '../log/index.js';
import type { Registry } from '../registry/index.js';

/** How often a node of a cluster sweeps the registry. */
const SWEEP_MS = 5000;

/**
 * Cluster mode: this node takes any function's jobs, not only those it accepted, and learns of
 * functions deployed (and deleted) through other nodes within a few seconds. A GPU node also adopts the versions
 * that wait for a GPU (deployed through a node without one). Returns the sweep's timer (none
 * without a cluster), for close() to clear.
 */
export function startClusterSweep(
  registry: Registry,
  jobs: JobQueue,
  service: FunctionService,
  log: Logger,
): NodeJS.Timeout | undefined {
  const serveAll = (): void => {
    void registry.list().then(
      (fs) => {
        for (const f of fs) jobs.serve(f.name);
        // Functions deleted through other nodes: what this node keeps of them by name goes.
        service.deletions.listed(fs);
        void service
          .resumeCanaries(fs)
          .catch((error: unknown) => log.warn({ reason: (error as Error).message }, 'taking over canaries failed'));
      },
      () => undefined,
    );
    void service
      .refreshScaling()
      .catch((error: unknown) => log.warn({ reason: (error as Error).message }, 'refreshing scaling failed'));
    void service
      .adoptWaiting()
      .catch((error: unknown) => log.warn({ reason: (error as Error).message }, 'adopting waiting versions failed'));
  };
  const serving = jobs.kind === 'bullmq' ? setInterval(serveAll, SWEEP_MS).unref() : undefined;
  if (serving) setTimeout(serveAll, 100).unref();
  return serving;
}

/** Canaries an embedded node watched before it stopped are watched again. */
export function resumeCanaries(service: FunctionService, log: Logger): void {
  void service
    .resumeCanaries()
    .catch((error: unknown) => log.warn({ reason: (error as Error).message }, 'resuming canaries failed'));
}
