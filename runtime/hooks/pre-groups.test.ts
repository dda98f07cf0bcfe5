import { describe, expect, it } from 'vitest';

import { MAX_PRE_GROUP_BYTES, preGroupSize } from './pre-groups.js';

const small = () => 4096;

describe('pre groups', () => {
  it('shares queued requests evenly among the free threads, the remainder to the first', () => {
    // 10 queued, 3 free threads: 4, then 3 of the 6 left for 2 threads, then the last 3.
    expect(preGroupSize(10, 3, small)).toBe(4);
    expect(preGroupSize(6, 2, small)).toBe(3);
    expect(preGroupSize(3, 1, small)).toBe(3);
    expect(preGroupSize(1, 4, small)).toBe(1);
    expect(preGroupSize(0, 2, small)).toBe(0);
  });

  it('gives one free thread the whole queue up to 64 requests a task', () => {
    expect(preGroupSize(40, 1, small)).toBe(40);
    expect(preGroupSize(500, 1, small)).toBe(64);
    expect(preGroupSize(500, 2, small)).toBe(64);
  });

  it('takes no more bodies than MAX_PRE_GROUP_BYTES, and a larger body alone', () => {
    const image = 602_112;
    // 1 MiB holds one 602 KB tensor: each goes alone, however many wait.
    expect(preGroupSize(64, 1, () => image)).toBe(Math.max(1, Math.floor(MAX_PRE_GROUP_BYTES / image)));
    expect(preGroupSize(64, 1, () => MAX_PRE_GROUP_BYTES * 4)).toBe(1);
    // Small bodies behind a large one wait for the next group; bodies an eighth of the cap fill it exactly.
    const sizes = [MAX_PRE_GROUP_BYTES, 10, 10];
    expect(preGroupSize(3, 1, (i) => sizes[i]!)).toBe(1);
    expect(preGroupSize(64, 1, () => MAX_PRE_GROUP_BYTES / 8)).toBe(8);
  });
});
