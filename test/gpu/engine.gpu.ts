/**
 * The engine on CUDA. Runs with node:test (not vitest) so that test/gpu/run.sh can run it, bundled,
 * on a GPU machine that has no node_modules; skipped where no CUDA device is visible.
 *   local:  npm run test:gpu
 *   device: npm run gpu:prepare here, then test/gpu/run.sh there
 */
import assert from 'node:assert/strict';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { describe, it } from 'node:test';

import { capCudaMemory, cudaMemory, devices, loadModel } from '../../runtime/engine/index.js';
import { placeDevice } from '../../runtime/pool/capacity.js';
import { DeviceUnavailableError, InvalidInputError } from '../../sdk/errors.js';
import { ENGINE_DTYPES } from '../../sdk/tensor.js';
import { ensureModels, modelPath } from '../helpers/fixtures.js';
import { maxAbsDiff, randomTensor } from '../helpers/random.js';
import { pythonForward } from '../helpers/reference.js';

const report = devices();
const skip = report.cudaAvailable ? false : 'no CUDA device visible';
if (!skip) ensureModels();

function relativeError(a: Float32Array, b: Float32Array): number {
  let num = 0;
  let den = 0;
  for (let i = 0; i < a.length; i++) {
    num += (a[i]! - b[i]!) ** 2;
    den += b[i]! ** 2;
  }
  return Math.sqrt(num / den);
}

describe('engine on CUDA', { skip }, () => {
  it('reports the CUDA devices with names and memory', () => {
    assert.equal(report.cudaBuild, true);
    assert.ok(report.cudaDeviceCount >= 1);
    const gpu = report.devices.find((d) => d.id === 'cuda:0');
    assert.ok(gpu, 'cuda:0 listed');
    assert.ok(gpu.name.length > 0);
    assert.ok(gpu.memoryTotalBytes > gpu.memoryFreeBytes && gpu.memoryFreeBytes > 0);
    console.log(
      `# ${gpu.name}: ${(gpu.memoryFreeBytes / 2 ** 30).toFixed(1)} GiB free of ${(gpu.memoryTotalBytes / 2 ** 30).toFixed(1)}`,
    );
  });

  it('gives the MLP output python3-torch gives on the CPU', async () => {
    const x = randomTensor('FP32', [16, 1024], 3);
    const model = await loadModel(modelPath('mlp'), { device: 'cuda:0', warmup: { inputs: [x], runs: 2 } });
    assert.equal(model.info.device, 'cuda:0');
    const out = await model.forward([x]);
    const ref = pythonForward(modelPath('mlp'), [x]);
    assert.ok(relativeError(out.outputs[0]!.data as Float32Array, ref.outputs[0]!.data as Float32Array) < 1e-3);
    model.dispose();
  });

  it('gives the ResNet-50 logits python3-torch gives on the CPU (TF32 tolerance)', async () => {
    const x = randomTensor('FP32', [4, 3, 224, 224], 5);
    const model = await loadModel(modelPath('resnet50'), { device: 'cuda', warmup: { inputs: [x], runs: 2 } });
    const out = await model.forward([x]);
    const ref = pythonForward(modelPath('resnet50'), [x]);
    assert.deepEqual(out.outputs[0]!.shape, [4, 1000]);
    assert.ok(relativeError(out.outputs[0]!.data as Float32Array, ref.outputs[0]!.data as Float32Array) < 1e-2);
    model.dispose();
  });

  it('round-trips every dtype through a model on the GPU', async () => {
    const model = await loadModel(modelPath('dtypes'), { device: 'cuda:0' });
    for (const dtype of ENGINE_DTYPES) {
      const x = randomTensor(dtype, [3, 4], 9);
      const out = await model.forward([x]);
      const ref = pythonForward(modelPath('dtypes'), [x]);
      assert.equal(out.outputs[0]!.dtype, dtype);
      assert.deepEqual(
        Buffer.from(out.outputs[0]!.data.buffer, out.outputs[0]!.data.byteOffset, out.outputs[0]!.data.byteLength),
        Buffer.from(ref.outputs[0]!.data.buffer, ref.outputs[0]!.data.byteOffset, ref.outputs[0]!.data.byteLength),
        dtype,
      );
    }
  });

  it('shares weights between instances on one GPU: a second instance costs no weight memory, a second load does', async () => {
    const x = randomTensor('FP32', [2, 3, 224, 224], 1);
    const first = await loadModel(modelPath('resnet50'), { device: 'cuda:0', warmup: { inputs: [x], runs: 2 } });
    const weights = first.info.weightBytes;
    const free = (): number => devices().devices.find((d) => d.id === 'cuda:0')!.memoryFreeBytes;
    // Measured before any forward of the new handle: PyTorch's caching allocator keeps a pool per
    // stream, so a forward on the second instance's stream adds activation memory, not weights.
    const beforeShare = free();
    const second = first.share();
    const shared = beforeShare - free();
    const beforeCopy = free();
    const copy = await loadModel(modelPath('resnet50'), { device: 'cuda:0' });
    const copied = beforeCopy - free();
    assert.ok(shared < weights * 0.1, `share() took ${shared} bytes of device memory`);
    assert.ok(copied > weights * 0.8, `an independent load took only ${copied} bytes (weights ${weights})`);
    const a = await first.forward([x]);
    const b = await second.forward([x]);
    assert.ok(relativeError(b.outputs[0]!.data as Float32Array, a.outputs[0]!.data as Float32Array) < 1e-5);
    first.dispose();
    second.dispose();
    copy.dispose();
  });

  it('runs instances concurrently on their own streams, each result correct', async () => {
    const a = await loadModel(modelPath('mlp'), { device: 'cuda:0' });
    const b = a.share();
    const inputs = Array.from({ length: 16 }, (_, i) => randomTensor('FP32', [4, 1024], 40 + i));
    const outs = await Promise.all(inputs.map((x, i) => (i % 2 ? a : b).forward([x])));
    const ref = pythonForward(modelPath('mlp'), [inputs[3]!]);
    assert.ok(maxAbsDiff(outs[3]!.outputs[0]!.data as Float32Array, ref.outputs[0]!.data as Float32Array) < 1e-3);
  });

  it('keeps the event loop free while a long GPU forward runs', async () => {
    const model = await loadModel(modelPath('slow'), { device: 'cuda:0' });
    const x = randomTensor('FP32', [256, 512], 2);
    const iters = { dtype: 'INT64' as const, shape: [], data: new BigInt64Array([20000n]) };
    const h = monitorEventLoopDelay({ resolution: 1 });
    h.enable();
    await model.forward([x, iters]);
    h.disable();
    assert.ok(h.max / 1e6 < 20, `event loop delay ${h.max / 1e6} ms`);
  });

  it('refuses a device index that does not exist, and a bad shape, with typed errors', async () => {
    await assert.rejects(
      loadModel(modelPath('small'), { device: `cuda:${report.cudaDeviceCount}` }),
      DeviceUnavailableError,
    );
    const model = await loadModel(modelPath('mlp'), { device: 'cuda:0' });
    await assert.rejects(model.forward([randomTensor('FP32', [1, 10], 1)]), InvalidInputError);
  });

  it("caps this process's caching allocator (instances.gpuMemory): a forward past the cap fails, and reports what it holds", async () => {
    const device = placeDevice('cuda');
    assert.match(device, /^cuda:\d+$/);
    const model = await loadModel(modelPath('resnet50'), { device: 'cuda:0' });
    const held = cudaMemory('cuda:0');
    assert.ok(held && held.reservedBytes > 0 && held.allocatedBytes > 0, JSON.stringify(held));
    const total = report.devices.find((d) => d.id === 'cuda:0')!.memoryTotalBytes;
    // The weights and a little more: a batch of 256 images needs several GiB of activations.
    capCudaMemory('cuda:0', held.reservedBytes + 256 * 2 ** 20, total);
    try {
      await assert.rejects(
        model.forward([randomTensor('FP32', [256, 3, 224, 224], 7)]),
        /out of memory|OUT_OF_MEMORY|CUDA/i,
      );
      // Within the cap, a batch of one still runs.
      await model.forward([randomTensor('FP32', [1, 3, 224, 224], 8)]);
    } finally {
      capCudaMemory('cuda:0', total, total);
    }
  });
});
