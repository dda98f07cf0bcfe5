import { describe, expect, it } from 'vitest';

import { flatten, inputFromJson, tensorFromJson, tensorToJson } from './tensor-json.js';
import { InvalidInputError } from './errors.js';

describe('tensors as JSON', () => {
  it('reads a nested array with its shape and prints it back', () => {
    const t = tensorFromJson('FP32', [
      [1, 2, 3],
      [4, 5, 6],
    ]);
    expect(t.shape).toEqual([2, 3]);
    expect(Array.from(t.data as Float32Array)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(tensorToJson(t)).toEqual([
      [1, 2, 3],
      [4, 5, 6],
    ]);
  });

  it('reads a scalar (shape []) as the bare number tensorToJson prints', () => {
    const t = tensorFromJson('INT64', 200);
    expect(t.shape).toEqual([]);
    expect(Array.from(t.data as BigInt64Array)).toEqual([200n]);
    expect(tensorToJson(t)).toBe(200);
    expect(tensorFromJson('FP32', 1.5, []).shape).toEqual([]);
  });

  it('refuses ragged arrays and a flat array that does not fit the shape', () => {
    expect(() => tensorFromJson('FP32', [[1, 2], [3]])).toThrow(InvalidInputError);
    expect(() => tensorFromJson('FP32', [1, 2, 3], [2, 2])).toThrow(/3 elements but shape \[2, 2\] needs 4/);
  });

  it('flattens nested arrays in order, and hands a flat one back as it is', () => {
    const flat = [1, 2, 3];
    expect(flatten(flat)).toBe(flat);
    expect(flatten([[1, [2, 3]], [], [[[4]], 5]])).toEqual([1, 2, 3, 4, 5]);
    expect(flatten([])).toEqual([]);
  });
});

describe('inputFromJson: a request against the spec', () => {
  const ctx = {
    maxBatchSize: 8,
    inputs: [{ name: 'x', dtype: 'FP32' as const, dims: [4], optional: false, allowRaggedBatch: false }],
  };
  it("makes the input with the spec's dtype when the body fits", () => {
    const t = inputFromJson(ctx, 'x', [[1, 2, 3, 4]], 'inputs');
    expect(t).toMatchObject({ dtype: 'FP32', shape: [1, 4] });
  });
  it("is the caller's error (400) naming the field, for a shape, a value or a batch that does not fit", () => {
    expect(() => inputFromJson(ctx, 'x', [[1, 2]], 'inputs')).toThrow(
      new InvalidInputError('inputs has shape [1, 2], but x takes [batch, 4] (rows of 4 numbers)'),
    );
    expect(() => inputFromJson(ctx, 'x', [[1, 2, 'three', 4]], 'inputs')).toThrow(/inputs\[0\]\[2\]/);
    expect(() =>
      inputFromJson(
        ctx,
        'x',
        Array.from({ length: 9 }, () => [1, 2, 3, 4]),
        'inputs',
      ),
    ).toThrow(/inputs has 9 rows, more than x's batch of 8/);
    for (const bad of [[[1, 2]], [[1, 2, 'three', 4]], undefined])
      expect(() => inputFromJson(ctx, 'x', bad, 'inputs')).toThrow(InvalidInputError);
  });
});
