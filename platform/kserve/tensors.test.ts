// Raw tensor bytes (KServe binary, gRPC raw contents): read in place where aligned, copied where not.
import { describe, expect, it } from 'vitest';

import { tensorFromRaw } from './tensors.js';

describe('raw tensor bytes', () => {
  const values = Float32Array.of(1.5, -2, 3.25, 4);
  const at = (offset: number) => {
    const body = new Uint8Array(offset + values.byteLength);
    body.set(new Uint8Array(values.buffer), offset);
    return body.subarray(offset);
  };

  it('views bytes whose elements are aligned (a body read for its tensors), with no copy', () => {
    const bytes = at(64);
    const t = tensorFromRaw('x', 'FP32', [2, 2], bytes, 'body');
    expect(t.data.buffer).toBe(bytes.buffer);
    expect(Array.from(t.data as Float32Array)).toEqual(Array.from(values));
  });

  it('copies bytes that are not aligned for their type, to the same values', () => {
    const bytes = at(3);
    const t = tensorFromRaw('x', 'FP32', [2, 2], bytes, 'body');
    expect(t.data.buffer).not.toBe(bytes.buffer);
    expect(Array.from(t.data as Float32Array)).toEqual(Array.from(values));
  });

  it('still refuses bytes that do not hold the shape', () => {
    expect(() => tensorFromRaw('x', 'FP32', [3, 2], at(0), 'body')).toThrow(/x/);
  });
});
