import { describe, expect, it } from 'vitest';

import { HookCost, INLINE_UNDER_US, SURELY_COSTLY_US } from './hook-cost.js';

describe('a hook’s cost a request', () => {
  it('is unknown, and not cheap, until a task of eight requests or more says', () => {
    const cost = new HookCost();
    expect(cost.cheap('pre')).toBe(false);
    // A lone request's figure is mostly the crossing's own: not counted.
    cost.observe('pre', 40, 1);
    cost.observe('pre', 280, 7);
    expect(cost.of('pre')).toBe(Number.POSITIVE_INFINITY);
    cost.observe('pre', 320, 8);
    expect(cost.of('pre')).toBe(40);
    expect(cost.cheap('pre')).toBe(true);
    expect(cost.cheap('post')).toBe(false);
  });

  it('moves a fifth of the way to each new task, so one runaway task makes it costly at once', () => {
    const cost = new HookCost();
    cost.observe('post', 16 * 50, 16);
    cost.observe('post', 16 * 100, 16);
    expect(cost.of('post')).toBeCloseTo(60);
    // One request that ran a 300 ms limit in a task of ten.
    cost.observe('post', 300_000, 10);
    expect(cost.cheap('post')).toBe(false);
    // Cheap tasks bring it back down, a fifth of the way each.
    let tasks = 0;
    while (!cost.cheap('post')) {
      cost.observe('post', 16 * 20, 16);
      tasks++;
    }
    expect(tasks).toBe(Math.ceil(Math.log((INLINE_UNDER_US - 20) / (6048 - 20)) / Math.log(0.8)));
  });

  it('counts a smaller task where it cost a request over 10 ms: a cheap hook turned slow', () => {
    const cost = new HookCost();
    cost.observe('pre', 16 * 30, 16);
    expect(cost.cheap('pre')).toBe(true);
    // Two requests of which one ran 300 ms.
    cost.observe('pre', 300_000, 2);
    expect(cost.of('pre')).toBeCloseTo(30 + 0.2 * (150_000 - 30));
    expect(cost.cheap('pre')).toBe(false);
    // A lone request under it is the crossing's own figure (or a first call's compile): not counted.
    const quiet = new HookCost();
    quiet.observe('post', SURELY_COSTLY_US - 1, 1);
    expect(quiet.of('post')).toBe(Number.POSITIVE_INFINITY);
  });

  it('ignores a figure that is no time at all', () => {
    const cost = new HookCost();
    cost.observe('pre', Number.NaN, 10);
    cost.observe('pre', -5, 10);
    cost.observe('pre', 5000, 0);
    expect(cost.of('pre')).toBe(Number.POSITIVE_INFINITY);
  });
});
