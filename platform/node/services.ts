/**
 * The node's services over its stores: the function service, the metrics it reports to, and the job
 * queue that runs asynchronous invocations through it. Each refers to the others (the autoscaler
 * counts the queue's waiting jobs; a cold start is observed in the metrics; a job invokes a function).
 */
import { gpuMetrics } from '../../runtime/index.js';
import type { Config } from '../config/index.js';
import { FunctionService } from '../functions/index.js';
import type { JobQueue } from '../jobs/index.js';
import { createJobQueue } from '../jobs/index.js';
import type { Logger } from '../log/index.js';
import { Metrics } from '../metrics/index.js';
import type { Stores } from './stores.js';

export interface Services {
  service: FunctionService;
  metrics: Metrics;
  jobs: JobQueue;
}

export function createServices(config: Config, stores: Stores, logOf: (component: string) => Logger): Services {
  const { registry, artifacts, cluster, runners, secrets, functionLogs, nodeId } = stores;
  let metrics: Metrics | undefined;
  const service = new FunctionService({
    runners,
    registry,
    secrets: secrets.store,
    artifacts,
    dataDir: config.dataDir,
    log: logOf('functions'),
    autoscaleTickMs: config.autoscaleTickMs,
    cluster,
    queuedElsewhere: (n, v) => (cluster?.queued(n, v) ?? 0) + jobs.waiting(n),
    onColdStart: (n, v, phases) => metrics?.observeColdStart(n, v, phases),
    logs: functionLogs,
  });
  metrics = new Metrics(
    () => service.pools(),
    () => service.refreshStats(),
    gpuMetrics,
  );
  const jobs = createJobQueue(
    config,
    nodeId,
    // A job's try has a deadline: a hook or model that never answers fails it instead of holding it.
    (name, version, request) =>
      service.invoke(name, version, request, { deadline: performance.now() + config.jobs.timeoutMs }),
    logOf('jobs'),
  );
  return { service, metrics, jobs };
}
