import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it, vi } from 'vitest';

import { loadModel } from '../../../runtime/engine/index.js';
import { bundleHook } from '../../../runtime/hooks/index.js';
import type { PoolOptions } from '../../../runtime/pool/index.js';
import { Pool } from '../../../runtime/pool/index.js';
import { Instances } from '../../../runtime/pool/instances.js';
import {
  CancelledError,
  DeadlineExceededError,
  HookError,
  InvalidInputError,
  ModelLoadError,
  QueueFullError,
  UnavailableError,
} from '../../../sdk/errors.js';
import type { FunctionSpecInput } from '../../../sdk/spec/index.js';
import { parseSpec } from '../../../sdk/spec/index.js';
import type { Tensor } from '../../../sdk/tensor.js';
import { modelPath, REPO_ROOT } from '../../helpers/fixtures.js';
import { maxAbsDiff, randomTensor } from '../../helpers/random.js';
import { pythonForward, pythonForwardMany } from '../../helpers/reference.js';
import { SLOW_SPEC, SMALL_SPEC, SMALL_X } from '../../helpers/specs.js';

const dir = await mkdtemp(join(tmpdir(), 'hearth-pool-'));
const pools: Pool[] = [];
afterAll(async () => {
  await Promise.all(pools.map((p) => p.stop()));
  await rm(dir, { recursive: true, force: true });
});

const MLP: FunctionSpecInput = {
  name: 'mlp',
  model: 'model.pt',
  maxBatchSize: 16,
  instances: { count: 1, device: 'cpu' },
  inputs: [{ name: 'x', dtype: 'FP32', dims: [1024] }],
  outputs: [{ name: 'y', dtype: 'FP32', dims: [1024] }],
};
const SMALL: FunctionSpecInput = { ...SMALL_SPEC, hook: 'hook.ts' };

async function pool(
  spec: FunctionSpecInput,
  model: string,
  options: Partial<PoolOptions> & { hook?: string } = {},
  start = true,
): Promise<Pool> {
  const hookBundle = options.hook
    ? (await bundleHook(join(REPO_ROOT, 'test', 'fixtures', 'hooks', `${options.hook}.ts`), join(dir, 'bundles'))).path
    : undefined;
  const p = new Pool({ spec: parseSpec(spec), version: 1, model, hookBundle, ...options });
  pools.push(p);
  if (start) await p.start();
  return p;
}

const encode = (value: unknown) => ({
  body: new TextEncoder().encode(JSON.stringify(value)),
  contentType: 'application/json',
});
const decode = (r: { body: Uint8Array }) => JSON.parse(new TextDecoder().decode(r.body)) as Record<string, unknown>;
const rowsOf = (t: Tensor): number[][] => {
  const d = Array.from(t.data as Float32Array);
  const w = t.shape[1]!;
  return Array.from({ length: t.shape[0]! }, (_, i) => d.slice(i * w, (i + 1) * w));
};

describe('pool', () => {
  it('runs 64 concurrent single-row requests in at most 8 forwards, each equal to a direct forward of its input', async () => {
    const p = await pool(MLP, modelPath('mlp'));
    const direct = await loadModel(modelPath('mlp'));
    const inputs = Array.from({ length: 64 }, (_, i) => randomTensor('FP32', [1, 1024], 1000 + i));
    const responses = await Promise.all(inputs.map((x) => p.invoke(encode({ inputs: { x: rowsOf(x) } }))));
    const stats = p.stats();
    expect(stats.execCount).toBeLessThanOrEqual(8);
    expect(stats.inferenceCount).toBe(64);
    expect(Object.entries(stats.batchSizes).reduce((n, [size, count]) => n + Number(size) * count, 0)).toBe(64);
    expect(Math.max(...Object.keys(stats.batchSizes).map(Number))).toBeLessThanOrEqual(16);
    for (let i = 0; i < 64; i++) {
      const got = (decode(responses[i]!).outputs as { y: number[][] }).y;
      const want = (await direct.forward([inputs[i]!])).outputs[0]!;
      expect(got).toHaveLength(1);
      expect(maxAbsDiff(Float32Array.from(got[0]!), want.data as Float32Array)).toBeLessThan(1e-5);
    }
    expect(stats.success).toBe(64);
    expect(stats.durations.queue.count).toBe(64);
    expect(stats.durations.pre.count).toBe(64);
    expect(stats.durations.post.count).toBe(stats.execCount);
  });

  it('splits outputs back exactly to requests of several rows (raw tensors, no hooks)', async () => {
    const p = await pool({ ...SMALL, hook: undefined }, modelPath('small'));
    const requests = [1, 3, 2, 1, 1].map((rows, i) => randomTensor('FP32', [rows, 4], 50 + i));
    const results = await Promise.all(requests.map((x) => p.infer({ x })));
    const refs = pythonForwardMany(
      modelPath('small'),
      requests.map((x) => [x]),
    );
    results.forEach((r, i) => {
      const ref = refs[i]!.outputs[0]!;
      expect(r.y!.shape).toEqual([requests[i]!.shape[0], 3]);
      expect(maxAbsDiff(r.y!.data as Float32Array, ref.data as Float32Array)).toBeLessThan(1e-6);
    });
    expect(p.stats().execCount).toBeLessThan(5);
  });

  it("counts a call that carries several callers' requests (a node's gathered ones) as that many", async () => {
    const p = await pool({ ...SMALL, hook: undefined }, modelPath('small'));
    const x = randomTensor('FP32', [5, 4], 60);
    const y = await p.infer({ x }, { requests: 3 });
    expect(y.y!.shape).toEqual([5, 3]);
    const s = p.stats();
    expect([s.success, s.durations.request.count, s.durations.queue.count]).toEqual([3, 3, 3]);
    expect([s.inferenceCount, s.execCount, s.durations.requestCompute.count]).toEqual([5, 1, 3]);
  });

  it('does not call a forward hung that ended while this thread was held past its limit', async () => {
    const p = await pool({ ...SLOW_SPEC, limits: { forwardTimeoutMs: 500 } }, modelPath('slow'));
    const hung: unknown[] = [];
    p.on('hung', (detail) => hung.push(detail));
    // Once the forward is on the engine's thread, this one is held for 2 s from a callback of its
    // loop (as a hook's turn run inline holds it): the forward ends meanwhile, and when the hold ends
    // the limit's timer is due as well as the forward's completion, which must be read first.
    const run = Instances.prototype.run;
    const spy = vi.spyOn(Instances.prototype, 'run').mockImplementation(function (this: Instances, ...args) {
      const answer = run.apply(this, args);
      setImmediate(() => {
        const until = performance.now() + 2000;
        while (performance.now() < until);
      });
      return answer;
    });
    try {
      const x = randomTensor('FP32', [4, 512], 70);
      const answer = await p.infer({ x, n: { dtype: 'INT64', shape: [], data: BigInt64Array.from([50n]) } });
      expect(answer.y!.shape).toEqual([4, 512]);
      expect(spy).toHaveBeenCalledTimes(1);
    } finally {
      spy.mockRestore();
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(hung).toEqual([]);
  });

  it('keeps its idle clock from when its last request was answered, not when it arrived', async () => {
    const p = await pool(SLOW_SPEC, modelPath('slow'));
    const x = randomTensor('FP32', [4, 512], 61);
    let answered = false;
    const running = p.infer({ x, n: { dtype: 'INT64', shape: [], data: BigInt64Array.from([3000n]) } }).then(() => {
      answered = true;
    });
    await new Promise((r) => setTimeout(r, 5));
    // Well into its forward (3000 steps: tens of ms at least, longer on a loaded machine).
    const meanwhile = performance.now();
    expect(answered).toBe(false);
    await running;
    expect(p.lastRequestAt).toBeGreaterThan(meanwhile);
  });

  it('serves a bundled hook: response equals python3-torch on the same input', async () => {
    const p = await pool(SMALL, modelPath('small'), { hook: 'echo' });
    const x = SMALL_X;
    const response = decode(await p.invoke(encode({ x })));
    const ref = pythonForward(modelPath('small'), [{ dtype: 'FP32', shape: [2, 4], data: Float32Array.from(x.flat()) }])
      .outputs[0]!;
    expect(response.greeting).toBe('hello');
    expect(maxAbsDiff(Float32Array.from((response.y as number[][]).flat()), ref.data as Float32Array)).toBeLessThan(
      1e-6,
    );
  });

  it('never batches requests whose non-batch dims differ', async () => {
    const spec: FunctionSpecInput = {
      name: 'dt',
      model: 'm.pt',
      maxBatchSize: 8,
      instances: { device: 'cpu' },
      inputs: [{ name: 'x', dtype: 'FP32', dims: [-1] }],
      outputs: [{ name: 'y', dtype: 'FP32', dims: [-1] }],
    };
    const p = await pool(spec, modelPath('dtypes'));
    const xs = [3, 5, 3, 5, 3].map((w, i) => randomTensor('FP32', [1, w], 70 + i));
    const results = await Promise.all(xs.map((x) => p.infer({ x })));
    results.forEach((r, i) => {
      expect(Array.from(r.y!.data as Float32Array)).toEqual(Array.from(xs[i]!.data as Float32Array, (v) => v + v));
    });
    expect(p.stats().execCount).toBeGreaterThanOrEqual(3);
  });

  it('fails only the request whose post hook fails; its batch-mates get their responses', async () => {
    const p = await pool(SMALL, modelPath('small'), { hook: 'fail-some' });
    const calls = [false, true, false, false].map((fail, i) =>
      p.invoke(encode({ x: [[i, 1, 2, 3]], fail })).then(decode, (e: unknown) => e),
    );
    const results = await Promise.all(calls);
    expect(results[1]).toBeInstanceOf(HookError);
    expect((results[1] as Error).message).toMatch(/failed in post: post refused this one/);
    for (const i of [0, 2, 3]) expect((results[i] as { y: number[][] }).y).toHaveLength(1);
  });

  it('refuses bad input with InvalidInputError before anything runs', async () => {
    const p = await pool({ ...SMALL, hook: undefined }, modelPath('small'));
    await expect(p.invoke(encode({ inputs: { x: [[1, 2, 3]] } }))).rejects.toThrow(InvalidInputError);
    await expect(p.infer({ x: randomTensor('FP64', [1, 4], 1) })).rejects.toThrow(/dtype FP64, expected FP32/);
    await expect(p.infer({ x: randomTensor('FP32', [9, 4], 1) })).rejects.toThrow(/maxBatchSize is 8/);
    await expect(p.infer({ x: randomTensor('FP32', [1, 4], 1), z: randomTensor('FP32', [1, 4], 1) })).rejects.toThrow(
      /unexpected input "z"/,
    );
    expect(p.stats().execCount).toBe(0);
  });

  it('holds requests that arrive while the pool is cold until it is warm', async () => {
    const p = await pool({ ...SMALL, hook: undefined }, modelPath('small'), {}, false);
    expect(p.state).toBe('cold');
    const early = p.infer({ x: randomTensor('FP32', [1, 4], 3) });
    await new Promise((r) => setTimeout(r, 50));
    await p.start();
    expect((await early).y!.shape).toEqual([1, 3]);
    const states = p.events.filter((e) => e.type === 'state').map((e) => e.state);
    expect(states).toEqual(['cold', 'loading', 'warm']);
  });

  it('reports a model that cannot load as failed with the reason, and refuses requests', async () => {
    const bad = join(dir, 'bad.pt');
    await writeFile(bad, 'not a model');
    const p = await pool({ ...SMALL, hook: undefined }, bad, {}, false);
    const queued = p.infer({ x: randomTensor('FP32', [1, 4], 3) }).catch((e: unknown) => e);
    await expect(p.start()).rejects.toThrow(ModelLoadError);
    expect(p.state).toBe('failed');
    expect(p.events.find((e) => e.type === 'load-failed')?.detail).toMatch(/not a loadable TorchScript file/);
    expect(await queued).toBeInstanceOf(UnavailableError);
    await expect(p.infer({ x: randomTensor('FP32', [1, 4], 3) })).rejects.toThrow(UnavailableError);
  });

  it('refuses work past maxQueueSize, deadlines and cancellations without losing the rest', async () => {
    const spec: FunctionSpecInput = { ...SLOW_SPEC, batching: { maxQueueSize: 2 } };
    const p = await pool(spec, modelPath('slow'));
    const req = (iters: number) => ({
      x: randomTensor('FP32', [4, 512], iters),
      n: { dtype: 'INT64' as const, shape: [], data: new BigInt64Array([BigInt(iters)]) },
    });
    const running = p.infer(req(20_000));
    await new Promise((r) => setTimeout(r, 10));
    const queued = p.infer(req(1));
    const cancel = new AbortController();
    const cancelled = p.infer(req(1), { signal: cancel.signal });
    await expect(p.infer(req(1))).rejects.toThrow(QueueFullError);
    cancel.abort();
    await expect(cancelled).rejects.toThrow(CancelledError);
    const late = p.infer(req(1), { deadline: performance.now() + 20 });
    await expect(late).rejects.toThrow(DeadlineExceededError);
    expect((await running).y!.shape).toEqual([4, 512]);
    expect((await queued).y!.shape).toEqual([4, 512]);
    const failures = p.stats().failures;
    expect(failures).toMatchObject({ QUEUE_FULL: 1, CANCELLED: 1, DEADLINE_EXCEEDED: 1 });
  });

  it('drains: finishes what is in flight, refuses new work, then stops', async () => {
    const p = await pool(MLP, modelPath('mlp'));
    const inflight = Array.from({ length: 8 }, (_, i) =>
      p.invoke(encode({ inputs: { x: rowsOf(randomTensor('FP32', [1, 1024], i)) } })),
    );
    const drained = p.drain();
    await expect(p.invoke(encode({ inputs: { x: [[0]] } }))).rejects.toThrow(UnavailableError);
    const done = await Promise.all(inflight);
    await drained;
    expect(done).toHaveLength(8);
    expect(p.state).toBe('stopped');
    const states = p.events.filter((e) => e.type === 'state').map((e) => e.state);
    expect(states).toEqual(['cold', 'loading', 'warm', 'draining', 'stopped']);
    const times = p.events.map((e) => e.at);
    expect([...times].sort((a, b) => a - b)).toEqual(times);
  });

  it('adds and removes instances over the same weights', async () => {
    const p = await pool({ ...MLP, instances: { count: 1, device: 'cpu' } }, modelPath('mlp'));
    p.addInstance();
    p.addInstance();
    expect(p.stats().instances.total).toBe(3);
    expect(p.removeInstance()).toBe(true);
    expect(p.stats().instances.total).toBe(2);
    const r = await p.infer({ x: randomTensor('FP32', [2, 1024], 5) });
    expect(r.y!.shape).toEqual([2, 1024]);
  });
});
