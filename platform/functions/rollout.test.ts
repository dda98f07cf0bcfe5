/**
 * Rollout over a registry in memory, fake pools, artifacts and calls: the order of a deploy's writes
 * (created, ready, traffic), the smoke request before any traffic moves, a failed load or smoke
 * request recorded as failed, what is refused before a version exists, and the wait for a GPU node
 * (typed, its reason as it always was) with the adoption that ends it.
 */
import { describe, expect, it } from 'vitest';

import type { CallOptions } from '../../runtime/index.js';
import { InferenceError, ModelLoadError } from '../../sdk/errors.js';
import type { FunctionSpec } from '../../sdk/spec/function-spec.js';
import { newCanary } from './canary.js';
import { FunctionLogs } from './function-logs.js';
import { RecordCache } from './records.js';
import { Rollout } from './rollout.js';
import { FakePools, MemoryRegistry, specOf } from './test-fakes.js';
import { TrafficControl } from './traffic.js';

const MODEL = 'a'.repeat(64);
const WAITING = 'waiting for a node with a GPU (instances.device cuda; this node has none)';
const gpu = (name = 'f') => specOf(name, { instances: { device: 'cuda' } });

function setUp(o: { cuda?: boolean; cluster?: boolean; smokeFails?: boolean } = {}) {
  const registry = new MemoryRegistry();
  const records = new RecordCache(registry);
  const pools = new FakePools();
  const logs = new FunctionLogs();
  const smoke: { version: number; deadline?: number }[] = [];
  const leases: string[] = [];
  const notes: string[] = [];
  const note = (_o: object, msg?: string) => notes.push(msg ?? '');
  const rollout = new Rollout({
    registry,
    records,
    pools,
    logs,
    unloaded: new Set(['f']),
    log: { info: note, warn: note, error: note },
    artifacts: {
      stat: async (sha) => (sha === MODEL ? { sha256: sha, size: 1 } : undefined),
      claimants: async () => [],
      local: async () => {
        throw new Error('no example files here');
      },
    },
    calls: {
      call: async (_name, v, _call, options: CallOptions) => {
        smoke.push({ version: v.version, deadline: options.deadline });
        if (o.smokeFails) throw new InferenceError('forward failed\n  traceback');
        return { kind: 'invoke', body: new Uint8Array(), contentType: 'text/plain', version: v.version };
      },
    },
    traffic: new TrafficControl({ registry, records, pools }),
    canaries: { start: async (_name, version, serving, request) => newCanary(version, serving, request) },
    cudaAvailable: () => o.cuda ?? true,
    ...(o.cluster
      ? {
          cluster: {
            claimColdStart: async (name, version) => leases.push(`claim ${name}@${version}`) > 0,
            releaseColdStart: async (name, version) => {
              leases.push(`release ${name}@${version}`);
            },
          },
        }
      : {}),
  });
  return { registry, pools, logs, smoke, leases, notes, rollout };
}

const withExample = (spec: FunctionSpec) => ({ ...spec, example: { x: [1, 2, 3, 4] } });

describe('Rollout', () => {
  it('loads a new version, sends it its smoke request, then makes it ready and gives it the traffic', async () => {
    const { registry, pools, smoke, notes, rollout } = setUp();
    const v1 = await rollout.deploy(withExample(specOf('f')), { model: MODEL });
    expect(v1).toMatchObject({ version: 1, status: 'ready' });
    expect(registry.writes).toEqual(['createVersion f v1', 'setStatus f v1 ready', 'setTraffic f {"1":100}']);
    expect(pools.asked).toEqual(['start f@1']);
    expect(smoke).toEqual([{ version: 1, deadline: expect.any(Number) }]);
    expect(notes).toEqual(['version ready']);
    // keepTraffic: v2 is ready, the split stays on v1.
    await rollout.deploy(specOf('f'), { model: MODEL }, { keepTraffic: true });
    expect((await registry.get('f'))!.traffic).toEqual({ 1: 100 });
    expect(smoke).toHaveLength(1);
  });

  it('starts a canary on a function already serving, and takes all the traffic when none is', async () => {
    const { logs, rollout } = setUp();
    const canary = { percent: 10, windowMs: 60_000 };
    expect((await rollout.deploy(specOf('f'), { model: MODEL }, { canary })).canary).toBeUndefined();
    expect(logs.recent('f').at(-1)?.msg).toBe(
      'canary: no version served f before v1, which takes all the traffic (nothing to compare it with)',
    );
    const v2 = await rollout.deploy(specOf('f'), { model: MODEL }, { canary });
    expect(v2.canary).toMatchObject({ version: 2, baseline: { 1: 100 }, split: { 1: 90, 2: 10 } });
  });

  it('records a version that fails to load as failed with the headline, and stops its pool', async () => {
    const { registry, pools, rollout } = setUp();
    pools.prepare = (pool) => {
      pool.loadError = new ModelLoadError('not a TorchScript file\n  at torch::jit::load');
    };
    const v = await rollout.deploy(specOf('f'), { model: MODEL });
    expect(v).toMatchObject({ status: 'failed', reason: 'not a TorchScript file' });
    expect(registry.writes).toEqual(['createVersion f v1', 'setStatus f v1 failed']);
    expect(pools.asked).toEqual(['start f@1', 'stop f@1']);
  });

  it('records a version whose smoke request fails as failed, with the error in its log', async () => {
    const { registry, logs, rollout } = setUp({ smokeFails: true });
    const v = await rollout.deploy(withExample(specOf('f')), { model: MODEL });
    // The version keeps the headline; the whole message is in its log.
    expect(v.reason).toBe("the smoke request (the spec's example) failed: forward failed");
    expect(logs.recent('f', { level: 'error' }).map((e) => e.msg)).toEqual([
      'the smoke request (spec example) failed: INFERENCE_FAILED: forward failed\n  traceback',
    ]);
    expect((await registry.get('f'))!.traffic).toEqual({});
  });

  it('refuses, before a version exists, a canary with keepTraffic, an artifact not uploaded, an example without its bytes', async () => {
    const { registry, rollout } = setUp();
    const canary = { percent: 10, windowMs: 60_000 };
    await expect(rollout.deploy(specOf('f'), { model: MODEL }, { canary, keepTraffic: true })).rejects.toMatchObject({
      code: 'INVALID_INPUT',
      message: 'a canary moves traffic: send canary or keepTraffic, not both',
    });
    await expect(rollout.deploy(specOf('f'), { model: 'b'.repeat(64) })).rejects.toMatchObject({
      code: 'VERSION_NOT_FOUND',
      message: `the model artifact ${'b'.repeat(64)} has not been uploaded`,
    });
    await expect(rollout.deploy(specOf('f', { exampleFile: 'cat.png' }), { model: MODEL })).rejects.toThrow(
      'exampleFile cat.png needs its bytes uploaded as artifacts.example (hearth deploy does it)',
    );
    await expect(rollout.deploy(specOf('f'), { model: MODEL, example: MODEL })).rejects.toThrow(
      'artifacts.example is the exampleFile of a spec that names none',
    );
    expect(registry.writes).toEqual([]);
  });

  it('refuses a GPU version on a node without one, alone or for a canary', async () => {
    const { registry, rollout } = setUp({ cuda: false });
    await expect(rollout.deploy(gpu(), { model: MODEL })).rejects.toThrow(
      'f: instances.device is "cuda" (a KIND_GPU instance group) but this node has no CUDA device; run it on the CPU with `hearth deploy --device cpu` (or instances.device: cpu), or deploy to a node with a GPU',
    );
    const clustered = setUp({ cuda: false, cluster: true });
    await expect(
      clustered.rollout.deploy(gpu(), { model: MODEL }, { canary: { percent: 5, windowMs: 1000 } }),
    ).rejects.toThrow(/^f: a canary is watched by the node that loads the version/);
    expect([...registry.writes, ...clustered.registry.writes]).toEqual([]);
  });

  it('leaves a GPU version waiting for a GPU node in a cluster: typed state, the reason as before', async () => {
    const { registry, pools, notes, rollout } = setUp({ cuda: false, cluster: true });
    const v = await rollout.deploy(gpu(), { model: MODEL }, { keepTraffic: true });
    const reason = `${WAITING}; traffic stays where it is`;
    expect(v).toMatchObject({ status: 'pending', reason, waitsFor: 'gpu', keepTraffic: true });
    expect((await registry.get('f'))!.versions[0]).toMatchObject({ reason, waitsFor: 'gpu', keepTraffic: true });
    expect(registry.writes).toEqual(['createVersion f v1', 'setStatus f v1 pending']);
    expect(pools.asked).toEqual([]);
    expect(notes).toEqual(['version waits for a node with a GPU']);
    const moving = await rollout.deploy(gpu(), { model: MODEL });
    expect(moving).toMatchObject({ reason: WAITING, waitsFor: 'gpu' });
    expect(moving).not.toHaveProperty('keepTraffic');
  });

  it('adopts on a GPU node the versions that wait for one, under the lease, moving traffic unless kept', async () => {
    const waiting = setUp({ cuda: false, cluster: true });
    await waiting.registry.createVersion(specOf('f'), { model: MODEL });
    await waiting.registry.setStatus('f', 1, 'ready');
    await waiting.registry.setTraffic('f', { 1: 100 });
    await waiting.rollout.deploy(gpu(), { model: MODEL }, { keepTraffic: true });
    await waiting.rollout.deploy(gpu(), { model: MODEL });
    await waiting.rollout.adoptWaiting();
    expect(waiting.leases).toEqual([]);
    // The same registry seen by a node with a GPU.
    const adopter = setUp({ cuda: true, cluster: true });
    for (const v of (await waiting.registry.get('f'))!.versions) {
      await adopter.registry.createVersion(v.spec, v.artifacts);
      await adopter.registry.setStatus('f', v.version, v.status, v.reason, {
        waitsFor: v.waitsFor,
        keepTraffic: v.keepTraffic,
      });
    }
    await adopter.registry.setTraffic('f', { 1: 100 });
    adopter.registry.writes.length = 0;
    await adopter.rollout.adoptWaiting();
    expect(adopter.leases).toEqual(['claim f@2', 'release f@2', 'claim f@3', 'release f@3']);
    expect(adopter.registry.writes).toEqual(['setStatus f v2 ready', 'setStatus f v3 ready', 'setTraffic f {"3":100}']);
    expect((await adopter.registry.get('f'))!.versions[1]).not.toHaveProperty('waitsFor');
    expect(adopter.notes).toEqual([
      'adopted a version that waited for a GPU',
      'adopted a version that waited for a GPU',
    ]);
  });
});
