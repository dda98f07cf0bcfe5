import { describe, expect, it } from 'vitest';

import { InvalidInputError } from './errors.js';
import type { Tensor } from './tensor.js';
import {
  flatten,
  floatToHalf,
  inputFromJson,
  JsonBudget,
  JsonTooLargeError,
  tensorFromJson,
  tensorJsonText,
  tensorToJson,
} from './tensor-json.js';

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

  it('reads plain numbers in one pass and still says where a bad one is', () => {
    const t = tensorFromJson('INT32', [[[1, -2]], [[3, 4]]]);
    expect(t.shape).toEqual([2, 1, 2]);
    expect(Array.from(t.data as Int32Array)).toEqual([1, -2, 3, 4]);
    expect(Array.from(tensorFromJson('FP64', [0.1, Number.NaN], [2, 1]).data)).toEqual([0.1, Number.NaN]);
    expect(() => tensorFromJson('INT32', [[1, 2.5]])).toThrow(
      new InvalidInputError('value[0][1] must be an integer for INT32'),
    );
    expect(() =>
      tensorFromJson('FP32', [
        [1, 2],
        [3, [4]],
      ]),
    ).toThrow(/value\[1\]\[1\] is nested deeper/);
    expect(() => tensorFromJson('FP32', [[1, 2], [3]])).toThrow(/value\[1\] is ragged/);
    expect(() => tensorFromJson('FP32', [[1], 2])).toThrow(InvalidInputError);
    expect(() => tensorFromJson('UINT8', [1, '2'], [2])).toThrow(/value\[1\] must be a number/);
    // Rows whose first ones are long claim a huge shape (40^6 elements): refused as ragged, with
    // nothing allocated for the claim; so is a flat array whose shape does not fit it.
    const claim = (depth: number): unknown[] =>
      depth === 0 ? new Array(40).fill(0) : [claim(depth - 1), ...new Array(39).fill([0])];
    expect(() => tensorFromJson('FP32', claim(5))).toThrow(/is ragged/);
    expect(() => tensorFromJson('FP32', [1, 2], [2 ** 29])).toThrow(InvalidInputError);
    expect(() => tensorFromJson('FP32', [1, 2], [-1])).toThrow(InvalidInputError);
    // Printed back row by row, nested by shape.
    expect(tensorToJson({ dtype: 'INT32', shape: [2, 1, 2], data: Int32Array.of(1, -2, 3, 4) })).toEqual([
      [[1, -2]],
      [[3, 4]],
    ]);
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
    // {"input": ...}: the hook's body.inputs is undefined, a missing field rather than a bad number.
    expect(() => inputFromJson(ctx, 'x', undefined, 'inputs')).toThrow(new InvalidInputError('inputs is missing'));
  });
});

describe('tensorJsonText: the JSON text of a tensor, made directly', () => {
  const edges = [
    0,
    -0,
    1,
    -1,
    0.1,
    1 / 3,
    1e-7,
    1.5e-7,
    1e21,
    2.5e21,
    123456789,
    -1e-300,
    5e-324,
    NaN,
    Infinity,
    -Infinity,
  ];
  const cases: Tensor[] = [
    { dtype: 'FP32', shape: [4, 4], data: Float32Array.from(edges) },
    { dtype: 'FP64', shape: [16], data: Float64Array.from(edges) },
    { dtype: 'INT32', shape: [2, 2], data: Int32Array.from([0, -1, 2 ** 31 - 1, -(2 ** 31)]) },
    { dtype: 'UINT8', shape: [3], data: Uint8Array.from([0, 7, 255]) },
    { dtype: 'UINT32', shape: [2], data: Uint32Array.from([0, 2 ** 32 - 1]) },
    { dtype: 'INT64', shape: [3], data: BigInt64Array.from([0n, -(2n ** 63n), 2n ** 53n - 1n]) },
    { dtype: 'UINT64', shape: [2], data: BigUint64Array.from([1n, 2n ** 64n - 1n]) },
    { dtype: 'BOOL', shape: [3], data: Uint8Array.from([0, 1, 2]) },
    { dtype: 'FP16', shape: [3], data: Uint16Array.from([floatToHalf(0.5), floatToHalf(-2), floatToHalf(65504)]) },
    { dtype: 'FP32', shape: [0], data: new Float32Array(0) },
  ] as Tensor[];
  it.each(
    cases.map((t) => [t.dtype, t] as const),
  )('%s: byte for byte what JSON.stringify makes of its flat array, and nested by its shape', (_, t) => {
    expect(tensorJsonText(t)).toBe(JSON.stringify(tensorToJson({ ...t, shape: [t.data.length] })));
    expect(tensorJsonText(t, t.shape)).toBe(JSON.stringify(tensorToJson(t)));
  });

  it('nests by any shape, a scalar and empty dimensions too', () => {
    const t: Tensor = { dtype: 'FP32', shape: [2, 3, 2], data: Float32Array.from({ length: 12 }, (_, i) => i / 3) };
    expect(tensorJsonText(t, t.shape)).toBe(JSON.stringify(tensorToJson(t)));
    const scalar: Tensor = { dtype: 'FP64', shape: [], data: Float64Array.of(0.25) };
    expect(tensorJsonText(scalar, [])).toBe('0.25');
    const empty: Tensor = { dtype: 'FP32', shape: [2, 0], data: new Float32Array(0) };
    expect(tensorJsonText(empty, empty.shape)).toBe(JSON.stringify(tensorToJson(empty)));
  });
});

describe('tensorJsonText within a JsonBudget', () => {
  it('prints as without one while it fits, shared by the tensors of a response', () => {
    const t: Tensor = { dtype: 'FP32', shape: [3], data: Float32Array.of(1.5, -2, 3) };
    const budget = new JsonBudget(24);
    expect(tensorJsonText(t, t.shape, budget)).toBe('[1.5,-2,3]');
    expect(budget.left).toBe(14);
    expect(tensorJsonText(t, t.shape, budget)).toBe('[1.5,-2,3]');
    expect(() => tensorJsonText(t, t.shape, budget)).toThrow(JsonTooLargeError);
  });

  it('stops a large tensor soon after its text passes the budget, not at its end', () => {
    const big: Tensor = { dtype: 'FP32', shape: [1_000_000], data: new Float32Array(1_000_000).fill(750000) };
    const budget = new JsonBudget(100_000);
    expect(() => tensorJsonText(big, big.shape, budget)).toThrow(/over its limit of 100000 bytes/);
    // Measured every 1024 elements: it went at most one stretch past the limit.
    expect(budget.left).toBeGreaterThan(-1024 * 26);
    const bools: Tensor = { dtype: 'BOOL', shape: [4], data: Uint8Array.of(1, 0, 1, 1) };
    expect(() => tensorJsonText(bools, bools.shape, new JsonBudget(10))).toThrow(JsonTooLargeError);
    expect(tensorJsonText(bools, bools.shape, new JsonBudget(100))).toBe('[true,false,true,true]');
  });
});
