/** The job queue chosen by configuration: in process (kept in the data dir), or BullMQ on Redis. */
import { join } from 'node:path';

import type { ErrorLog } from '../errors/index.js';
import type { Config } from '../config.js';
import { BullJobQueue } from './bull/bull-job-queue.js';
import type { Invoker, JobQueue } from './jobs.js';
import { MemoryJobQueue } from './memory/memory-job-queue.js';

export * from './jobs.js';
export { BullJobQueue, checkNoEviction } from './bull/bull-job-queue.js';
export { MemoryJobQueue } from './memory/memory-job-queue.js';

/** In cluster mode, call checkNoEviction first (startNode does, before it opens anything). */
export function createJobQueue(
  config: Config,
  nodeId: string,
  invoke: Invoker,
  log?: ErrorLog & { info(o: object, msg?: string): void },
): JobQueue {
  const options = { ...config.jobs, webhookSecret: config.webhookSecret, log };
  if (!config.redisUrl) return new MemoryJobQueue(invoke, { ...options, dir: join(config.dataDir, 'jobs') });
  return new BullJobQueue(invoke, { ...options, redisUrl: config.redisUrl, prefix: config.redisPrefix, nodeId });
}
