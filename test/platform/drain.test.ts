/**
 * A node process's drain on SIGTERM (`npm start`'s): readiness goes 503, what it holds finishes —
 * a request in flight, a running async job on BullMQ — and it exits 0.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';

import { modelPath } from '../helpers/fixtures.js';
import { dropKeys, spawnNode, uniquePrefix, upload } from '../helpers/node.js';
import { deploySlow as deploy, inferSlow as infer, SLOW, untilSlowPool as untilPool } from '../helpers/slow.js';
import { waitFor } from '../helpers/wait.js';

const dir = await mkdtemp(join(tmpdir(), 'hearth-drain-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('SIGTERM', () => {
  it('drains a node process: readiness goes 503, the request in flight finishes, then it exits 0', async () => {
    const { child, url, exited } = await spawnNode(join(dir, 'sigterm'));
    const model = await upload(url, new Uint8Array(await readFile(modelPath('slow'))));
    expect((await deploy(url, SLOW, model)).status).toBe(201);

    const inflight = infer(url, 15_000).then(async (r) => ({
      status: r.status,
      body: (await r.json()) as { outputs: { shape: number[] }[] },
    }));
    await untilPool(url, (p) => p.instances.busy === 1);
    child.kill('SIGTERM');
    const ready = () =>
      fetch(`${url}/v2/health/ready`).then(
        (r) => r.status,
        () => 'closed',
      );
    await waitFor('readiness to go 503 in the drain', ready, (s) => s === 503 || s === 'closed');
    const response = await inflight;
    expect(response.status).toBe(200);
    expect(response.body.outputs[0]!.shape).toEqual([4, 512]);
    expect(await exited).toBe(0);
  });

  it('lets a running async job (BullMQ) finish before the node exits', async () => {
    const prefix = uniquePrefix();
    const env = { REDIS_URL: 'redis://127.0.0.1:6379', HEARTH_REDIS_PREFIX: prefix };
    const { child, url, exited, node } = await spawnNode(join(dir, 'sigterm-jobs'), env);
    // The job's record, read straight from Redis: another node would also take the job.
    const redis = new Redis('redis://127.0.0.1:6379');
    try {
      const model = await upload(url, new Uint8Array(await readFile(modelPath('slow'))));
      expect((await deploy(url, SLOW, model)).status).toBe(201);
      const body = JSON.stringify({
        inputs: { x: Array.from({ length: 4 }, () => new Array(512).fill(0.01)), n: 1500 },
      });
      const accepted = await fetch(`${url}/fn/slow`, {
        method: 'POST',
        body,
        headers: { 'content-type': 'application/json', prefer: 'respond-async' },
      });
      expect(accepted.status).toBe(202);
      const { id } = (await accepted.json()) as { id: string };
      const record = async () =>
        JSON.parse((await redis.get(`${prefix}job:${id}`)) ?? '{}') as {
          status?: string;
          node?: string;
          attempts?: number;
        };
      await waitFor('the job to run', record, (r) => r.status === 'running', { intervalMs: 20 });
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      expect(await record()).toMatchObject({ status: 'succeeded', node, attempts: 1 });
    } finally {
      await dropKeys(prefix);
      redis.disconnect();
    }
  });
});
