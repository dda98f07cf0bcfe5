/**
 * Calls over fake pools and a fake cluster: the version a request goes to, the errors in a function
 * URL's words, the version a failed call is marked with, and where a call runs in cluster mode —
 * here when the pool here is warm or loading, for a sequence, or when this node wins the lease;
 * else forwarded.
 */
import { describe, expect, it } from 'vitest';

import { InferenceError } from '../../sdk/errors.js';
import type { Forwarded } from '../cluster/index.js';
import { callerError } from '../errors/index.js';
import { Calls } from './calls.js';
import { RecordCache } from './records.js';
import { FakePools, MemoryRegistry, specOf } from './test-fakes.js';

const body = new TextEncoder().encode('{"x":[1,2,3,4]}');
const request = { body, contentType: 'application/json' };

/** Function `f` with v1 and v2 ready, all traffic on v1; a fake cluster when `cluster` is given. */
async function setUp(cluster?: { warm: boolean; wins: boolean }) {
  const registry = new MemoryRegistry();
  for (const v of [1, 2]) {
    await registry.createVersion(specOf('f'), { model: 'a'.repeat(64) });
    await registry.setStatus('f', v, 'ready');
  }
  await registry.setTraffic('f', { 1: 100 });
  const pools = new FakePools();
  const unloaded = new Set(['f']);
  const forwarded: { version: number; call: Forwarded['kind']; deadline?: number }[] = [];
  const fake = cluster && {
    warmElsewhere: () => cluster.warm,
    claimColdStart: async () => cluster.wins,
    forward: async (_name: string, version: number, call: Forwarded, deadline?: number) => {
      forwarded.push({ version, call: call.kind, deadline });
      return call.kind === 'infer'
        ? { kind: 'infer' as const, tensors: call.tensors }
        : { kind: 'invoke' as const, body: call.body, contentType: 'text/plain', version };
    },
  };
  const calls = new Calls({ records: new RecordCache(registry), pools, unloaded, cluster: fake });
  return { calls, pools, unloaded, forwarded };
}

describe('Calls', () => {
  it('sends a request to the version the traffic picks, loads its pool, and serves an unloaded function again', async () => {
    const { calls, pools, unloaded } = await setUp();
    expect(await calls.invoke('f', undefined, request)).toEqual({ ...request, version: 1 });
    expect(await calls.invoke('f', 2, request)).toEqual({ ...request, version: 2 });
    expect(pools.asked).toEqual(['warm f@1', 'start f@1', 'warm f@2', 'start f@2']);
    expect(unloaded.has('f')).toBe(false);
    const { outputs, version } = await calls.infer('f', undefined, {});
    expect(outputs).toEqual({});
    expect(version.version).toBe(1);
  });

  it("says an unknown function or version in a function URL's words, and in Triton's for raw tensors", async () => {
    const { calls } = await setUp();
    await expect(calls.invoke('g', undefined, request)).rejects.toMatchObject({
      code: 'FUNCTION_NOT_FOUND',
      message: "no function named 'g' on this node (hearth ls lists them)",
    });
    await expect(calls.invoke('f', 7, request)).rejects.toMatchObject({
      code: 'VERSION_NOT_FOUND',
      message: "function 'f' has no version 7 (hearth versions f lists them)",
    });
    await expect(calls.infer('g', undefined, {})).rejects.toThrow("Request for unknown model: 'g' is not found");
  });

  it('marks a failed call with the version it failed on', async () => {
    const { calls, pools } = await setUp();
    pools.prepare = (pool) => {
      pool.callError = new InferenceError('shape mismatch');
    };
    const error = await calls.invoke('f', 2, request).catch((e: unknown) => e);
    expect(callerError(error)).toEqual({ code: 'INFERENCE_FAILED', message: 'shape mismatch', version: 2 });
    expect(callerError(await calls.infer('f', undefined, {}).catch((e: unknown) => e)).version).toBe(1);
  });

  it('forwards to the node that holds the version warm, with the deadline, unless the pool here is warm or loading', async () => {
    const { calls, pools, forwarded } = await setUp({ warm: true, wins: true });
    expect(await calls.invoke('f', 1, request, { deadline: 1234 })).toEqual({
      body,
      contentType: 'text/plain',
      version: 1,
    });
    expect(forwarded).toEqual([{ version: 1, call: 'invoke', deadline: 1234 }]);
    expect(pools.asked).toEqual([]);
    expect(await calls.elsewhere('f', (await calls.resolve('f', 1))!)).toBe(true);
    for (const state of ['warm', 'loading'] as const) {
      pools.obtain('f', await calls.resolve('f', 1));
      pools.fake('f', 1)!.state = state;
      await calls.infer('f', 1, {});
      expect(forwarded).toHaveLength(1);
    }
  });

  it("keeps a sequence's requests here, and loads here when this node wins the cold-start lease", async () => {
    const warm = await setUp({ warm: true, wins: false });
    await warm.calls.invoke('f', 1, request, { sequence: { id: 7n, start: true, end: false } });
    expect(warm.forwarded).toEqual([]);
    expect(warm.pools.asked).toEqual(['warm f@1', 'start f@1']);
    const cold = await setUp({ warm: false, wins: true });
    await cold.calls.invoke('f', 1, request);
    expect(cold.forwarded).toEqual([]);
    const lost = await setUp({ warm: false, wins: false });
    await lost.calls.invoke('f', 1, request);
    expect(lost.forwarded).toEqual([{ version: 1, call: 'invoke' }]);
  });

  it('never places a call elsewhere outside a cluster', async () => {
    const { calls } = await setUp();
    expect(await calls.elsewhere('f', await calls.resolve('f', 1))).toBe(false);
  });

  it('refuses a reply of the wrong kind from another node', async () => {
    const { calls } = await setUp({ warm: true, wins: false });
    const mixed = new Calls({
      records: { resolve: (name, version) => calls.resolve(name, version) },
      pools: new FakePools(),
      unloaded: new Set(),
      cluster: {
        warmElsewhere: () => true,
        claimColdStart: async () => false,
        forward: async () => ({ kind: 'infer', tensors: {} }),
      },
    });
    await expect(mixed.invoke('f', 1, request)).rejects.toMatchObject({
      code: 'UNAVAILABLE',
      message: 'a node answered an invoke with tensors',
    });
  });
});
