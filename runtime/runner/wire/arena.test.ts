// The arena's allocator: first fit, 64-byte extents, freed extents merged with their neighbours.
import { describe, expect, it } from 'vitest';

import { Extents } from '../../tensors/index.js';
import { arenaCapBytes, nodeEnd, runnerEnd } from './arena.js';

describe('arena extents', () => {
  it('gives out 64-byte-aligned extents from the lowest free one, and none past its end', () => {
    const e = new Extents(1024, 1024 + 640);
    expect(e.alloc(100)).toBe(1024); // 128 bytes
    expect(e.alloc(1)).toBe(1152); // 64
    expect(e.alloc(0)).toBe(1216); // 64: an empty blob still has a place
    expect(e.alloc(384)).toBe(1280); // exactly the rest
    expect(e.alloc(1)).toBeUndefined();
    expect(e.used).toBe(640);
  });

  it('merges a freed extent with free neighbours on either side, so a large blob fits again', () => {
    const e = new Extents(0, 64 * 8);
    const [a, b, c, d] = [e.alloc(64), e.alloc(64), e.alloc(64), e.alloc(64 * 5)];
    expect([a, b, c, d]).toEqual([0, 64, 128, 192]);
    expect(e.alloc(64 * 2)).toBeUndefined();
    e.free(a!);
    e.free(c!);
    // Two holes of 64, apart: 128 does not fit.
    expect(e.alloc(128)).toBeUndefined();
    e.free(b!); // joins both
    expect(e.alloc(192)).toBe(0);
    e.free(0);
    e.free(d!);
    expect(e.used).toBe(0);
    expect(e.alloc(64 * 8)).toBe(0);
  });

  it('frees only what it gave out: any other offset, or one freed twice, is refused and frees nothing', () => {
    const e = new Extents(0, 4096);
    const at = e.alloc(200)!;
    expect(e.free(at + 64)).toBe(false);
    expect(e.free(9999)).toBe(false);
    expect(e.free(at)).toBe(true);
    expect(e.free(at)).toBe(false);
    expect(e.alloc(4096)).toBe(0);
  });

  it('gives out no more than its cap at once, however much of its span is free', () => {
    const e = new Extents(0, 1 << 20);
    e.cap = 4096;
    const a = e.alloc(4000)!;
    expect(e.alloc(65)).toBeUndefined(); // 4032 + 128 > 4096
    e.free(a);
    expect(e.alloc(4096)).toBe(0);
    // An eighth of a function's runnerMemoryMb: 16 MiB for the smallest runner (128 MiB).
    expect(arenaCapBytes(128)).toBe(16 * 2 ** 20);
  });

  it("splits an arena into the node's half (requests) and the runner's (responses), neither reaching into the other", () => {
    const buffer = new ArrayBuffer(64 * 1000 + 32);
    const node = nodeEnd(buffer);
    const runner = runnerEnd(buffer);
    expect(node.out.from).toBe(0);
    expect(node.out.to).toBe(runner.in.to);
    expect(runner.out.from).toBe(node.out.to);
    expect(runner.out.to).toBe(buffer.byteLength);
    expect(node.in).toEqual({ from: runner.out.from, to: runner.out.to });
    expect(node.out.to % 64).toBe(0);
    expect([node.copyIn, runner.copyIn]).toEqual([true, false]);
  });
});
