import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { HearthNode } from '../../platform/node/index.js';
import { modelPath } from '../helpers/fixtures.js';
import { deployFixture, testNode, upload } from '../helpers/node.js';
import type { PoolState } from '../helpers/slow.js';
import { deploySlow as deploy, inferSlow as infer, SLOW, untilSlowPool as untilPool } from '../helpers/slow.js';
import { SMALL_SPEC } from '../helpers/specs.js';

const dir = await mkdtemp(join(tmpdir(), 'hearth-limits-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('queue limits, deadlines and availability over HTTP', () => {
  let node: HearthNode;
  beforeAll(async () => {
    node = await testNode(join(dir, 'node'));
    const model = await upload(node.httpUrl, new Uint8Array(await readFile(modelPath('slow'))));
    expect((await deploy(node.httpUrl, SLOW, model)).status).toBe(201);
  });
  afterAll(() => node?.close());

  const until = (check: (p: PoolState) => boolean, timeoutMs?: number) => untilPool(node.httpUrl, check, timeoutMs);

  it('answers 429 with Retry-After when the queue is full, and serves what it took', async () => {
    // 30 000 rounds (3 s here) hold the instance while the test queues one and is refused one.
    const running = infer(node.httpUrl, 30_000);
    await until((p) => p.instances.busy === 1);
    const queued = infer(node.httpUrl, 1);
    await until((p) => p.queueDepth === 1);
    const refused = await infer(node.httpUrl, 1);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(((await refused.json()) as { code: string }).code).toBe('QUEUE_FULL');
    expect((await running).status).toBe(200);
    expect((await queued).status).toBe(200);
  });

  it('answers 504 when the request deadline passes first (Hearth-Timeout-Ms)', async () => {
    // 10 000 rounds (a second here) outlast the 50 ms deadline; the forward runs on after the 504.
    const late = await infer(node.httpUrl, 10_000, { 'hearth-timeout-ms': '50' });
    expect(late.status).toBe(504);
    expect(((await late.json()) as { code: string }).code).toBe('DEADLINE_EXCEEDED');
    expect((await infer(node.httpUrl, 1, { 'hearth-timeout-ms': 'soon' })).status).toBe(400);
    // Past 2^31 - 1 ms Node's timers fire at once: such a deadline is refused, not passed at once.
    const huge = await infer(node.httpUrl, 1, { 'hearth-timeout-ms': String(2 ** 31) });
    expect(huge.status).toBe(400);
    expect(((await huge.json()) as { error: string }).error).toMatch(/from 1 to 2147483647/);
    expect((await infer(node.httpUrl, 1, { 'hearth-timeout-ms': String(2 ** 31 - 1) })).status).toBe(200);
  });

  it('answers 400 for a shape with a dimension past 2^53, even beside a zero', async () => {
    const r = await fetch(`${node.httpUrl}/v2/models/slow/infer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        inputs: [
          { name: 'x', shape: [0, 1e300], datatype: 'FP32', data: [] },
          { name: 'n', shape: [], datatype: 'INT64', data: [1] },
        ],
      }),
    });
    expect(r.status).toBe(400);
    expect(((await r.json()) as { error: string }).error).toMatch(
      /shape must be a list of non-negative integers below 2\^53/,
    );
  });

  it('drops a queued request whose client went away: it never runs, and the next caller does not wait behind it', async () => {
    type Pool = { function: string; execCount: number };
    const execs = async () =>
      ((await (await fetch(`${node.httpUrl}/api/v1/pools`)).json()) as { pools: Pool[] }).pools.find(
        (p) => p.function === 'slow',
      )!.execCount;
    // The 504 test's forward runs on after its caller got the answer (a running forward cannot be
    // stopped in process): start from an idle pool.
    await until((p) => p.instances.busy === 0 && p.queueDepth === 0, 60_000);
    const before = await execs();
    // 30 000 rounds (3 s here): long enough to hold the instance while the next one queues.
    const running = infer(node.httpUrl, 30_000);
    await until((p) => p.instances.busy === 1);
    const gone = new AbortController();
    const abandoned = fetch(`${node.httpUrl}/v2/models/slow/infer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        inputs: [
          { name: 'x', shape: [4, 512], datatype: 'FP32', data: new Array(2048).fill(0.01) },
          { name: 'n', shape: [], datatype: 'INT64', data: [60_000] },
        ],
      }),
      signal: gone.signal,
    }).catch(() => 'aborted');
    await until((p) => p.queueDepth === 1);
    gone.abort();
    expect(await abandoned).toBe('aborted');
    await until((p) => p.queueDepth === 0);
    expect((await running).status).toBe(200);
    expect((await infer(node.httpUrl, 1)).status).toBe(200);
    // The long forward and the last call ran; the abandoned 60 000-round one never did.
    expect(await execs()).toBe(before + 2);
  });

  it('answers 503 for a function with no version able to serve', async () => {
    const junk = await upload(node.httpUrl, new TextEncoder().encode('junk model'));
    expect((await deploy(node.httpUrl, { ...SLOW, name: 'broken' }, junk)).status).toBe(422);
    const r = await fetch(`${node.httpUrl}/fn/broken`, { method: 'POST', body: '{}' });
    expect(r.status).toBe(503);
    expect(r.headers.get('retry-after')).toBe('1');
  });
});

describe('per-function hook limits (spec.limits)', () => {
  it("stops a hook call past the function's own limit, and serves the next call", async () => {
    const node = await testNode(join(dir, 'hook-limits'));
    try {
      const spec = { ...SMALL_SPEC, name: 'loops', hook: 'hook.ts', limits: { hookTimeoutMs: 300 } };
      const r = await deployFixture(node.httpUrl, spec, {
        model: 'small',
        hook: 'loops',
        bundles: join(dir, 'bundles'),
      });
      expect(r.status, await r.clone().text()).toBe(201);
      const looped = await fetch(`${node.httpUrl}/fn/loops`, {
        method: 'POST',
        body: '{"loop": true}',
        headers: { 'content-type': 'application/json' },
      });
      expect(looped.status).toBe(500);
      // The function's own limit (not the default 10 000 ms) stopped it.
      expect(((await looped.json()) as { error: string }).error).toMatch(/ran past its 300 ms limit/);
      expect(
        (
          await fetch(`${node.httpUrl}/fn/loops`, {
            method: 'POST',
            body: '{}',
            headers: { 'content-type': 'application/json' },
          })
        ).status,
      ).toBe(200);
    } finally {
      await node.close();
    }
  });
});
