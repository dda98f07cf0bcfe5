import { describe, expect, it, onTestFinished } from 'vitest';

import { loadModel, setExecutorThreads, setIntraOpThreads, threads } from '../../../runtime/engine/index.js';
import type { Tensor } from '../../../sdk/tensor.js';
import { modelPath } from '../../helpers/fixtures.js';
import { maxAbsDiff, randomTensor } from '../../helpers/random.js';
import { pythonForwardMany } from '../../helpers/reference.js';

const iters = (n: number): Tensor<'INT64'> => ({ dtype: 'INT64', shape: [], data: new BigInt64Array([BigInt(n)]) });

describe('forwards run off the JS thread', () => {
  it('keeps the event loop turning while a forward of several hundred ms runs', async () => {
    const model = await loadModel(modelPath('slow'));
    const x = randomTensor('FP32', [64, 512], 11);
    await model.forward([x, iters(2)]);

    // Timer turns counted while the forward runs: a forward on the JS thread would allow none (or
    // one) until it ended. Counted, not timed: a busy machine slows the turns and the forward alike.
    let turns = 0;
    let running = true;
    const turning = (async () => {
      while (running) {
        await new Promise((r) => setTimeout(r, 1));
        turns++;
      }
    })();
    const started = performance.now();
    await model.forward([x, iters(1500)]);
    const forwardMs = performance.now() - started;
    const during = turns;
    running = false;
    await turning;

    expect(forwardMs).toBeGreaterThan(200); // it really was a long forward
    expect(during).toBeGreaterThanOrEqual(20);
  });

  it('runs many forwards in flight on one loaded model, each with its own correct result', async () => {
    const model = await loadModel(modelPath('mlp'));
    const inputs = Array.from({ length: 24 }, (_, i) => randomTensor('FP32', [1 + (i % 4), 1024], 500 + i));
    const pending = inputs.map((x) => model.forward([x]));
    expect(model.info.inflight).toBeGreaterThan(1);
    const results = await Promise.all(pending);
    const reference = pythonForwardMany(
      modelPath('mlp'),
      inputs.slice(0, 4).map((x) => [x]),
    );
    results.forEach((r, i) => {
      expect(r.outputs[0]!.shape).toEqual([1 + (i % 4), 1024]);
    });
    reference.forEach((ref, i) => {
      expect(
        maxAbsDiff(results[i]!.outputs[0]!.data as Float32Array, ref.outputs[0]!.data as Float32Array),
      ).toBeLessThan(1e-4);
    });
    // The same input run alone gives the same bytes as when it ran among others.
    const alone = await model.forward([inputs[5]!]);
    expect(Array.from(alone.outputs[0]!.data as Float32Array)).toEqual(
      Array.from(results[5]!.outputs[0]!.data as Float32Array),
    );
    expect(model.info.inflight).toBe(0);
  });

  it('runs a short forward on a second instance while a long one runs on the first', async () => {
    // Two CPU lanes exist when each forward uses one of the two cores. (The engine is the worker's,
    // which later files share: intra-op threads go back as they were; executor threads only grow.)
    const before = threads().intraOp;
    onTestFinished(() => setIntraOpThreads(before));
    setIntraOpThreads(1);
    setExecutorThreads(2);
    expect(threads().executor).toBeGreaterThanOrEqual(2);
    const a = await loadModel(modelPath('slow'));
    const b = a.share();
    const x = randomTensor('FP32', [32, 512], 12);
    await a.forward([x, iters(2)]);

    const order: string[] = [];
    const long = a.forward([x, iters(3000)]).then(() => order.push('long'));
    await new Promise((r) => setTimeout(r, 20));
    const short = b.forward([x, iters(1)]).then(() => order.push('short'));
    await Promise.all([long, short]);
    expect(order).toEqual(['short', 'long']);
  });
});
