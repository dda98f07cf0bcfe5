// Body buffers: sized in powers of two, used again, cleared before they are, and never too many kept.
import { describe, expect, it } from 'vitest';

import { BodyBuffers } from './body-buffers.js';

describe('body buffers', () => {
  it('gives a buffer of the next power of two (64 KiB at least) and takes it again for the next body of that size', () => {
    const buffers = new BodyBuffers();
    const a = buffers.take(602_112);
    expect(a.byteLength).toBe(1 << 20);
    expect(buffers.take(100).byteLength).toBe(64 * 1024);
    buffers.give(a, 602_112);
    expect(buffers.held).toBe(1 << 20);
    expect(buffers.take(700_000)).toBe(a);
    expect(buffers.held).toBe(0);
    // Another size class is a new buffer.
    expect(buffers.take(3 << 20)).not.toBe(a);
  });

  it("clears what a body used before the buffer serves another request: no request's bytes reach another", () => {
    const buffers = new BodyBuffers();
    const a = buffers.take(200_000);
    new Uint8Array(a).fill(0xab, 10, 200_010);
    buffers.give(a, 200_010);
    const again = new Uint8Array(buffers.take(200_000));
    expect(again.buffer).toBe(a);
    expect(again.every((b) => b === 0)).toBe(true);
  });

  it('keeps at most 64 MiB idle, and nothing that is not one of its sizes', () => {
    const buffers = new BodyBuffers();
    const taken = Array.from({ length: 40 }, () => buffers.take(2 << 20));
    for (const b of taken) buffers.give(b, 0);
    expect(buffers.held).toBe(64 * 2 ** 20);
    buffers.give(new ArrayBuffer(100_000), 0);
    expect(buffers.held).toBe(64 * 2 ** 20);
  });
});
