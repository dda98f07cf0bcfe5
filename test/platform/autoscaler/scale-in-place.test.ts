/**
 * `hearth scale` on a real node: scaling changes in place (no new version, the traffic split kept),
 * the registry keeps it, and the live pool follows at once — minInstances 2 grows the warm pool to
 * two instances (this machine's CPU lanes) within a few 100 ms ticks, with no request sent; back to
 * 1, it shrinks once idle.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, expect, it } from 'vitest';

import { Hearth } from '../../../sdk/client.js';
import { deployFixture, testNode } from '../../helpers/node.js';
import { SMALL_SPEC } from '../../helpers/specs.js';
import { waitFor } from '../../helpers/wait.js';

const dir = await mkdtemp(join(tmpdir(), 'hearth-scale-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

it('changes scaling in place and the live pool follows', async () => {
  const node = await testNode(join(dir, 'node'), { HEARTH_AUTOSCALE_TICK_MS: '100' });
  try {
    const spec = { ...SMALL_SPEC, scaling: { minInstances: 1, maxInstances: 4, scaleDownAfterS: 1, stableWindowS: 1 } };
    expect((await deployFixture(node.httpUrl, spec, { model: 'small' })).status).toBe(201);
    const client = new Hearth({ url: node.httpUrl });
    const instances = async () =>
      (await client.describe('small')).pools.find((p) => p.version === 1)?.instances.total ?? 0;
    expect(await instances()).toBe(1);

    const r = await client.scale('small', { minInstances: 2 });
    expect(r.versions).toEqual([
      { version: 1, scaling: expect.objectContaining({ minInstances: 2, maxInstances: 4 }) },
    ]);
    await waitFor('two instances', instances, (n) => n === 2);
    const info = await client.describe('small');
    expect(
      info.versions.map((v) => [v.version, (v.spec as { scaling: { minInstances: number } }).scaling.minInstances]),
    ).toEqual([[1, 2]]);
    expect(info.traffic).toEqual({ 1: 100 });

    // The spec's rules hold: min over max is refused, and nothing changes.
    await expect(client.scale('small', { minInstances: 9 })).rejects.toThrow(/minInstances/);
    await client.scale('small', { minInstances: 1 });
    await waitFor('back to one instance once idle', instances, (n) => n === 1);
  } finally {
    await node.close();
  }
}, 60_000);
