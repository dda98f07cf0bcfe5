/** The job queue chosen by configuration: in process (kept in the data dir), or BullMQ on Redis. */
import { join } from 'node:path';

import type { ErrorLog } from '../errors/index.js';
import { BullJobQueue } from './bull/bull-job-queue.js';
import { FsJobQueue } from './fs/fs-job-queue.js';
import type { Invoker, JobQueue, JobSettings } from './jobs.js';

export { BullJobQueue } from './bull/bull-job-queue.js';
export { checkNoEviction } from './bull/redis-checks.js';
export { FsJobQueue } from './fs/fs-job-queue.js';
export * from './jobs.js';
export type { WebhookPolicy } from './webhook-policy.js';
export { parseAllowHosts } from './webhook-policy.js';

/**
 * What the queues read of the node's configuration (its Config has these fields; the node passes
 * it, and jobs/ depends on no configuration module).
 */
export interface JobQueueConfig {
  /** The embedded queue keeps its jobs in this folder's `jobs/`. */
  dataDir: string;
  /** Cluster mode: BullMQ on this Redis, Hearth's keys under `redisPrefix`. */
  redisUrl?: string;
  redisPrefix: string;
  /** Signs webhooks; without it, jobs that ask for one are refused. */
  webhookSecret?: string;
  jobs: JobSettings;
}

/** In cluster mode, call checkNoEviction first (startNode does, before it opens anything). */
export function createJobQueue(
  config: JobQueueConfig,
  nodeId: string,
  invoke: Invoker,
  log?: ErrorLog & { info(o: object, msg?: string): void },
): JobQueue {
  const options = { ...config.jobs, webhookSecret: config.webhookSecret, log };
  if (!config.redisUrl) return new FsJobQueue(invoke, { ...options, dir: join(config.dataDir, 'jobs') });
  return new BullJobQueue(invoke, { ...options, redisUrl: config.redisUrl, prefix: config.redisPrefix, nodeId });
}
