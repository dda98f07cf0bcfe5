import { readFileSync } from 'node:fs';

import { describe, expect, it, onTestFinished } from 'vitest';

import { devices, loadModel, setIntraOpThreads, threads } from '../../../runtime/engine/index.js';
import type { FixtureModel } from '../../helpers/fixtures.js';
import { modelPath } from '../../helpers/fixtures.js';
import { maxAbsDiff, randomTensor } from '../../helpers/random.js';
import { pythonForward } from '../../helpers/reference.js';

describe('loading', () => {
  it('reports load and warm-up time separately, with the warm-up passes it ran', async () => {
    const x = randomTensor('FP32', [1, 3, 224, 224], 1);
    const cold = await loadModel(modelPath('resnet50'));
    expect(cold.info.loadMs).toBeGreaterThan(0);
    expect(cold.info.warmupMs).toBe(0);
    expect(cold.info.warmupRuns).toBe(0);

    const warm = await loadModel(modelPath('resnet50'), { warmup: { inputs: [x], runs: 3 } });
    expect(warm.info.warmupRuns).toBe(3);
    expect(warm.info.warmupMs).toBeGreaterThan(0);
    expect(warm.info.device).toBe('cpu');
    expect(warm.info.minInputs).toBe(1);
    expect(warm.info.maxInputs).toBe(1);
    // ResNet-50 has 25.6M parameters plus BatchNorm buffers: about 102 MB of FP32.
    expect(warm.info.weightBytes).toBeGreaterThan(100e6);
    expect(warm.info.weightBytes).toBeLessThan(110e6);
    cold.dispose();
    warm.dispose();
  });

  it('names the commonest wrong files and says the fix, from a path and from bytes', async () => {
    const v = devices().torchVersion.split('.').slice(0, 2).join('\\.');
    const cases: [FixtureModel, RegExp][] = [
      [
        'state_dict',
        /state_dict saved with torch\.save\(model\.state_dict\(\)\), not TorchScript.*torch\.jit\.script\(model\)\.save/,
      ],
      ['pickled_module', /model pickled with torch\.save\(model\), not TorchScript.*torch\.jit\.script\(model\)\.save/],
      [
        'newer_format',
        new RegExp(
          `newer than this node's LibTorch ${v}: its archive format is version 11, and LibTorch ${v} reads formats up to 10\\. To serve it, re-export it with PyTorch ${v} .* or run Hearth on a node built with a LibTorch`,
        ),
      ],
      [
        'newer_op',
        new RegExp(
          `operator or type this node's LibTorch ${v} does not have[\\s\\S]*aten::scaled_dot_product_attention`,
        ),
      ],
    ];
    for (const [name, message] of cases)
      for (const source of [modelPath(name), new Uint8Array(readFileSync(modelPath(name)))]) {
        const error = await loadModel(source).then(
          () => undefined,
          (e: Error) => e,
        );
        expect(error?.name, name).toBe('ModelLoadError');
        expect(error?.message, name).toMatch(message);
        // LibTorch's "please upgrade PyTorch" is the wrong advice where the node's LibTorch is the older one.
        expect(error?.message, name).not.toMatch(/upgrade PyTorch/);
      }
    // torch.save's legacy (pre-1.6) pickle format: the file's first bytes, pickle protocol 2.
    const legacy = new Uint8Array([0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20]);
    await expect(loadModel(legacy)).rejects.toThrow(/legacy pickle format, not TorchScript/);
    await expect(loadModel(new TextEncoder().encode('not a model'))).rejects.toThrow(/not a loadable TorchScript file/);
  });

  it('counts the MLP weights exactly: (1024×4096 + 4096 + 4096×1024 + 1024) × 4 bytes', async () => {
    const model = await loadModel(modelPath('mlp'));
    expect(model.info.weightBytes).toBe((1024 * 4096 + 4096 + 4096 * 1024 + 1024) * 4);
  });
});

describe('devices and threads', () => {
  it('reports the CPU with its memory, and CUDA as the build and machine allow', () => {
    const report = devices();
    expect(report.torchVersion).toMatch(/^\d+\.\d+/);
    const cpu = report.devices.find((d) => d.id === 'cpu')!;
    expect(cpu.kind).toBe('cpu');
    expect(cpu.memoryTotalBytes).toBeGreaterThan(cpu.memoryFreeBytes);
    expect(cpu.memoryFreeBytes).toBeGreaterThan(0);
    const cudas = report.devices.filter((d) => d.kind === 'cuda');
    expect(cudas).toHaveLength(report.cudaBuild ? report.cudaDeviceCount : 0);
    if (!report.cudaAvailable) expect(report.cudaDeviceCount).toBe(0);
  });

  it('sets intra-op threads and computes the same result with 1 and 2 of them', async () => {
    const model = await loadModel(modelPath('mlp'));
    const x = randomTensor('FP32', [16, 1024], 77);
    // The engine is the worker's, which later files share: its setting goes back as it was.
    const before = threads().intraOp;
    onTestFinished(() => setIntraOpThreads(before));
    setIntraOpThreads(1);
    expect(threads().intraOp).toBe(1);
    const one = await model.forward([x]);
    setIntraOpThreads(2);
    expect(threads().intraOp).toBe(2);
    const two = await model.forward([x]);
    const ref = pythonForward(modelPath('mlp'), [x]);
    expect(maxAbsDiff(one.outputs[0]!.data as Float32Array, ref.outputs[0]!.data as Float32Array)).toBeLessThan(1e-4);
    expect(maxAbsDiff(two.outputs[0]!.data as Float32Array, ref.outputs[0]!.data as Float32Array)).toBeLessThan(1e-4);
    expect(() => setIntraOpThreads(0)).toThrow(/≥ 1/);
  });
});
