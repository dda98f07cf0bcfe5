/**
 * The BullMQ adapter's own cases: its reconciler settles a job the queue failed by itself (its nodes
 * kept dying) and sends its webhook; a Redis whose maxmemory-policy may evict keys is refused at
 * start. Async invocations through a node, in each mode: ./jobs.test.ts.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { Queue, UnrecoverableError, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';

import { BullJobQueue, DEFAULT_JOB_OPTIONS, encodeRecord, newRecord } from '../../../platform/jobs/index.js';
import { bullConnection } from '../../../platform/redis/index.js';
import type { JobView } from '../../helpers/jobs.js';
import { receiver } from '../../helpers/jobs.js';
import { dropKeys, testNode, uniquePrefix } from '../../helpers/node.js';
import { startRedis } from '../../helpers/redis.js';
import { waitFor } from '../../helpers/wait.js';

const dir = await mkdtemp(join(tmpdir(), 'hearth-bull-jobs-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

const SECRET = `whsec_${randomBytes(24).toString('base64')}`;

describe('the BullMQ reconciler', () => {
  it('settles a job the queue failed by itself (no processor ran its catch) and sends its webhook, unasked', async () => {
    const reconcilePrefix = uniquePrefix();
    const redisUrl = 'redis://127.0.0.1:6379';
    const hook = await receiver();
    const fn = 'reconciled';
    const id = `stalled-${Date.now()}`;
    // As a job whose nodes all died mid-run looks: its record says running, BullMQ has failed it.
    const records = new Redis(redisUrl);
    const record = {
      ...newRecord(id, { function: fn, body: new Uint8Array(), contentType: 'x', webhook: hook.url }),
      status: 'running' as const,
      attempts: 3,
    };
    await records.set(`${reconcilePrefix}job:${id}`, encodeRecord(record), 'EX', 600);
    const connection = bullConnection(redisUrl, reconcilePrefix);
    const queue = new Queue(`fn.${fn}`, connection);
    await queue.add('invoke', { function: fn, body: '', contentType: 'x' }, { jobId: id, attempts: 1 });
    const foreign = new Worker(
      `fn.${fn}`,
      async () => {
        throw new UnrecoverableError('job stalled more than allowable limit');
      },
      connection,
    );
    await waitFor(
      'BullMQ to fail the job',
      () => queue.getJobState(id),
      (s) => s === 'failed',
      { intervalMs: 50 },
    );
    await foreign.close();
    const jobs = new BullJobQueue(async () => ({ body: new Uint8Array(), contentType: 'x', version: 1 }), {
      ...DEFAULT_JOB_OPTIONS,
      redisUrl,
      prefix: reconcilePrefix,
      lockMs: 1000,
      concurrency: 1,
      nodeId: 'test',
      webhookSecret: SECRET,
      webhooks: { allowHosts: ['127.0.0.1'] },
    });
    try {
      jobs.serve(fn);
      // Nobody reads the job: the reconciler settles it on its own, and its webhook goes.
      await waitFor(
        'the webhook',
        () => hook.received.length,
        (n) => n > 0,
        { intervalMs: 50 },
      );
      const message = JSON.parse(hook.received[0]!.body) as { type: string; data: JobView };
      expect(message.type).toBe('invocation.failed');
      expect(message.data).toMatchObject({ id, status: 'failed', error: { code: 'UNAVAILABLE' } });
      const stored = JSON.parse((await records.get(`${reconcilePrefix}job:${id}`))!) as { status: string };
      expect(stored.status).toBe('failed');
    } finally {
      await jobs.close();
      await queue.close();
      records.disconnect();
      await hook.close();
      await dropKeys(reconcilePrefix);
    }
  });
});

describe('cluster mode start-up', () => {
  it('refuses a Redis whose maxmemory-policy is not noeviction', async () => {
    const redis = await startRedis(['--appendonly', 'no', '--maxmemory-policy', 'allkeys-lru']);
    try {
      await expect(testNode(join(dir, 'evicting'), { REDIS_URL: redis.url })).rejects.toThrow(/noeviction/);
    } finally {
      await redis.stop();
    }
  });
});
