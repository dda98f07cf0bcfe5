/**
 * A request that reaches a node while it starts — a client that calls as soon as the port answers,
 * after a restart — is held and answered once the node serves, as a cold start is; readiness stays
 * 503 until then for load balancers. A node's own process, restarted on its data dir with a
 * function that keeps an instance warm (scaling.minInstances 1), which it loads before it serves.
 * A node whose Redis does not answer refuses to start, saying so.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, expect, it } from 'vitest';

import { buildNode } from '../../tools/build-node.js';
import { stop } from '../bench/load.js';
import { modelPath, REPO_ROOT } from '../helpers/fixtures.js';
import { deployFixture, onPickedPort, spawnNode } from '../helpers/node.js';
import { maxAbsDiff } from '../helpers/random.js';
import { freePort } from '../helpers/redis.js';
import { pythonForward } from '../helpers/reference.js';
import { SMALL_SPEC, SMALL_X } from '../helpers/specs.js';

const dir = await mkdtemp(join(tmpdir(), 'hearth-startup-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

it('holds a request that arrives while the node starts and answers it once it serves', async () => {
  const data = join(dir, 'data');
  const first = await spawnNode(data);
  try {
    const r = await deployFixture(first.url, { ...SMALL_SPEC, scaling: { minInstances: 1 } }, { model: 'small' });
    expect(r.status).toBe(201);
  } finally {
    await stop(first.child);
  }

  // As soon as the port answers (liveness), before the node is ready.
  const { url, started: second } = await onPickedPort(
    (port) => spawnNode(data, { HEARTH_HTTP_PORT: String(port) }),
    async (base, failed) => {
      while (!failed()) {
        if ((await fetch(`${base}/v2/health/live`).catch(() => undefined))?.status === 200) return;
        await new Promise((r) => setTimeout(r, 20));
      }
    },
  );
  try {
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

it('refuses to start, in a sentence and exit code 1, where its Redis does not answer (the built node: it died of SIGABRT)', async () => {
  await buildNode();
  const port = await freePort();
  const child = spawn(process.execPath, [join(REPO_ROOT, 'dist', 'node', 'main.mjs')], {
    env: {
      ...process.env,
      REDIS_URL: `redis://user:hunter2@127.0.0.1:${port}`,
      HEARTH_S3_BUCKET: 'startup-test',
      HEARTH_S3_ENDPOINT: 'http://127.0.0.1:9',
      HEARTH_DATA_DIR: join(dir, 'no-redis'),
      HEARTH_HTTP_PORT: '0',
      HEARTH_GRPC_PORT: '0',
      HEARTH_METRICS_PORT: '0',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  for (const stream of [child.stdout!, child.stderr!])
    stream.on('data', (b: Buffer) => {
      output += b;
    });
  const [code, signal] = await new Promise<[number | null, string | null]>((done) =>
    child.once('exit', (c, s) => done([c, s])),
  );
  // The addon's preload thread was still loading LibTorch when the node exited: node-addon-api
  // threw where nothing could catch, and std::terminate aborted the process.
  expect({ code, signal }, output).toEqual({ code: 1, signal: null });
  expect(output).not.toContain('terminate called');
  expect(output).toContain(
    `"msg":"Redis at redis://127.0.0.1:${port} is not answering (connect ECONNREFUSED 127.0.0.1:${port}): start it, or point REDIS_URL at one that runs"`,
  );
  expect(output).not.toContain('hunter2');
}, 120_000);
