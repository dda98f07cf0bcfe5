// The ring of recent request durations: the latest n of them, in order, across its wrap.
import { describe, expect, it } from 'vitest';

import { RecentLatencies } from './stats.js';

describe('RecentLatencies.latest', () => {
  it('gives the latest n durations, oldest first, across the ring’s wrap, and no more than it holds', () => {
    const ring = new RecentLatencies(4);
    expect([...ring.latest(3)]).toEqual([]);
    for (const us of [1, 2, 3]) ring.add(us);
    expect([...ring.latest(2)]).toEqual([2, 3]);
    expect([...ring.latest(10)]).toEqual([1, 2, 3]);
    for (const us of [4, 5, 6]) ring.add(us);
    // Holds 3, 4, 5, 6; the next write goes where 3 is.
    expect([...ring.latest(4)]).toEqual([3, 4, 5, 6]);
    expect([...ring.latest(3)]).toEqual([4, 5, 6]);
    expect([...ring.latest(0)]).toEqual([]);
    ring.add(7);
    expect([...ring.latest(4)]).toEqual([4, 5, 6, 7]);
  });
});
