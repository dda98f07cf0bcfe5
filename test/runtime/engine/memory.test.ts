import { describe, expect, it } from 'vitest';

import { loadModel } from '../../../runtime/engine/index.js';
import { modelPath } from '../../helpers/fixtures.js';
import { maxAbsDiff, randomTensor } from '../../helpers/random.js';
import { pythonForward } from '../../helpers/reference.js';

function rssMiB(): number {
  return process.memoryUsage().rss / (1 << 20);
}

describe('instances of one model share its weights', () => {
  it('grows RSS by far less than the model size when a second instance is added', async () => {
    // The control, first: an independent load of the file costs about its size, so the measurement
    // below can tell the difference. Taken before any forward, whose freed activations malloc
    // would hand to a later load without RSS growing (a CI run saw 59% of the weights that way),
    // and after LibTorch's own start-up (a small model loaded), which is not the weights.
    (await loadModel(modelPath('small'))).dispose();
    const beforeCopy = rssMiB();
    const copy = await loadModel(modelPath('resnet50'));
    const copied = rssMiB() - beforeCopy;
    const weightsMiB = copy.info.weightBytes / (1 << 20);
    expect(weightsMiB).toBeGreaterThan(90);
    expect(copied).toBeGreaterThan(weightsMiB * 0.6);

    const x = randomTensor('FP32', [1, 3, 224, 224], 3);
    const first = await loadModel(modelPath('resnet50'), { warmup: { inputs: [x], runs: 2 } });
    await first.forward([x]);

    const before = rssMiB();
    const second = first.share();
    await second.forward([x]);
    await second.forward([x]);
    const shared = rssMiB() - before;

    expect(second.info.instances).toBe(2);
    expect(shared).toBeLessThan(weightsMiB * 0.25);

    // And the shared instance computes what the model computes.
    const out = await second.forward([x]);
    const ref = pythonForward(modelPath('resnet50'), [x]);
    expect(maxAbsDiff(out.outputs[0]!.data as Float32Array, ref.outputs[0]!.data as Float32Array)).toBeLessThan(1e-3);
    first.dispose();
    second.dispose();
    copy.dispose();
  });

  it('keeps the weights alive for remaining instances after the first is disposed', async () => {
    const first = await loadModel(modelPath('small'));
    const second = first.share();
    first.dispose();
    const x = randomTensor('FP32', [2, 4], 9);
    const out = await second.forward([x]);
    const ref = pythonForward(modelPath('small'), [x]);
    expect(maxAbsDiff(out.outputs[0]!.data as Float32Array, ref.outputs[0]!.data as Float32Array)).toBeLessThan(1e-6);
    expect(second.info.instances).toBe(1);
  });
});
