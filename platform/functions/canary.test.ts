/**
 * The canary's rules on hand-counted calls: the split, the verdicts (error rate as it goes, too few
 * calls, then latency at the highest percentile both sides' samples estimate — or none, said why),
 * and the watch's bookkeeping around a fake of the functions — a pool restarting counts again from
 * zero, latency timed over the window only, a split changed by hand cancels, a promotion keeps the
 * split before as what a rollback returns to.
 */
import { describe, expect, it } from 'vitest';

import type { Canary, CanaryObserved } from '../../sdk/api/index.js';
import type { FunctionRecord } from '../registry/index.js';
import type { CanaryHost, Counted } from './canary.js';
import { CanaryWatch, canarySplit, judge, newCanary, samplesFor } from './canary.js';
import { percentilesOf } from './canary-judge.js';

const canary = (o: Partial<Canary> = {}): Canary => ({
  ...newCanary(2, { 1: 100 }, { percent: 10, windowMs: 60_000 }, Date.parse('2026-12-04T00:00:00Z')),
  ...o,
});
/** Durations in ms as the routed calls' ring holds them (µs). */
const us = (ms: number[]) => Float64Array.from(ms, (m) => m * 1000);
/** `n` calls timed at `ms` each, but for the slowest few given. */
const timed = (n: number, ms: number, slowest: number[] = []) =>
  us([...Array.from({ length: n - slowest.length }, () => ms), ...slowest]);
/** One side: its calls, failures and the latency of those timed (none: no latency sampled). */
const seen = (calls: number, failed: number, durations: Float64Array = new Float64Array(0)): CanaryObserved => ({
  calls,
  failed,
  ...percentilesOf(durations),
});

describe('canarySplit', () => {
  it('gives the canary its percent and the serving versions the rest in their proportions', () => {
    expect(canarySplit({ 1: 100 }, 2, 10)).toEqual({ 1: 90, 2: 10 });
    expect(canarySplit({ 1: 50, 3: 150 }, 4, 20)).toEqual({ 1: 20, 3: 60, 4: 20 });
    expect(canarySplit({ 1: 1 }, 2, 33)).toEqual({ 1: 67, 2: 33 });
  });
});

describe('percentilesOf', () => {
  it('gives a percentile only with 10 calls above it: p50 from 20 calls, p90 from 100, p99 from 1000', () => {
    expect([samplesFor('p50'), samplesFor('p90'), samplesFor('p99')]).toEqual([20, 100, 1000]);
    // 1..n ms: the nearest rank ⌈p·n⌉ is the value itself, and n − ⌈p·n⌉ calls lie above it.
    const ramp = (n: number) => percentilesOf(us(Array.from({ length: n }, (_, i) => i + 1)));
    expect(ramp(19)).toEqual({ sampled: 19, p50Ms: null, p90Ms: null, p99Ms: null });
    expect(ramp(20)).toEqual({ sampled: 20, p50Ms: 10, p90Ms: null, p99Ms: null });
    expect(ramp(99)).toMatchObject({ p50Ms: 50, p90Ms: null });
    expect(ramp(100)).toEqual({ sampled: 100, p50Ms: 50, p90Ms: 90, p99Ms: null });
    expect(ramp(999).p99Ms).toBeNull();
    expect(ramp(1000)).toEqual({ sampled: 1000, p50Ms: 500, p90Ms: 900, p99Ms: 990 });
  });
});

describe('judge', () => {
  it('rolls back as soon as the error rate is over the limit, with enough calls', () => {
    // 3 of 10 = 30% against 1 of 100 = 1%: 29 points over 5.
    expect(judge(canary(), seen(10, 3), seen(100, 1), false)).toEqual({
      verdict: 'rollback',
      cause: 'errors',
      reason: 'v2 failed 3 of 10 calls (30.0%) against 1.0% on v1: more than 5 points over',
    });
    // 9 calls, all failed: not judged before minCalls.
    expect(judge(canary(), seen(9, 9), seen(100, 0), false)).toEqual({ verdict: 'watch' });
    // 1 of 20 = 5% against 0%: 5 points is not more than 5.
    expect(judge(canary(), seen(20, 1), seen(100, 0), false)).toEqual({ verdict: 'watch' });
    // The serving version fails as often: no regression.
    expect(judge(canary(), seen(20, 10), seen(200, 100), false)).toEqual({ verdict: 'watch' });
    // maxErrorRate 0: any failure over the serving rate.
    expect(judge(canary({ maxErrorRate: 0 }), seen(20, 1), seen(100, 0), false).verdict).toBe('rollback');
    // With the latency rule off, errors are still judged.
    expect(judge(canary({ maxP99Ratio: 'off' }), seen(10, 3), seen(100, 1), false).verdict).toBe('rollback');
  });

  it('at the end, rolls back with too few calls to judge', () => {
    expect(judge(canary(), seen(4, 0), seen(40, 0), true)).toEqual({
      verdict: 'rollback',
      cause: 'calls',
      reason: 'only 4 calls reached v2 in 60 s, fewer than the 10 it needs to be judged',
    });
  });

  it("promotes the issue's healthy version: 31 calls, one slow, against a p50 and not the slowest call", () => {
    // The report: `p99 152.53 ms against 64.05 ms … errors 0.0% over 31 calls` rolled back. With 31
    // calls the old "p99" was the slowest; now both sides are compared at their p50.
    const verdict = judge(canary(), seen(31, 0, timed(31, 60, [152.53])), seen(279, 0, timed(279, 60, [64.05])), true);
    expect(verdict).toEqual({
      verdict: 'promote',
      percentile: 'p50',
      reason: 'errors 0.0% over 31 calls against 0.0% on v1; p50 60 ms against 60 ms',
    });
  });

  it('compares the highest percentile both sides estimate, and rolls back a slower canary at it', () => {
    const slow = (n: number) => seen(n, 0, timed(n, 100));
    const fast = (n: number) => seen(n, 0, timed(n, 50));
    expect(judge(canary(), slow(1000), fast(9000), true)).toEqual({
      verdict: 'rollback',
      cause: 'latency',
      percentile: 'p99',
      reason: "v2's p99 100 ms against 50 ms on v1 is over 1.5× (errors 0.0% over 1000 calls against 0.0% on v1)",
    });
    // The canary's 999 calls reach only a p90, though the serving side's 9000 reach a p99.
    expect(judge(canary(), slow(999), fast(9000), true)).toMatchObject({ verdict: 'rollback', percentile: 'p90' });
    // The serving side's 99 calls reach only a p50.
    expect(judge(canary(), slow(5000), fast(99), true)).toMatchObject({ verdict: 'rollback', percentile: 'p50' });
    // A p90 under the ratio: promoted, and said at which percentile.
    expect(judge(canary(), seen(150, 0, timed(150, 70, [400])), fast(2000), true)).toEqual({
      verdict: 'promote',
      percentile: 'p90',
      reason: 'errors 0.0% over 150 calls against 0.0% on v1; p90 70 ms against 50 ms',
    });
    // 2.9 ms against 1 ms: 2.9× but under the 2 ms floor over it.
    expect(judge(canary(), seen(50, 0, timed(50, 2.9)), seen(450, 0, timed(450, 1)), true).verdict).toBe('promote');
  });

  it('does not judge latency below 20 timed calls on either side, and says so', () => {
    // A canary 10× slower, but 19 timed calls: judged on its errors only.
    expect(judge(canary(), seen(19, 0, timed(19, 500)), seen(300, 0, timed(300, 50)), true)).toEqual({
      verdict: 'promote',
      percentile: null,
      reason:
        'errors 0.0% over 19 calls against 0.0% on v1; latency not judged: too few calls timed on this node (v2 19) for a p50, which needs 20 on each side',
    });
    // Calls counted on other nodes (cluster mode) but none timed on this one.
    expect(judge(canary(), seen(50, 0), seen(15, 0, timed(15, 9)), true)).toMatchObject({
      verdict: 'promote',
      reason: expect.stringMatching(/latency not judged: too few calls timed on this node \(v2 0, v1 15\)/),
    });
  });

  it('does not judge latency when its limit is off (--canary-max-p99 off)', () => {
    expect(
      judge(canary({ maxP99Ratio: 'off' }), seen(5000, 0, timed(5000, 900)), seen(9000, 0, timed(9000, 50)), true),
    ).toEqual({
      verdict: 'promote',
      percentile: null,
      reason: 'errors 0.0% over 5000 calls against 0.0% on v1; latency not judged: its limit is off',
    });
  });
});

/** A function's record, counters and each version's answered calls' durations (ms), by hand. */
function fakeHost(record: FunctionRecord) {
  const counts = new Map<number, Counted>([
    [1, { success: 0, failure: 0 }],
    [2, { success: 0, failure: 0 }],
  ]);
  const durations = new Map<number, number[]>([
    [1, []],
    [2, []],
  ]);
  /** Answered calls of `version` taking these durations, counted and timed. */
  const answer = (version: number, ms: number[]) => {
    durations.get(version)!.push(...ms);
    const n = counts.get(version)!;
    counts.set(version, { ...n, success: n.success + ms.length });
  };
  const traffic: { split: Record<string, number>; previous?: Record<string, number> }[] = [];
  const notes: string[] = [];
  const host: CanaryHost = {
    record: async () => structuredClone(record),
    setCanary: async (_name, c) => {
      record.canary = c;
    },
    setTraffic: async (_name, split, previous) => {
      traffic.push({ split, previous });
      record.traffic = split;
    },
    refresh: async () => {},
    counts: (_name, version) => new Map([['local', counts.get(version)!]]),
    latencies: (_name, version, since) => {
      const kept = us(durations.get(version)!.slice(since));
      return { us: kept, at: new Float64Array(kept.length), dropped: false };
    },
    note: (_name, _version, level, msg) => notes.push(`${level} ${msg}`),
  };
  return { host, counts, answer, traffic, notes };
}

const recordWith = (c: Canary): FunctionRecord => ({
  name: 'f',
  createdAt: c.startedAt,
  versions: [],
  traffic: { ...c.split },
  canary: c,
});

describe('CanaryWatch', () => {
  it('counts from the start, again from 0 after a pool restarts, and rolls back to the split before', async () => {
    const c = canary({ startedAt: new Date().toISOString() });
    const record = recordWith(c);
    const { host, counts, traffic, notes } = fakeHost(record);
    counts.set(1, { success: 500, failure: 0 });
    counts.set(2, { success: 1, failure: 0 }); // the smoke request, before the watch
    const watch = new CanaryWatch(host, 3_600_000);
    await watch.watch('f', c);
    counts.set(2, { success: 5, failure: 2 }); // +4 answered, +2 failed
    await watch.tick();
    expect(watch.observed('f')).toEqual({ canary: seen(6, 2), baseline: seen(0, 0) });
    counts.set(2, { success: 1, failure: 3 }); // restarted: its counters began again
    await watch.tick();
    // 10 calls, 5 failed, against none on v1: rolled back.
    expect(traffic).toEqual([{ split: { 1: 100 }, previous: { 1: 90, 2: 10 } }]);
    expect(record.canary).toMatchObject({
      state: 'rolled-back',
      reason: 'v2 failed 5 of 10 calls (50.0%) against 0.0% on v1: more than 5 points over',
      cause: 'errors',
      observed: { canary: seen(10, 5) },
    });
    expect(notes.at(-1)).toMatch(/^warn canary: rolled back to v1 100%: v2 failed 5 of 10/);
    expect(watch.observed('f')).toBeUndefined();
    watch.close();
  });

  it('promotes at the end of the window, a rollback then returning to the versions before', async () => {
    const c = canary({ startedAt: new Date().toISOString() });
    const record = recordWith(c);
    const { host, counts, traffic } = fakeHost(record);
    const watch = new CanaryWatch(host, 3_600_000);
    await watch.watch('f', c, Date.now() - 1);
    counts.set(2, { success: 12, failure: 0 });
    await watch.tick();
    expect(traffic).toEqual([{ split: { 2: 100 }, previous: { 1: 100 } }]);
    expect(record.canary?.state).toBe('promoted');
    watch.close();
  });

  it("judges latency over the window's calls only, both sides' at the same percentile", async () => {
    const c = canary({ startedAt: new Date().toISOString() });
    const record = recordWith(c);
    const { host, answer, traffic, notes } = fakeHost(record);
    // Before the canary, v1 answered 30 slow calls: they are not the window's.
    answer(
      1,
      Array.from({ length: 30 }, () => 900),
    );
    const watch = new CanaryWatch(host, 3_600_000);
    await watch.watch('f', c, Date.now() - 1);
    answer(1, [...Array.from({ length: 299 }, () => 40), 950]);
    answer(2, [...Array.from({ length: 39 }, () => 41), 1200]);
    await watch.tick();
    expect(traffic).toEqual([{ split: { 2: 100 }, previous: { 1: 100 } }]);
    expect(record.canary).toMatchObject({
      state: 'promoted',
      percentile: 'p50',
      reason: 'errors 0.0% over 40 calls against 0.0% on v1; p50 41 ms against 40 ms',
      observed: {
        canary: { calls: 40, sampled: 40, p50Ms: 41, p90Ms: null, p99Ms: null },
        baseline: { calls: 300, sampled: 300, p50Ms: 40, p90Ms: 40, p99Ms: null },
      },
    });
    expect(notes.at(-1)).toBe(`info canary: promoted v2 to 100%: ${record.canary?.reason}`);
    watch.close();
  });

  it('stops, cancelled, when the split is changed by hand, and leaves that split', async () => {
    const c = canary({ startedAt: new Date().toISOString() });
    const record = recordWith(c);
    const { host, traffic } = fakeHost(record);
    const watch = new CanaryWatch(host, 3_600_000);
    await watch.watch('f', c);
    record.traffic = { 1: 50, 2: 50 };
    await watch.tick();
    expect(traffic).toEqual([]);
    expect(record.canary).toMatchObject({ state: 'cancelled', reason: expect.stringMatching(/traffic was changed/) });
    expect(record.traffic).toEqual({ 1: 50, 2: 50 });
    watch.close();
  });

  it('watches a canary again after a restart, for a whole window', async () => {
    const c = canary({ startedAt: '2026-01-01T00:00:00.000Z' });
    const record = recordWith(c);
    const { host, counts, traffic, notes } = fakeHost(record);
    const watch = new CanaryWatch(host, 3_600_000);
    await watch.resume([record]);
    expect(notes).toEqual(['info canary: the node restarted; watching v2 again for 60 s']);
    counts.set(2, { success: 3, failure: 0 });
    await watch.tick();
    // Long past its first window, but watched anew: 3 calls are not judged yet.
    expect(traffic).toEqual([]);
    expect(record.canary?.state).toBe('watching');
    watch.close();
  });

  it('in a cluster, watches only while it holds the lease, and gives it back once decided', async () => {
    const c = canary({ startedAt: new Date().toISOString() });
    const record = recordWith(c);
    const { host, counts, traffic } = fakeHost(record);
    let holder = 'other';
    const released: string[] = [];
    host.hold = async () => holder === 'me';
    host.release = async (name) => {
      released.push(name);
    };
    const watch = new CanaryWatch(host, 3_600_000);
    // Another node watches it: not here.
    expect(await watch.watch('f', c)).toBe(false);
    await watch.resume([record]);
    expect(watch.observed('f')).toBeUndefined();
    // Its lease expired (that node died): this one takes it over.
    holder = 'me';
    await watch.resume([record]);
    expect(watch.observed('f')).toBeDefined();
    counts.set(2, { success: 0, failure: 10 });
    await watch.tick();
    expect(traffic).toEqual([{ split: { 1: 100 }, previous: { 1: 90, 2: 10 } }]);
    expect(released).toEqual(['f']);
    // A watch whose lease another node took stops looking (and decides nothing).
    const next = canary({ startedAt: new Date(Date.now() + 1).toISOString() });
    const second = recordWith(next);
    const other = fakeHost(second);
    other.host.hold = async () => holder === 'me';
    const watch2 = new CanaryWatch(other.host, 3_600_000);
    expect(await watch2.watch('f', next)).toBe(true);
    holder = 'other';
    other.counts.set(2, { success: 0, failure: 10 });
    await watch2.tick();
    expect(watch2.observed('f')).toBeUndefined();
    expect(other.traffic).toEqual([]);
    expect(second.canary?.state).toBe('watching');
    watch.close();
    watch2.close();
  });
});
