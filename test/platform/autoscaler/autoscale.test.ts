/**
 * The autoscaler on a real node: scale up when the queue breaches its target, down after the
 * stable window, to zero after scaleDownAfterS, and back from zero under load with every request
 * answered correctly (python3-torch's output for the same input). Short windows, 100 ms ticks.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { PoolSummary } from '../../../platform/functions/index.js';
import type { HearthNode } from '../../../platform/node/index.js';
import { threads } from '../../../runtime/index.js';
import { modelPath } from '../../helpers/fixtures.js';
import { postFunction, testNode, upload } from '../../helpers/node.js';
import { maxAbsDiff } from '../../helpers/random.js';
import { pythonForward } from '../../helpers/reference.js';
import { SLOW_SPEC } from '../../helpers/specs.js';
import { waitFor } from '../../helpers/wait.js';

const dir = await mkdtemp(join(tmpdir(), 'hearth-autoscale-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

const ITERS = 300;
const x = Float32Array.from({ length: 4 * 512 }, (_, i) => Math.sin(i) / 4);
const SPEC = {
  ...SLOW_SPEC,
  instances: { device: 'cpu', count: 1 },
  scaling: { minInstances: 0, maxInstances: 3, targetQueueDepth: 2, stableWindowS: 1, scaleDownAfterS: 2 },
};

describe('autoscaling on one node', () => {
  let node: HearthNode;
  let reference: Float32Array;
  beforeAll(async () => {
    node = await testNode(join(dir, 'node'), { HEARTH_AUTOSCALE_TICK_MS: '100' });
    const model = await upload(node.httpUrl, new Uint8Array(await readFile(modelPath('slow'))));
    const r = await postFunction(node.httpUrl, { spec: SPEC, artifacts: { model } });
    expect(r.status).toBe(201);
    const ref = pythonForward(modelPath('slow'), [
      { dtype: 'FP32', shape: [4, 512], data: x },
      { dtype: 'INT64', shape: [], data: BigInt64Array.from([BigInt(ITERS)]) },
    ]);
    reference = ref.outputs[0]!.data as Float32Array;
  });
  afterAll(() => node?.close());

  const call = async (): Promise<Float32Array> => {
    const r = await fetch(`${node.httpUrl}/v2/models/slow/infer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        inputs: [
          { name: 'x', shape: [4, 512], datatype: 'FP32', data: Array.from(x) },
          { name: 'n', shape: [], datatype: 'INT64', data: [ITERS] },
        ],
      }),
    });
    expect(r.status).toBe(200);
    return Float32Array.from(((await r.json()) as { outputs: { data: number[] }[] }).outputs[0]!.data);
  };
  const pool = async (): Promise<PoolSummary | undefined> => {
    const { pools } = (await (await fetch(`${node.httpUrl}/api/v1/pools`)).json()) as { pools: PoolSummary[] };
    return pools.find((p) => p.function === 'slow' && p.state !== 'stopped');
  };
  const until = (what: string, check: (p: PoolSummary | undefined) => boolean): Promise<PoolSummary | undefined> =>
    waitFor(what, pool, check);

  it('scales up while the queue is over its target, then down after the window, then to zero', async () => {
    // 12 callers in a closed loop: ~12 requests in the pool, 2 per instance wanted → 3 (the max),
    // or as many as the CPU has engine lanes (cores ÷ intra-op threads), if fewer.
    const most = Math.min(3, Math.floor(availableParallelism() / threads().intraOp));
    let stop = false;
    const results: Float32Array[] = [];
    const callers = Array.from({ length: 12 }, async () => {
      while (!stop) results.push(await call());
    });
    try {
      // Net of any it let go meanwhile (a loaded machine can dip under the target for a window:
      // a CI run saw three added to reach two), and as one listing shows both: a pool's events and
      // its instance count reach the node by different paths, so one listing can show an instance
      // the other does not yet (a CI run saw the count at two with three added, none removed).
      const net = (p: PoolSummary | undefined) => {
        const count = (type: string) => p?.events.filter((e) => e.type === type).length ?? 0;
        return count('instance-added') - count('instance-removed');
      };
      const up = await until(`${most} instances`, (p) => p?.instances.total === most && net(p) === most);
      expect(net(up)).toBe(most);
      // Answers from the scaled-up pool too (the scale-up can come before any caller's second call).
      const served = results.length;
      await waitFor(
        'a round of answers after the scale-up',
        async () => results.length,
        (n) => n >= served + 12,
      );
    } finally {
      stop = true;
      await Promise.all(callers);
    }
    expect(results.length).toBeGreaterThan(12);
    for (const r of results) expect(maxAbsDiff(r, reference)).toBeLessThan(1e-4);

    // No load: down to one after the 1 s window, then gone after 2 s without a request.
    await until('one instance', (p) => p?.instances.total === 1);
    await until('scaled to zero', (p) => p === undefined);
  });

  it('cold-starts from zero under a burst and answers every request correctly', async () => {
    await until('at zero', (p) => p === undefined);
    const burst = await Promise.all(Array.from({ length: 10 }, () => call()));
    for (const r of burst) expect(maxAbsDiff(r, reference)).toBeLessThan(1e-4);
    const p = await pool();
    expect(p?.state).toBe('warm');
    expect(p?.coldStart?.source).toBeDefined();
    expect(p!.success).toBe(10);
    expect(p!.failure).toBe(0);
  });
});
