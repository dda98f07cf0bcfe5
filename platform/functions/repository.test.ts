/**
 * Triton's repository over a registry in memory and fake pools: unload stops the pools and makes the
 * model not ready until it is loaded again, the index says each version's state here, and the warm
 * minimum loads only the versions that take traffic and keep an instance (not those placed elsewhere).
 */
import { describe, expect, it } from 'vitest';

import { ModelLoadError } from '../../sdk/errors.js';
import type { FunctionVersion } from '../registry/index.js';
import { RecordCache } from './records.js';
import { TritonRepository } from './repository.js';
import { FakePools, MemoryRegistry, specOf } from './test-fakes.js';

/** `f`: v1 (min 1 instance, traffic) ready, v2 failed; `g`: v1 ready with traffic, scaled to zero. */
async function setUp(elsewhere: (name: string, v: FunctionVersion) => boolean = () => false) {
  const registry = new MemoryRegistry();
  await registry.createVersion(specOf('f', { scaling: { minInstances: 1 } }), { model: 'a'.repeat(64) });
  await registry.createVersion(specOf('f'), { model: 'b'.repeat(64) });
  await registry.setStatus('f', 1, 'ready');
  await registry.setStatus('f', 2, 'failed', 'not a TorchScript file');
  await registry.setTraffic('f', { 1: 100 });
  await registry.createVersion(specOf('g'), { model: 'c'.repeat(64) });
  await registry.setStatus('g', 1, 'ready');
  await registry.setTraffic('g', { 1: 100 });
  const pools = new FakePools();
  const unloaded = new Set<string>();
  const warnings: string[] = [];
  const repository = new TritonRepository({
    registry,
    records: new RecordCache(registry),
    pools,
    unloaded,
    calls: { elsewhere: async (name, v) => elsewhere(name, v) },
    log: { info: () => undefined, warn: (_o, msg) => warnings.push(msg ?? ''), error: () => undefined },
  });
  return { repository, pools, unloaded, warnings };
}

describe('TritonRepository', () => {
  it('unloads a model (its pools stop, it is not ready) until it is loaded again', async () => {
    const { repository, pools, unloaded } = await setUp();
    await repository.load('f');
    expect(repository.isWarm('f', 1)).toBe(true);
    expect(await repository.modelReady('f')).toBe(true);
    await repository.unload('f');
    expect(pools.asked).toEqual(['start f@1', 'stop f@1']);
    expect(repository.isUnloaded('f')).toBe(true);
    expect(await repository.modelReady('f')).toBe(false);
    expect(await repository.modelReady('g')).toBe(true);
    await repository.load('f', 1);
    expect(unloaded.size).toBe(0);
    expect(await repository.modelReady('f', 1)).toBe(true);
  });

  it('is not ready for a failed version, an unknown one, or a pool that failed or restarts', async () => {
    const { repository, pools } = await setUp();
    expect(await repository.modelReady('f', 2)).toBe(false);
    expect(await repository.modelReady('f', 9)).toBe(false);
    expect(await repository.modelReady('nope')).toBe(false);
    await repository.load('g');
    for (const state of ['restarting', 'failed'] as const) {
      pools.fake('g', 1)!.state = state;
      expect(await repository.modelReady('g')).toBe(false);
    }
  });

  it('indexes every version with its state here and the reason it is not', async () => {
    const { repository } = await setUp();
    await repository.load('g');
    await repository.unload('f', 1);
    expect(await repository.repositoryIndex()).toEqual([
      { name: 'f', version: '1', state: 'UNLOADED', reason: 'unloaded' },
      { name: 'f', version: '2', state: 'UNAVAILABLE', reason: 'not a TorchScript file' },
      { name: 'g', version: '1', state: 'READY' },
    ]);
  });

  it('warms at start the versions with traffic that keep an instance, and says which failed', async () => {
    const { repository, pools, warnings } = await setUp();
    expect(await repository.warmMinimum()).toEqual({ warm: ['f@1'], failed: [] });
    expect(pools.asked).toEqual(['start f@1']);
    const failing = await setUp();
    failing.pools.prepare = (pool) => {
      pool.loadError = new ModelLoadError('no such file');
    };
    expect(await failing.repository.warmMinimum()).toEqual({ warm: [], failed: ['f@1'] });
    expect(failing.warnings).toEqual(['minimum instances failed to load']);
    expect(warnings).toEqual([]);
  });

  it('leaves to other nodes the versions placed there (cluster mode)', async () => {
    const { repository, pools } = await setUp(() => true);
    expect(await repository.warmMinimum()).toEqual({ warm: [], failed: [] });
    expect(pools.asked).toEqual([]);
  });
});
