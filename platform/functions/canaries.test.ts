/**
 * The canary's glue over a registry in memory and fake pools: a canary started is written, sent its
 * share and watched; the watch counts this node's pools and (cluster mode) the other nodes', under
 * the lease; a rollback marks the version in the record; a canary nobody watches is taken up.
 */
import { setTimeout as sleep } from 'node:timers/promises';

import { describe, expect, it } from 'vitest';

import { InferenceError } from '../../sdk/errors.js';
import type { RoutedBrief } from '../cluster/index.js';
import { Calls } from './calls.js';
import type { CanariesParts } from './canaries.js';
import { Canaries } from './canaries.js';
import { FunctionLogs } from './function-logs.js';
import { RecordCache } from './records.js';
import { RoutedCalls } from './routed.js';
import { FakePools, MemoryRegistry, specOf } from './test-fakes.js';
import { TrafficControl } from './traffic.js';

const REQUEST = { percent: 10, windowMs: 60_000 };
const NOTHING_SEEN = { calls: 0, failed: 0, sampled: 0, p50Ms: null, p90Ms: null, p99Ms: null };

/** `f`: v1 serving all the traffic, v2 ready and loaded here. */
/**
 * Past a 1 ms window's end by the wall clock the canary's deadline is read on: the routed calls'
 * clock is the test's, but the deadline is Date.now()'s, and a fast machine counts a window's calls
 * within the same millisecond it started in. Sleeping only ever makes it later, never too early.
 */
const pastWindow = () => sleep(5);

async function setUp(cluster?: CanariesParts['cluster']) {
  const registry = new MemoryRegistry();
  for (const v of [1, 2]) {
    await registry.createVersion(specOf('f'), { model: 'a'.repeat(64) });
    await registry.setStatus('f', v, 'ready');
  }
  await registry.setTraffic('f', { 1: 100 });
  registry.writes.length = 0;
  const records = new RecordCache(registry);
  const pools = new FakePools();
  for (const v of (await registry.get('f'))!.versions) pools.obtain('f', v);
  const logs = new FunctionLogs();
  const traffic = new TrafficControl({ registry, records, pools });
  const clock = { ms: 0 };
  const routed = new RoutedCalls(() => clock.ms);
  const calls = new Calls({ records, pools, unloaded: new Set(), routed });
  const parts = { registry, records, pools, routed, traffic, logs, cluster, tickMs: 3_600_000 };
  return { registry, pools, logs, parts, routed, calls, records, clock, canaries: new Canaries(parts) };
}

describe('Canaries', () => {
  it("starts a canary: written, sent its share, watched, and told in the function's log", async () => {
    const { registry, logs, canaries } = await setUp();
    const canary = await canaries.start('f', 2, { 1: 100 }, REQUEST);
    expect(canary).toMatchObject({ version: 2, split: { 1: 90, 2: 10 }, state: 'watching' });
    expect(registry.writes).toEqual(['setCanary f watching', 'setTraffic f {"1":90,"2":10}']);
    expect(logs.recent('f').map((e) => e.msg)).toEqual([
      'canary: v2 takes 10% for 60 s against v1; it rolls back past 5 points more errors, a latency over 1.5× theirs (p99, or p90 or p50 where the calls are too few), or with fewer than 10 calls',
    ]);
    const record = (await registry.get('f'))!;
    expect(canaries.of(record)?.observed).toEqual({
      canary: NOTHING_SEEN,
      baseline: NOTHING_SEEN,
    });
    canaries.close();
    expect(canaries.of(record)).toEqual(record.canary);
  });

  it('rolls a failing canary back to the split before, and marks its version rolled back by the canary', async () => {
    const { registry, pools, logs, routed, canaries } = await setUp();
    await canaries.start('f', 2, { 1: 100 }, REQUEST);
    for (let i = 0; i < 10; i++) routed.count('f', 2, 1000, true);
    await canaries.check();
    expect(registry.writes.slice(2)).toEqual(['setTraffic f {"1":100}', 'setCanary f rolled-back']);
    const record = (await registry.get('f'))!;
    expect(record.traffic).toEqual({ 1: 100 });
    expect(record.versions.map((v) => v.rolledBackBy)).toEqual([undefined, 'canary']);
    expect(record.versions[1]!.reason).toBe(
      'its canary rolled it back: v2 failed 10 of 10 calls (100.0%) against 0.0% on v1: more than 5 points over',
    );
    expect(logs.recent('f', { level: 'warn' }).map((e) => e.msg)).toEqual([
      'canary: rolled back to v1 100%: v2 failed 10 of 10 calls (100.0%) against 0.0% on v1: more than 5 points over',
    ]);
    expect(pools.asked).toContain('drain f@2');
    canaries.close();
  });

  it("times both sides' routed calls over the window: a slower canary rolled back at the p90 they reach", async () => {
    const { registry, routed, canaries } = await setUp();
    // v1's slow calls before the canary are not the window's.
    for (let i = 0; i < 500; i++) routed.count('f', 1, 900_000, false);
    // A window of 1 ms: decided at the next look.
    await canaries.start('f', 2, { 1: 100 }, { ...REQUEST, windowMs: 1 });
    for (let i = 0; i < 900; i++) routed.count('f', 1, 20_000, false);
    for (let i = 0; i < 100; i++) routed.count('f', 2, 60_000, false);
    await pastWindow();
    await canaries.check();
    const record = (await registry.get('f'))!;
    expect(record.traffic).toEqual({ 1: 100 });
    expect(record.canary).toMatchObject({
      state: 'rolled-back',
      cause: 'latency',
      percentile: 'p90',
      reason: "v2's p90 60 ms against 20 ms on v1 is over 1.5× (errors 0.0% over 100 calls against 0.0% on v1)",
      observed: { canary: { sampled: 100, p90Ms: 60 }, baseline: { sampled: 900, p90Ms: 20, p99Ms: null } },
    });
    expect(record.versions[1]).toMatchObject({
      rolledBackBy: 'canary',
      reason: `its canary rolled it back: ${record.canary?.reason}`,
    });
    canaries.close();
  });

  it('compares both sides over the same span of time when the baseline had more calls than it keeps', async () => {
    const { registry, routed, canaries, clock } = await setUp();
    await canaries.start('f', 2, { 1: 100 }, { ...REQUEST, windowMs: 1 });
    // The window's first half slow for every version, its second fast: at 10%, v1's 1024 latest
    // calls are all of the second half, and v2's 333 span both. Over each side's own sample, v2's
    // p90 was the slow half's (100 ms against 10: rolled back); over the span both cover, the same.
    clock.ms = 1000;
    for (let i = 0; i < 1500; i++) routed.count('f', 1, 100_000, false);
    for (let i = 0; i < 167; i++) routed.count('f', 2, 100_000, false);
    clock.ms = 2000;
    for (let i = 0; i < 1500; i++) routed.count('f', 1, 10_000, false);
    for (let i = 0; i < 166; i++) routed.count('f', 2, 10_000, false);
    await pastWindow();
    await canaries.check();
    const record = (await registry.get('f'))!;
    expect(record.canary).toMatchObject({
      state: 'promoted',
      percentile: 'p90',
      observed: { canary: { sampled: 166, p90Ms: 10 }, baseline: { sampled: 1024, p90Ms: 10 } },
    });
    expect(record.traffic).toEqual({ 2: 100 });
    canaries.close();
  });

  it("counts the other nodes' calls in a cluster, watching under the lease it gives back once decided", async () => {
    const released: string[] = [];
    const theirs: RoutedBrief = { node: 'b', function: 'f', version: 2, success: 0, failure: 0 };
    const { registry, canaries } = await setUp({
      nodeId: 'a',
      routed: () => [{ ...theirs, node: 'a', failure: 99 }, theirs],
      holdCanary: async () => true,
      releaseCanary: async (name) => {
        released.push(name);
      },
    });
    await canaries.start('f', 2, { 1: 100 }, REQUEST);
    theirs.failure = 12;
    await canaries.check();
    expect((await registry.get('f'))!.canary).toMatchObject({
      state: 'rolled-back',
      observed: { canary: { calls: 12, failed: 12 } },
    });
    expect(released).toEqual(['f']);
    canaries.close();
  });

  it('judges only the calls the traffic split sent: calls pinned to either version count on neither side', async () => {
    const { registry, pools, records, calls, canaries } = await setUp();
    await canaries.start('f', 2, { 1: 100 }, REQUEST);
    records.forget('f');
    for (const v of [1, 2]) pools.fake('f', v)!.callError = new InferenceError('boom');
    const pinned = (v: number) => calls.invoke('f', v, { body: new Uint8Array(1), contentType: 'text/plain' });
    // Fifteen failing calls pinned to the canary (another key's /fn/f/versions/2), five to the baseline.
    for (let i = 0; i < 15; i++) await expect(pinned(2)).rejects.toThrow('boom');
    for (let i = 0; i < 5; i++) await expect(pinned(1)).rejects.toThrow('boom');
    await canaries.check();
    const record = (await registry.get('f'))!;
    expect(record.canary?.state).toBe('watching');
    expect(record.traffic).toEqual({ 1: 90, 2: 10 });
    expect(canaries.of(record)?.observed).toEqual({
      canary: NOTHING_SEEN,
      baseline: NOTHING_SEEN,
    });
    // Calls the split routes count, on the side it picked.
    const routedCalls = 40;
    for (let i = 0; i < routedCalls; i++) await expect(calls.infer('f', undefined, {})).rejects.toThrow('boom');
    await canaries.check();
    const after = (await registry.get('f'))!;
    const seen = after.canary?.observed ?? canaries.of(after)!.observed!;
    expect(seen.canary.calls + seen.baseline.calls).toBe(routedCalls);
    expect(seen.canary.failed).toBe(seen.canary.calls);
    expect(seen.baseline.failed).toBe(seen.baseline.calls);
    canaries.close();
  });

  it('watches again the canaries nobody watches, read from the registry', async () => {
    const first = await setUp();
    await first.canaries.start('f', 2, { 1: 100 }, REQUEST);
    first.canaries.close();
    const restarted = new Canaries(first.parts);
    await restarted.resume();
    expect(first.logs.recent('f').at(-1)?.msg).toBe('canary: the node restarted; watching v2 again for 60 s');
    expect(restarted.of((await first.registry.get('f'))!)?.observed).toBeDefined();
    restarted.close();
  });
});
