/**
 * Redis restarted under load: while it is down the node answers 503 at once (sync calls, async
 * submissions, the management API) instead of hanging, and once it is back the node reconnects on
 * its own: calls, deploys and async jobs work again, with the state Redis kept (AOF).
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { HearthNode } from '../../../platform/node/index.js';
import { modelPath } from '../../helpers/fixtures.js';
import { postFunction, testNode, upload } from '../../helpers/node.js';
import type { TestRedis } from '../../helpers/redis.js';
import { startRedis } from '../../helpers/redis.js';
import { SMALL_SPEC } from '../../helpers/specs.js';
import { waitFor } from '../../helpers/wait.js';

const dir = await mkdtemp(join(tmpdir(), 'hearth-redis-outage-'));
const SPEC = SMALL_SPEC;
const BODY = JSON.stringify({ inputs: { x: [[1, 2, 3, 4]] } });

describe('Redis restarted under load', () => {
  let redis: TestRedis;
  let node: HearthNode;
  beforeAll(async () => {
    redis = await startRedis(['--appendonly', 'yes', '--appendfsync', 'always', '--dir', dir]);
    node = await testNode(join(dir, 'node'), { REDIS_URL: redis.url, HEARTH_JOB_BACKOFF_MS: '100' });
    const model = await upload(node.httpUrl, new Uint8Array(await readFile(modelPath('small'))));
    const r = await postFunction(node.httpUrl, { spec: SPEC, artifacts: { model } });
    expect(r.status).toBe(201);
  });
  afterAll(async () => {
    await node?.close();
    await redis?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  const answer = async (path: string, init?: RequestInit): Promise<{ status: number }> => {
    const r = await fetch(`${node.httpUrl}${path}`, init);
    await r.arrayBuffer();
    return { status: r.status };
  };
  const call = () =>
    answer('/fn/small', { method: 'POST', body: BODY, headers: { 'content-type': 'application/json' } });
  const submit = () =>
    answer('/fn/small', {
      method: 'POST',
      body: BODY,
      headers: { 'content-type': 'application/json', prefer: 'respond-async' },
    });

  it('answers 503 at once while Redis is down, and serves again once it is back', async () => {
    let load = true;
    const seen: { status: number }[] = [];
    const callers = Array.from({ length: 4 }, async () => {
      while (load) {
        seen.push(await call());
        await new Promise((r) => setTimeout(r, 10));
      }
    });
    try {
      await waitFor(
        'a call served before the outage',
        () => seen,
        (s) => s.some((r) => r.status === 200),
      );
      await redis.stop();
      // Past the node's 1 s cache of the function's record, routing needs Redis.
      await new Promise((r) => setTimeout(r, 1500));
      const down = [
        await call(),
        await submit(),
        await answer('/api/v1/functions'),
        await answer('/api/v1/jobs/some-id'),
      ];
      for (const r of down) expect(r.status).toBe(503);

      await redis.start();
      const back = await waitFor(
        'calls to succeed again',
        async () => (await call()).status,
        (s) => s === 200,
      );
      expect(back).toBe(200);
    } finally {
      load = false;
      await Promise.all(callers);
    }
    // Nothing but 200 or 503 came back, and both did. Nothing waited for Redis: the calls above
    // were answered while it was still down (one that waited would have held the test until it
    // timed out), and every caller's loop ended.
    expect(new Set(seen.map((r) => r.status))).toEqual(new Set([200, 503]));

    // The queue reconnected too: an async job runs to the end.
    const accepted = await fetch(`${node.httpUrl}/fn/small`, {
      method: 'POST',
      body: BODY,
      headers: { 'content-type': 'application/json', prefer: 'respond-async' },
    });
    expect(accepted.status).toBe(202);
    const { id } = (await accepted.json()) as { id: string };
    const status = await waitFor(
      'the job to succeed',
      async () => ((await (await fetch(`${node.httpUrl}/api/v1/jobs/${id}`)).json()) as { status: string }).status,
      (s) => s === 'succeeded',
    );
    expect(status).toBe('succeeded');
  });

  it('drains and closes while Redis is down instead of waiting for it forever', async () => {
    const other = await startRedis(['--appendonly', 'no']);
    const drained = await testNode(join(dir, 'drain'), { REDIS_URL: other.url });
    const model = await upload(drained.httpUrl, new Uint8Array(await readFile(modelPath('small'))));
    await postFunction(drained.httpUrl, { spec: SPEC, artifacts: { model } });
    expect(
      (
        await fetch(`${drained.httpUrl}/fn/small`, {
          method: 'POST',
          body: BODY,
          headers: { 'content-type': 'application/json', prefer: 'respond-async' },
        })
      ).status,
    ).toBe(202);
    await other.stop();
    // Its job queue's workers and the cluster's would wait for Redis; the drain bounds them.
    const outcome = await Promise.race([
      drained.drain().then(() => 'drained'),
      new Promise((r) => setTimeout(() => r('still waiting after 30 s'), 30_000)),
    ]);
    expect(outcome).toBe('drained');
  });
});
