import { describe, expect, it } from 'vitest';

import { loadModel, threads } from '../../../runtime/engine/index.js';
import type { Tensor } from '../../../sdk/tensor.js';
import { ENGINE_DTYPES } from '../../../sdk/tensor.js';
import { modelPath } from '../../helpers/fixtures.js';
import { maxAbsDiff, randomTensor } from '../../helpers/random.js';
import { pythonForward } from '../../helpers/reference.js';

function floats(t: Tensor): Float32Array | Float64Array {
  return t.data as Float32Array | Float64Array;
}

describe('forward matches python3-torch', () => {
  it.each([1, 8, 32])('gives the MLP output python3-torch gives at batch %i', async (batch) => {
    const model = await loadModel(modelPath('mlp'));
    const x = randomTensor('FP32', [batch, 1024], 100 + batch);
    const ours = await model.forward([x]);
    const ref = pythonForward(modelPath('mlp'), [x]);
    expect(ours.kind).toBe('tensor');
    expect(ours.outputs).toHaveLength(1);
    expect(ours.outputs[0]!.shape).toEqual([batch, 1024]);
    expect(ours.outputs[0]!.dtype).toBe('FP32');
    expect(maxAbsDiff(floats(ours.outputs[0]!), floats(ref.outputs[0]!))).toBeLessThan(1e-4);
    model.dispose();
  });

  it('reads an input that is a view of a SharedArrayBuffer (a hook pool exchange) at its offset', async () => {
    const model = await loadModel(modelPath('mlp'));
    const x = randomTensor('FP32', [2, 1024], 5);
    const shared = new Float32Array(new SharedArrayBuffer(4 * (2048 + 16)), 64, 2048);
    shared.set(x.data as Float32Array);
    const ours = await model.forward([{ ...x, data: shared }]);
    const ref = pythonForward(modelPath('mlp'), [x]);
    expect(maxAbsDiff(floats(ours.outputs[0]!), floats(ref.outputs[0]!))).toBeLessThan(1e-4);
    model.dispose();
  });

  it('gives the same output on a forward lent its own thread count, and on the configured count after it', async () => {
    const model = await loadModel(modelPath('mlp'));
    const x = randomTensor('FP32', [4, 1024], 77);
    const ref = pythonForward(modelPath('mlp'), [x], 2);
    const configured = threads().intraOp;
    for (const lent of [2, undefined, 1, 3, undefined]) {
      const ours = await model.forward([x], undefined, lent);
      expect(maxAbsDiff(floats(ours.outputs[0]!), floats(ref.outputs[0]!)), `threads ${lent}`).toBeLessThan(1e-4);
    }
    expect(threads().intraOp).toBe(configured); // the engine's setting is not the lent count
    model.dispose();
  });

  it('gives the ResNet-50 logits python3-torch gives', async () => {
    const x = randomTensor('FP32', [2, 3, 224, 224], 7);
    const model = await loadModel(modelPath('resnet50'), { warmup: { inputs: [x], runs: 1 } });
    const ours = await model.forward([x]);
    const ref = pythonForward(modelPath('resnet50'), [x]);
    expect(ours.outputs[0]!.shape).toEqual([2, 1000]);
    expect(maxAbsDiff(floats(ours.outputs[0]!), floats(ref.outputs[0]!))).toBeLessThan(1e-3);
    model.dispose();
  });

  it('returns every output of a tuple, a list, a dict and nested tuples, by name', async () => {
    const a = randomTensor('FP32', [3, 4], 1);
    const b = randomTensor('FP32', [3, 4], 2);
    const cases: [Parameters<typeof modelPath>[0], Tensor[], string, string[]][] = [
      ['add_mul', [a, b], 'tuple', ['0', '1']],
      ['list_out', [a], 'list', ['0', '1']],
      ['dict_out', [a], 'dict', ['sum', 'double']],
      ['nested', [a], 'tuple', ['0', '1.0', '1.1']],
    ];
    for (const [name, inputs, kind, names] of cases) {
      const model = await loadModel(modelPath(name));
      const ours = await model.forward(inputs);
      const ref = pythonForward(modelPath(name), inputs);
      expect(ours.kind, name).toBe(kind);
      expect(ref.kind, name).toBe(kind);
      expect(
        ours.outputs.map((o) => o.name),
        name,
      ).toEqual(names);
      expect(
        ours.outputs.map((o) => o.shape),
        name,
      ).toEqual(ref.outputs.map((o) => o.shape));
      ours.outputs.forEach((o, i) => {
        expect(Array.from(floats(o)), `${name} ${o.name}`).toEqual(Array.from(floats(ref.outputs[i]!)));
      });
      model.dispose();
    }
  });

  it.each(ENGINE_DTYPES)('takes and returns %s tensors with the bytes python3-torch gives', async (dtype) => {
    const model = await loadModel(modelPath('dtypes'));
    const x = randomTensor(dtype, [2, 5], 31);
    const ours = await model.forward([x]);
    const ref = pythonForward(modelPath('dtypes'), [x]);
    const out = ours.outputs[0]!;
    expect(out.dtype).toBe(dtype);
    expect(ref.outputs[0]!.dtype).toBe(dtype);
    expect(out.shape).toEqual([2, 5]);
    expect(Buffer.from(out.data.buffer, out.data.byteOffset, out.data.byteLength)).toEqual(
      Buffer.from(ref.outputs[0]!.data.buffer, ref.outputs[0]!.data.byteOffset, ref.outputs[0]!.data.byteLength),
    );
    // and the output is really the model's work, not an echo
    expect(Buffer.from(out.data.buffer, out.data.byteOffset, out.data.byteLength)).not.toEqual(
      Buffer.from(x.data.buffer),
    );
    model.dispose();
  });

  it('returns a non-contiguous output (a transpose) in row-major order', async () => {
    const model = await loadModel(modelPath('list_out'));
    const x = { dtype: 'FP32' as const, shape: [2, 3], data: new Float32Array([1, 2, 3, 4, 5, 6]) };
    const { outputs } = await model.forward([x]);
    expect(outputs[1]!.shape).toEqual([3, 2]);
    expect(Array.from(outputs[1]!.data as Float32Array)).toEqual([1, 4, 2, 5, 3, 6]);
  });

  it('copies an output that aliases its input or a weight, so neither can be changed through it', async () => {
    const model = await loadModel(modelPath('aliasing'));
    const input = new Float32Array([1, 2, 3]);
    const first = await model.forward([{ dtype: 'FP32', shape: [3], data: input }]);
    expect(Array.from(first.outputs[0]!.data as Float32Array)).toEqual([1, 2, 3]);
    expect(first.outputs[0]!.data.buffer).not.toBe(input.buffer);
    (first.outputs[0]!.data as Float32Array)[0] = 99;
    (first.outputs[1]!.data as Float32Array)[0] = 42;
    expect(input[0]).toBe(1);
    const second = await model.forward([{ dtype: 'FP32', shape: [3], data: input }]);
    expect(Array.from(second.outputs[1]!.data as Float32Array)).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it('reads inputs from typed arrays at an offset inside a larger buffer', async () => {
    const model = await loadModel(modelPath('small'));
    const backing = new Float32Array(100);
    const view = new Float32Array(backing.buffer, 40 * 4, 8);
    view.set([1, 2, 3, 4, 5, 6, 7, 8]);
    const x = { dtype: 'FP32' as const, shape: [2, 4], data: view };
    const ours = await model.forward([x]);
    const ref = pythonForward(modelPath('small'), [
      { dtype: 'FP32', shape: [2, 4], data: new Float32Array([1, 2, 3, 4, 5, 6, 7, 8]) },
    ]);
    expect(maxAbsDiff(floats(ours.outputs[0]!), floats(ref.outputs[0]!))).toBeLessThan(1e-6);
  });

  it('concatenates batch parts on the engine thread: the same result as one pre-concatenated input', async () => {
    const model = await loadModel(modelPath('add_mul'));
    const a = [randomTensor('FP32', [1, 3], 1), randomTensor('FP32', [2, 3], 2), randomTensor('FP32', [1, 3], 3)];
    const b = [randomTensor('FP32', [1, 3], 4), randomTensor('FP32', [2, 3], 5), randomTensor('FP32', [1, 3], 6)];
    const cat = (ts: Tensor[]) => ({
      dtype: 'FP32' as const,
      shape: [4, 3],
      data: Float32Array.from(ts.flatMap((t) => Array.from(t.data as Float32Array))),
    });
    const ours = await model.forwardBatch([a, b]);
    const ref = pythonForward(modelPath('add_mul'), [cat(a), cat(b)]);
    expect(ours.outputs.map((o) => o.shape)).toEqual([
      [4, 3],
      [4, 3],
    ]);
    ours.outputs.forEach((o, i) => {
      expect(Array.from(floats(o))).toEqual(Array.from(floats(ref.outputs[i]!)));
    });
    await expect(model.forwardBatch([a, [randomTensor('FP32', [1, 4], 9)]])).rejects.toThrow(/do not concatenate|size/);
  });

  it('runs forward on a model loaded from bytes exactly as from the file', async () => {
    const { readFileSync } = await import('node:fs');
    const bytes = new Uint8Array(readFileSync(modelPath('small')));
    const fromBytes = await loadModel(bytes);
    const fromFile = await loadModel(modelPath('small'));
    const x = randomTensor('FP32', [3, 4], 5);
    const a = await fromBytes.forward([x]);
    const b = await fromFile.forward([x]);
    expect(Array.from(floats(a.outputs[0]!))).toEqual(Array.from(floats(b.outputs[0]!)));
  });
});
