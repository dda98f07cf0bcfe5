/**
 * The canary's rules on hand-counted calls: the split, the verdicts (error rate as it goes, too few
 * calls and p99 at the end), and the watch's bookkeeping around a fake of the functions — a pool
 * restarting counts again from zero, a split changed by hand cancels, a promotion keeps the split
 * before as what a rollback returns to.
 */
import { describe, expect, it } from 'vitest';

import type { Canary } from '../../sdk/api/index.js';
import type { FunctionRecord } from '../registry/index.js';
import type { CanaryHost, Counted } from './canary.js';
import { CanaryWatch, canarySplit, judge, newCanary } from './canary.js';

const canary = (o: Partial<Canary> = {}): Canary => ({
  ...newCanary(2, { 1: 100 }, { percent: 10, windowMs: 60_000 }, Date.parse('2026-12-04T00:00:00Z')),
  ...o,
});
const seen = (calls: number, failed: number, p99Ms: number | null = 10) => ({ calls, failed, p99Ms });

describe('canarySplit', () => {
  it('gives the canary its percent and the serving versions the rest in their proportions', () => {
    expect(canarySplit({ 1: 100 }, 2, 10)).toEqual({ 1: 90, 2: 10 });
    expect(canarySplit({ 1: 50, 3: 150 }, 4, 20)).toEqual({ 1: 20, 3: 60, 4: 20 });
    expect(canarySplit({ 1: 1 }, 2, 33)).toEqual({ 1: 67, 2: 33 });
  });
});

describe('judge', () => {
  it('rolls back as soon as the error rate is over the limit, with enough calls', () => {
    // 3 of 10 = 30% against 1 of 100 = 1%: 29 points over 5.
    expect(judge(canary(), seen(10, 3), seen(100, 1), false)).toEqual({
      verdict: 'rollback',
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
  });

  it('at the end: too few calls roll back, a p99 over the ratio and the floor rolls back, else promotes', () => {
    expect(judge(canary(), seen(4, 0), seen(40, 0), true)).toEqual({
      verdict: 'rollback',
      reason: 'only 4 calls reached v2 in 60 s, fewer than the 10 it needs to be judged',
    });
    // 31 ms against 20 ms: over 1.5× (30) and 11 ms over.
    expect(judge(canary(), seen(50, 0, 31), seen(450, 0, 20), true)).toEqual({
      verdict: 'rollback',
      reason: "v2's p99 31 ms against 20 ms on v1: over 1.5× (errors 0.0% over 50 calls against 0.0% on v1)",
    });
    // 2.9 ms against 1 ms: 2.9× but under the 2 ms floor over it.
    expect(judge(canary(), seen(50, 0, 2.9), seen(450, 0, 1), true).verdict).toBe('promote');
    expect(judge(canary(), seen(50, 1, 12), seen(450, 4, 10), true)).toEqual({
      verdict: 'promote',
      reason: 'errors 2.0% over 50 calls against 0.9% on v1; p99 12 ms against 10 ms',
    });
    expect(judge(canary(), seen(50, 0, null), seen(450, 0, 10), true)).toEqual({
      verdict: 'promote',
      reason: 'errors 0.0% over 50 calls against 0.0% on v1; p99 not compared (no v2 calls sampled on this node)',
    });
  });
});

/** A function's record and counters, by hand. */
function fakeHost(record: FunctionRecord) {
  const counts = new Map<number, Counted>([
    [1, { success: 0, failure: 0 }],
    [2, { success: 0, failure: 0 }],
  ]);
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
    p99: () => 5,
    note: (_name, _version, level, msg) => notes.push(`${level} ${msg}`),
  };
  return { host, counts, traffic, notes };
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
    expect(watch.observed('f')).toEqual({ canary: seen(6, 2, 5), baseline: seen(0, 0, 5) });
    counts.set(2, { success: 1, failure: 3 }); // restarted: its counters began again
    await watch.tick();
    // 10 calls, 5 failed, against none on v1: rolled back.
    expect(traffic).toEqual([{ split: { 1: 100 }, previous: { 1: 90, 2: 10 } }]);
    expect(record.canary).toMatchObject({
      state: 'rolled-back',
      reason: 'v2 failed 5 of 10 calls (50.0%) against 0.0% on v1: more than 5 points over',
      observed: { canary: seen(10, 5, 5) },
    });
    expect(notes.at(-1)).toMatch(/^warn canary: rolled back to \{"1":100\}: v2 failed 5 of 10/);
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
