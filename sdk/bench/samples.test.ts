import { describe, expect, it } from 'vitest';

import { Samples } from './samples.js';

/** Nearest-rank percentile computed the textbook way, as the reference. */
function nearestRank(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(1, Math.ceil((p / 100) * sorted.length)) - 1]!;
}

describe('Samples', () => {
  it('gives nearest-rank percentiles over every sample', () => {
    const s = new Samples();
    for (let v = 100; v >= 1; v--) s.add(v);
    expect(s.count).toBe(100);
    expect(s.percentile(50)).toBe(50);
    expect(s.percentile(90)).toBe(90);
    expect(s.percentile(99)).toBe(99);
    expect(s.percentile(100)).toBe(100);
    expect(s.mean()).toBe(50.5);
    expect(s.max()).toBe(100);
  });

  it('agrees with the textbook definition on skewed data, as it grows past its first buffer', () => {
    const values = Array.from({ length: 5000 }, (_, i) => (i % 97 === 0 ? 1000 + i : (i * 7919) % 13));
    const s = new Samples();
    for (const v of values) s.add(v);
    for (const p of [1, 50, 90, 99, 99.9]) expect(s.percentile(p)).toBe(nearestRank(values, p));
    expect(s.thinned).toBe(false);
  });

  it('p99 of a few samples is their largest but one only past 100', () => {
    const s = new Samples();
    for (const v of [5, 1, 3]) s.add(v);
    expect(s.percentile(50)).toBe(3);
    expect(s.percentile(99)).toBe(5);
  });

  it('keeps adding after a percentile was read', () => {
    const s = new Samples();
    s.add(10);
    s.add(20);
    expect(s.percentile(50)).toBe(10);
    s.add(1);
    s.add(2);
    expect(s.percentile(50)).toBe(2);
  });

  it('has no percentile, mean or max with no samples', () => {
    const s = new Samples();
    expect(s.percentile(50)).toBeUndefined();
    expect(s.mean()).toBeUndefined();
    expect(s.max()).toBeUndefined();
  });

  it('stays within its bound, a uniform sample of what it saw', () => {
    const s = new Samples(1000);
    // Rising values: a sample of the whole run has its median near the middle (50 000), where
    // keeping the first 1000 would give about 500 and the last 1000 about 99 500.
    for (let i = 0; i < 100_000; i++) s.add(i);
    expect(s.count).toBe(1000);
    expect(s.thinned).toBe(true);
    // The median of 1000 uniform draws: its standard deviation is about 1600 here, so ±10 000 is 6 of them.
    expect(Math.abs(s.percentile(50)! - 50_000)).toBeLessThan(10_000);
    expect(s.percentile(10)!).toBeLessThan(20_000);
    expect(s.percentile(90)!).toBeGreaterThan(80_000);
  });
});
