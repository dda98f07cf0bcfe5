/**
 * Traffic and scaling over a registry in memory and fake pools: a version that loses all its traffic
 * drains, a rollback returns to the split before (and refuses when it cannot), scaling changes in
 * place through the spec's rules and reaches the autoscaler's overrides.
 */
import { describe, expect, it } from 'vitest';

import { ConflictError, InvalidInputError } from '../../sdk/errors.js';
import { RecordCache } from './records.js';
import { FakePools, MemoryRegistry, specOf } from './test-fakes.js';
import { TrafficControl } from './traffic.js';

/** Function `f`: v1 and v2 ready, v3 failed, all traffic on v1; pools of v1 and v2 here. */
async function setUp() {
  const registry = new MemoryRegistry();
  for (const v of [1, 2, 3]) {
    await registry.createVersion(specOf('f'), { model: 'a'.repeat(64) });
    await registry.setStatus('f', v, v === 3 ? 'failed' : 'ready', v === 3 ? 'bad model' : undefined);
  }
  await registry.setTraffic('f', { 1: 100 });
  const pools = new FakePools();
  const record = (await registry.get('f'))!;
  for (const v of record.versions.slice(0, 2)) pools.obtain('f', v);
  registry.writes.length = 0;
  const traffic = new TrafficControl({ registry, records: new RecordCache(registry), pools });
  return { registry, pools, traffic };
}

describe('TrafficControl', () => {
  it('drains the pools of versions that lose all their traffic, and no others', async () => {
    const { registry, pools, traffic } = await setUp();
    const record = await traffic.setTraffic('f', { 1: 50, 2: 50 });
    expect(record.traffic).toEqual({ 1: 50, 2: 50 });
    expect(pools.asked).toEqual([]);
    await traffic.setTraffic('f', { 2: 100 });
    expect(pools.asked).toEqual(['drain f@1']);
    expect(registry.writes).toEqual(['setTraffic f {"1":50,"2":50}', 'setTraffic f {"2":100}']);
    await expect(traffic.setTraffic('f', { 3: 100 })).rejects.toThrow(ConflictError);
  });

  it('rolls back to the split before the last change, a second rollback undoing the first', async () => {
    const { traffic } = await setUp();
    await traffic.setTraffic('f', { 2: 100 });
    expect(await traffic.rollback('f')).toMatchObject({ record: { traffic: { 1: 100 } }, from: { 2: 100 } });
    expect(await traffic.rollback('f')).toMatchObject({ record: { traffic: { 2: 100 } }, from: { 1: 100 } });
  });

  it('refuses a rollback with nothing before, or to a version that cannot serve', async () => {
    const { registry, traffic } = await setUp();
    await expect(traffic.rollback('f')).rejects.toMatchObject({
      code: 'CONFLICT',
      message:
        'f has had one traffic split since it was deployed: nothing to roll back to (set one with `hearth traffic f VERSION=WEIGHT`)',
    });
    await traffic.setTraffic('f', { 2: 100 }, { 3: 100 });
    await expect(traffic.rollback('f')).rejects.toThrow(
      "f's split before the last change sent traffic to v3, which is failed: set the traffic with `hearth traffic f VERSION=WEIGHT`",
    );
    expect(registry.writes).toEqual(['setTraffic f {"2":100}']);
  });

  it('changes the scaling of the versions taking traffic in place, which the autoscaler then follows', async () => {
    const { registry, pools, traffic } = await setUp();
    await traffic.setTraffic('f', { 1: 50, 2: 50 });
    pools.asked.length = 0;
    const changed = await traffic.setScaling('f', { minInstances: 1, maxInstances: 3 });
    expect(changed.map((c) => [c.version, c.scaling.minInstances, c.scaling.maxInstances])).toEqual([
      [1, 1, 3],
      [2, 1, 3],
    ]);
    expect(registry.writes.slice(-2)).toEqual(['setScaling f v1', 'setScaling f v2']);
    // Keeping an instance warm now, each starts as at node start.
    expect(pools.asked).toEqual(['warm f@1', 'start f@1', 'warm f@2', 'start f@2']);
    expect(traffic.scalingOf('f', 1)).toEqual(changed[0]!.scaling);
    expect(traffic.scalingOf('f', 3)).toBeUndefined();
    traffic.forget('f', [1, 2, 3]);
    expect(traffic.scalingOf('f', 1)).toBeUndefined();
  });

  it('scales a version named, and refuses what the spec would not take', async () => {
    const { traffic } = await setUp();
    expect((await traffic.setScaling('f', { maxInstances: 2 }, 3)).map((c) => c.version)).toEqual([3]);
    await expect(traffic.setScaling('f', { maxInstances: 2 }, 9)).rejects.toMatchObject({
      code: 'VERSION_NOT_FOUND',
      message: 'f has no version 9',
    });
    await expect(traffic.setScaling('f', { minInstances: 5, maxInstances: 2 })).rejects.toThrow(InvalidInputError);
  });

  it('refuses to scale a function with no version taking traffic unless one is named', async () => {
    const registry = new MemoryRegistry();
    await registry.createVersion(specOf('g'), { model: 'a'.repeat(64) });
    const traffic = new TrafficControl({ registry, records: new RecordCache(registry), pools: new FakePools() });
    await expect(traffic.setScaling('g', { maxInstances: 2 })).rejects.toMatchObject({
      code: 'CONFLICT',
      message: 'g has no version taking traffic: name one with --version',
    });
  });

  it('takes the scaling another node changed for the versions with a pool here (the registry sweep)', async () => {
    const { registry, traffic } = await setUp();
    const scaling = { ...specOf('f').scaling, maxInstances: 7 };
    await registry.setScaling('f', 1, scaling);
    await registry.setScaling('f', 3, scaling);
    await traffic.refreshScaling();
    expect(traffic.scalingOf('f', 1)).toEqual(scaling);
    expect(traffic.scalingOf('f', 3)).toBeUndefined();
  });
});
