import { describe, expect, it } from 'vitest';

import { flatten, tensorFromJson, tensorToJson } from './tensor-json.js';
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
