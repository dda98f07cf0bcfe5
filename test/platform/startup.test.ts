/**
 * A request that reaches a node while it starts — a client that calls as soon as the port answers,
 * after a restart — is held and answered once the node serves, as a cold start is; readiness stays
 * 503 until then for load balancers. A node's own process, restarted on its data dir with a
 * function that keeps an instance warm (scaling.minInstances 1), which it loads before it serves.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, expect, it } from 'vitest';

import { buildNode } from '../../tools/build-node.js';
import { stop } from '../bench/load.js';
import { modelPath, REPO_ROOT } from '../helpers/fixtures.js';
import { deployFixture, spawnNode } from '../helpers/node.js';
import { maxAbsDiff } from '../helpers/random.js';
import { pythonForward } from '../helpers/reference.js';
import { SMALL_SPEC, SMALL_X } from '../helpers/specs.js';

const dir = await mkdtemp(join(tmpdir(), 'hearth-startup-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

const freePort = (): Promise<number> =>
  new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });

it('holds a request that arrives while the node starts and answers it once it serves', async () => {
  const data = join(dir, 'data');
  const first = await spawnNode(data);
  try {
    const r = await deployFixture(first.url, { ...SMALL_SPEC, scaling: { minInstances: 1 } }, { model: 'small' });
    expect(r.status).toBe(201);
  } finally {
    await stop(first.child);
  }

  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const second = spawnNode(data, { HEARTH_HTTP_PORT: String(port) });
  try {
    // As soon as the port answers (liveness), before the node is ready.
    for (;;) {
      const live = await fetch(`${url}/v2/health/live`).catch(() => undefined);
      if (live?.status === 200) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const answer = fetch(`${url}/fn/small`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ inputs: { x: SMALL_X } }),
    });
    // Asked after the request was sent: the node was still starting when it arrived.
    expect((await fetch(`${url}/v2/health/ready`)).status).toBe(503);
    const held = await answer;
    expect(held.status).toBe(200);
    const y = ((await held.json()) as { outputs: { y: number[][] } }).outputs.y;
    const reference = pythonForward(modelPath('small'), [
      { dtype: 'FP32', shape: [2, 4], data: Float32Array.from(SMALL_X.flat()) },
    ]).outputs[0]!.data as Float32Array;
    expect(maxAbsDiff(Float32Array.from(y.flat()), reference)).toBeLessThan(1e-6);
    expect((await fetch(`${url}/v2/health/ready`)).status).toBe(200);
  } finally {
    await stop((await second).child);
  }
}, 120_000);

it("serves from the built node as `npm start` runs it (dist/node/main.mjs): a hook function's answer as the model's, its runner forked from the template", async () => {
  await buildNode();
  const data = join(dir, 'built');
  const node = await spawnNode(data, {}, undefined, join(REPO_ROOT, 'dist', 'node', 'main.mjs'));
  try {
    const spec = { ...SMALL_SPEC, hook: 'hook.ts' };
    const r = await deployFixture(node.url, spec, { model: 'small', hook: 'echo', bundles: join(dir, 'bundles') });
    expect(r.status).toBe(201);
    const answer = await fetch(`${node.url}/fn/small`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ x: SMALL_X }),
    });
    expect(answer.status).toBe(200);
    const reference = pythonForward(modelPath('small'), [
      { dtype: 'FP32', shape: [2, 4], data: Float32Array.from(SMALL_X.flat()) },
    ]).outputs[0]!.data as Float32Array;
    const { y } = (await answer.json()) as { y: number[][] };
    expect(maxAbsDiff(Float32Array.from(y.flat()), reference)).toBeLessThan(1e-6);
    const info = (await (await fetch(`${node.url}/api/v1/functions/small`)).json()) as {
      pools: { coldStart?: { runnerFrom?: string } }[];
    };
    expect(info.pools.find((p) => p.coldStart)?.coldStart?.runnerFrom).toBe('template');
  } finally {
    await stop(node.child);
  }
}, 120_000);
