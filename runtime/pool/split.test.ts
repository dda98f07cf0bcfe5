import { describe, expect, it } from 'vitest';

import { FunctionSpecSchema } from '../../sdk/spec/function-spec.js';
import type { ForwardResult } from '../engine/index.js';
import { checkOutputBytes } from './output-checks.js';
import { splitOutputs } from './split.js';

const spec = (maxBatchSize = 8) =>
  FunctionSpecSchema.parse({
    name: 'f',
    model: 'model.pt',
    maxBatchSize,
    inputs: [{ name: 'x', dtype: 'FP32', dims: [2] }],
    outputs: [
      { name: 'a', dtype: 'FP32', dims: [2] },
      { name: 'b', dtype: 'INT64', dims: [1] },
    ],
  });
const byPlace = { outputIndex: [0, 1], outputRule: 'config-order' as const };

describe("splitOutputs: a batch's outputs back to each request", () => {
  const batch: ForwardResult = {
    kind: 'tuple',
    outputs: [
      { dtype: 'FP32', shape: [3, 2], data: new Float32Array([1, 2, 3, 4, 5, 6]) },
      { dtype: 'INT64', shape: [3, 1], data: new BigInt64Array([7n, 8n, 9n]) },
    ],
  } as ForwardResult;

  it('gives each request its own rows, in order, as views of the batch tensor', () => {
    const [first, second] = splitOutputs(spec(), byPlace, batch, [2, 1]);
    expect(first!.a).toMatchObject({ shape: [2, 2] });
    expect(Array.from(first!.a!.data as Float32Array)).toEqual([1, 2, 3, 4]);
    expect(Array.from(second!.a!.data as Float32Array)).toEqual([5, 6]);
    expect(Array.from(second!.b!.data as BigInt64Array)).toEqual([9n]);
    // A view, not a copy.
    expect((second!.a!.data as Float32Array).buffer).toBe(batch.outputs[0]!.data.buffer);
  });

  it("picks outputs by the binding's index, and from a dict by name", () => {
    const swapped = { kind: 'tuple', outputs: [batch.outputs[1], batch.outputs[0]] } as ForwardResult;
    const [only] = splitOutputs(spec(), { outputIndex: [1, 0], outputRule: 'config-order' as const }, swapped, [3]);
    expect(only!.a!.dtype).toBe('FP32');
    const dict = {
      kind: 'dict',
      outputs: [
        { ...batch.outputs[1], name: 'b' },
        { ...batch.outputs[0], name: 'a' },
      ],
    } as ForwardResult;
    expect(splitOutputs(spec(), byPlace, dict, [3])[0]!.b!.dtype).toBe('INT64');
  });

  it('refuses outputs whose rows do not add up to the batch, or that are missing', () => {
    expect(() => splitOutputs(spec(), byPlace, batch, [2, 2])).toThrow(/3 rows for a batch of 4/);
    const short = { kind: 'tuple', outputs: [batch.outputs[0]] } as ForwardResult;
    expect(() => splitOutputs(spec(), byPlace, short, [3])).toThrow(/returned 1 output/);
    const dict = { kind: 'dict', outputs: [{ ...batch.outputs[0], name: 'a' }] } as ForwardResult;
    expect(() => splitOutputs(spec(), byPlace, dict, [3])).toThrow(/no output "b"/);
  });

  it('hands a model without batching its outputs whole', () => {
    const whole = { kind: 'tuple', outputs: [batch.outputs[0], { ...batch.outputs[1], shape: [3] }] } as ForwardResult;
    const unbatched = FunctionSpecSchema.parse({
      ...spec(0),
      outputs: [
        { name: 'a', dtype: 'FP32', dims: [3, 2] },
        { name: 'b', dtype: 'INT64', dims: [3] },
      ],
    });
    const [out] = splitOutputs(unbatched, byPlace, whole, [1]);
    expect(out!.a!.shape).toEqual([3, 2]);
  });
});

describe("splitOutputs: outputs against the spec's dtype and dims", () => {
  const one = (dtype: string, shape: number[], data: ArrayBufferView) =>
    ({
      kind: 'tuple',
      outputs: [
        { dtype, shape, data },
        { dtype: 'INT64', shape: shape.length > 1 ? [shape[0]!, 1] : [1], data: new BigInt64Array(shape[0] ?? 1) },
      ],
    }) as ForwardResult;

  it('refuses an output of another dtype, as Triton does', () => {
    expect(() => splitOutputs(spec(), byPlace, one('FP64', [1, 2], new Float64Array(2)), [1])).toThrow(
      /output "a" is FP64, but the spec says FP32/,
    );
  });

  it('refuses an output of other dims, -1 matching any and the batch dimension first', () => {
    expect(() => splitOutputs(spec(), byPlace, one('FP32', [1, 3], new Float32Array(3)), [1])).toThrow(
      /output "a" has shape \[1, 3\], but the spec says \[batch, 2\]/,
    );
    expect(() => splitOutputs(spec(0), byPlace, one('FP32', [2], new Float32Array(2)), [1])).not.toThrow();
    expect(() => splitOutputs(spec(0), byPlace, one('FP32', [1, 2], new Float32Array(2)), [1])).toThrow(
      /output "a" has shape \[1, 2\], but the spec says \[2\]/,
    );
    const wild = FunctionSpecSchema.parse({
      ...spec(),
      outputs: [
        { name: 'a', dtype: 'FP32', dims: [-1] },
        { name: 'b', dtype: 'INT64', dims: [1] },
      ],
    });
    expect(splitOutputs(wild, byPlace, one('FP32', [1, 7], new Float32Array(7)), [1])[0]!.a!.shape).toEqual([1, 7]);
  });
});

describe('checkOutputBytes: each request within its own limit', () => {
  it("refuses a request's outputs past its bytes, naming the limit", () => {
    const out = { a: { dtype: 'FP32' as const, shape: [4], data: new Float32Array(4) } };
    expect(() => checkOutputBytes([out, out], [16, 16])).not.toThrow();
    expect(() => checkOutputBytes([out, out], [16, 15])).toThrow(
      /16 bytes, over its limit of 15 \(limits\.maxResponseMb\)/,
    );
  });
});
