import { describe, expect, it } from 'vitest';

import { preGroupSize } from './hook-pool.js';

describe('pre groups', () => {
  it('shares queued requests evenly among the free threads, the remainder to the first', () => {
    // 10 queued, 3 free threads: 4, then 3 of the 6 left for 2 threads, then the last 3.
    expect(preGroupSize(10, 3)).toBe(4);
    expect(preGroupSize(6, 2)).toBe(3);
    expect(preGroupSize(3, 1)).toBe(3);
    expect(preGroupSize(1, 4)).toBe(1);
  });

  it('gives one free thread the whole queue up to 64 requests a task', () => {
    expect(preGroupSize(40, 1)).toBe(40);
    expect(preGroupSize(500, 1)).toBe(64);
    expect(preGroupSize(500, 2)).toBe(64);
  });
});
