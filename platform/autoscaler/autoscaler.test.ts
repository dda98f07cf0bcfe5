import { describe, expect, it } from 'vitest';

import type { ScaleDecision, ScalingPolicy } from './autoscaler.js';
import { ScaleDecider } from './autoscaler.js';

const policy: ScalingPolicy = {
  minInstances: 0,
  maxInstances: 4,
  targetQueueDepth: 8,
  scaleDownAfterS: 60,
  stableWindowS: 10,
};

/** Runs the decider once a second over `loads`, applying its decisions; returns the counts. */
function simulate(loads: number[], start = 1, p = policy, room = 64): { counts: number[]; decisions: ScaleDecision[] } {
  const d = new ScaleDecider(p);
  let instances = start;
  let lastRequestAt = 0;
  const counts: number[] = [];
  const decisions: ScaleDecision[] = [];
  loads.forEach((load, i) => {
    const now = i * 1000;
    if (load > 0) lastRequestAt = now;
    const decision = d.decide({ now, load, instances, lastRequestAt, room });
    decisions.push(decision);
    if (decision.action === 'up' || decision.action === 'down') instances = decision.to;
    if (decision.action === 'zero') instances = 0;
    counts.push(instances);
  });
  return { counts, decisions };
}

function directionChanges(counts: number[]): number {
  let changes = 0;
  let last = 0;
  for (let i = 1; i < counts.length; i++) {
    const dir = Math.sign(counts[i]! - counts[i - 1]!);
    if (dir !== 0 && last !== 0 && dir !== last) changes++;
    if (dir !== 0) last = dir;
  }
  return changes;
}

describe('ScaleDecider', () => {
  it('wants ceil(load / target) instances, clamped to [min (1 under load), max]', () => {
    const d = new ScaleDecider(policy);
    expect([0, 1, 8, 9, 16, 17, 32, 33, 1000].map((l) => d.wanted(l))).toEqual([0, 1, 1, 2, 2, 3, 4, 4, 4]);
    expect(new ScaleDecider({ ...policy, minInstances: 2 }).wanted(0)).toBe(2);
  });

  it('scales up within the tick that sees the queue over its target', () => {
    const { counts } = simulate([4, 4, 30, 30]);
    expect(counts).toEqual([1, 1, 4, 4]);
  });

  it('waits for room on the device instead of scaling past it', () => {
    const d = new ScaleDecider(policy);
    expect(d.decide({ now: 0, load: 32, instances: 1, lastRequestAt: 0, room: 0 })).toEqual({
      action: 'hold',
      wanted: 4,
      reason: 'no-room',
    });
    expect(d.decide({ now: 1000, load: 32, instances: 1, lastRequestAt: 1000, room: 1 })).toEqual({
      action: 'up',
      to: 2,
      wanted: 4,
    });
  });

  it('scales down only after a whole window of lower load, to the highest count wanted in it', () => {
    const loads = [...Array(5).fill(30), ...Array(30).fill(9)];
    const { counts } = simulate(loads);
    expect(counts.slice(0, 5)).toEqual([4, 4, 4, 4, 4]);
    // The step down comes at second 15: 10 s after the last high sample (second 4).
    expect(counts.indexOf(2)).toBe(15);
    expect(counts.slice(5, 15).every((c) => c === 4)).toBe(true);
    expect(counts.at(-1)).toBe(2);
  });

  it('settles under a steady load that wobbles around a boundary', () => {
    const loads = Array.from({ length: 120 }, (_, i) => (i % 3 === 0 ? 17 : 15));
    const { counts } = simulate(loads);
    expect(new Set(counts.slice(1))).toEqual(new Set([3]));
  });

  it('changes direction at most once for a step up then a step down', () => {
    const loads = [...Array(20).fill(2), ...Array(30).fill(30), ...Array(40).fill(2)];
    const { counts } = simulate(loads);
    expect(Math.max(...counts)).toBe(4);
    expect(counts.at(-1)).toBe(1);
    expect(directionChanges(counts)).toBe(1);
  });

  it('goes to zero after scaleDownAfterS with no request, and not before', () => {
    const loads = [5, ...Array(70).fill(0)];
    const { counts, decisions } = simulate(loads);
    expect(counts.indexOf(0)).toBe(60);
    expect(decisions[60]).toEqual({ action: 'zero', wanted: 0 });
    expect(counts.slice(0, 60).every((c) => c >= 1)).toBe(true);
  });

  it('never goes to zero with minInstances above 0, nor below it', () => {
    const { counts } = simulate([5, ...Array(100).fill(0)], 3, { ...policy, minInstances: 2 });
    expect(counts.at(-1)).toBe(2);
    expect(Math.min(...counts)).toBe(2);
  });

  it('does not scale a pool down before it has seen a whole window', () => {
    const { counts } = simulate(Array(12).fill(1), 4);
    expect(counts.slice(0, 10).every((c) => c === 4)).toBe(true);
    expect(counts.at(-1)).toBe(1);
  });
});
