import { describe, expect, it } from 'vitest';

import { crossings, OWN_BUFFER_BYTES, packBodies, packOutputs, viewIn } from './crossing.js';

describe('what crosses a hook isolate for many requests', () => {
  it('groups items up to a byte and a count budget, a large item alone', () => {
    expect(crossings([3, 3, 3, 10, 1, 1], (n) => n, 6)).toEqual([[3, 3], [3], [10], [1, 1]]);
    expect(crossings([1, 1, 1, 1, 1], (n) => n, 100, 2)).toEqual([[1, 1], [1, 1], [1]]);
    expect(crossings([], (n: number) => n, 6)).toEqual([]);
  });

  it("packs bodies end to end, JSON as text, and a batch's rows as the spans of their buffers", () => {
    const b = packBodies([
      { body: new Uint8Array([1, 2]), contentType: 'application/octet-stream' },
      { body: new TextEncoder().encode('{"a":"é"}'), contentType: 'application/json' },
      { body: new Uint8Array([3]), contentType: 'image/png' },
    ]);
    expect([Array.from(b.bytes), b.texts, b.ends]).toEqual([[1, 2, 3], '{"a":"é"}', [2, -1 - 9, 3]]);
    expect(b.own).toEqual([]);
    // A large body crosses in a copy of its own, in order, its place in the pack null.
    const large = (fill: number, n = OWN_BUFFER_BYTES) => new Uint8Array(n).fill(fill);
    const c = packBodies([
      { body: large(7), contentType: 'application/octet-stream' },
      { body: new Uint8Array([1, 2]), contentType: 'application/octet-stream' },
      { body: large(9, OWN_BUFFER_BYTES + 1).subarray(1), contentType: 'image/jpeg' },
      { body: new Uint8Array([3]), contentType: 'application/octet-stream' },
    ]);
    expect([Array.from(c.bytes), c.ends]).toEqual([
      [1, 2, 3],
      [null, 2, null, 3],
    ]);
    expect(
      c.own.map((o) => (o instanceof Uint8Array ? [o.byteLength, o.buffer.byteLength, o[0], o[o.byteLength - 1]] : o)),
    ).toEqual([
      [OWN_BUFFER_BYTES, OWN_BUFFER_BYTES, 7, 7],
      [OWN_BUFFER_BYTES, OWN_BUFFER_BYTES, 9, 9],
    ]);
    // With an inbox, large bodies are written into it while they fit ([from, to) each), the rest copied.
    const inbox = new Uint8Array(new SharedArrayBuffer(2 * OWN_BUFFER_BYTES + 10));
    const d = packBodies(
      [
        { body: large(5), contentType: 'application/octet-stream' },
        { body: new Uint8Array([1]), contentType: 'application/octet-stream' },
        { body: large(6, OWN_BUFFER_BYTES + 3).subarray(2), contentType: 'image/png' },
        { body: large(8), contentType: 'application/octet-stream' },
      ],
      inbox,
    );
    const n = OWN_BUFFER_BYTES;
    expect([Array.from(d.bytes), d.ends]).toEqual([[1], [null, 1, null, null]]);
    expect(d.own.slice(0, 2)).toEqual([
      [0, n],
      [n, 2 * n + 1],
    ]);
    expect([inbox[0], inbox[n - 1], inbox[n], inbox[2 * n], inbox[2 * n + 1]]).toEqual([5, 5, 6, 6, 0]);
    const rest = d.own[2] as Uint8Array;
    expect([rest.byteLength, rest.buffer.byteLength, rest[0]]).toEqual([n, n, 8]);
    const big = new Float32Array([0, 1, 2, 3, 4, 5, 6, 7]);
    const other = new BigInt64Array([9n]);
    const { bytes, metas } = packOutputs([
      { y: { dtype: 'FP32', shape: [1, 2], data: big.subarray(2, 4) }, z: { dtype: 'INT64', shape: [1], data: other } },
      { y: { dtype: 'FP32', shape: [1, 2], data: big.subarray(4, 6) }, z: { dtype: 'INT64', shape: [1], data: other } },
    ]);
    // Only rows 2..6 of `big` (16 bytes), then `other` at the next 8-byte boundary.
    expect(bytes.byteLength).toBe(24);
    expect(metas.map((m) => [m.y!.view, m.y!.at, m.y!.n, m.z!.view, m.z!.at])).toEqual([
      ['Float32Array', 0, 2, 'BigInt64Array', 16],
      ['Float32Array', 8, 2, 'BigInt64Array', 16],
    ]);
    expect(Array.from(viewIn(bytes.buffer, 'Float32Array', 8, 2) as Float32Array)).toEqual([4, 5]);
  });

  it('reads back only a known typed array, aligned, inside what the isolate handed over', () => {
    const arena = new ArrayBuffer(16);
    expect(Array.from(viewIn(arena, 'Uint8Array', 4, 12) as Uint8Array)).toHaveLength(12);
    for (const [view, at, n] of [
      ['Float32Array', 0, 5],
      ['Float32Array', 2, 1],
      ['Float32Array', -4, 1],
      ['Float32Array', 0, 1e9],
      ['Float32Array', 0.5, 1],
      ['DataView', 0, 1],
      ['constructor', 0, 1],
      ['Buffer', 0, 1],
    ] as const)
      expect(() => viewIn(arena, view, at, n)).toThrow(/could not read back/);
    expect(() => viewIn(new SharedArrayBuffer(16), 'Uint8Array', 0, 1)).toThrow(/could not read back/);
  });

  it('leaves no earlier bytes of the process in the alignment gaps of what it packs (their buffers are not zero-filled first)', () => {
    // Memory this process just let go of, full of 0xab, is what the next buffers of these sizes
    // are likely to be made from.
    const numbers = JSON.stringify({ x: Array.from({ length: 256 }, (_, i) => i / 7) });
    for (let round = 0; round < 200; round++) {
      for (const size of [5 + 8 * 256, 24 + 8, 40]) Buffer.allocUnsafeSlow(size).fill(0xab);
      const b = packBodies([
        { body: new Uint8Array([1, 2, 3, 4, 5]), contentType: 'application/octet-stream' },
        { body: new TextEncoder().encode(numbers), contentType: 'application/json' },
      ]);
      expect(Array.from(b.bytes.subarray(5, b.parsed[1]!.at))).toEqual([0, 0, 0]);
      const a = new Uint8Array([7, 7, 7]);
      const c = new BigInt64Array([9n]);
      const out = packOutputs([
        { a: { dtype: 'UINT8', shape: [3], data: a }, c: { dtype: 'INT64', shape: [1], data: c } },
      ]);
      expect(Array.from(out.bytes.subarray(3, 8))).toEqual([0, 0, 0, 0, 0]);
    }
  });
});
