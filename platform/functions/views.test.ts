/**
 * The views over a registry in memory, fake pools and a fake cluster: when a function is failing and
 * why, which failed calls reach its log, the pools and nodes of a node alone or of a cluster, and
 * Triton's statistics.
 */
import { describe, expect, it } from 'vitest';

import type { ClusterNode, PoolBrief } from '../cluster/index.js';
import { FunctionLogs } from './function-logs.js';
import { RecordCache } from './records.js';
import { FunctionSeries } from './series.js';
import { FakePools, MemoryRegistry, specOf } from './test-fakes.js';
import { FunctionViews } from './views.js';

async function setUp(cluster?: { nodeId: string; nodes: ClusterNode[]; pools: () => PoolBrief[] }) {
  const registry = new MemoryRegistry();
  await registry.createVersion(specOf('f'), { model: 'a'.repeat(64) });
  await registry.createVersion(specOf('f'), { model: 'b'.repeat(64) });
  await registry.setStatus('f', 1, 'ready');
  await registry.setStatus('f', 2, 'failed', 'bad model');
  const pools = new FakePools();
  pools.obtain('f', (await registry.get('f'))!.versions[0]!);
  const logs = new FunctionLogs();
  const series = new FunctionSeries();
  const startedAt = Date.parse('2026-12-05T00:00:00Z');
  const records = new RecordCache(registry);
  const views = new FunctionViews({ registry, records, pools, logs, series, startedAt, cluster });
  return { registry, pools, logs, series, views };
}

describe('FunctionViews', () => {
  it('calls a function failing when every version failed, with the latest reason', async () => {
    const { registry, views } = await setUp();
    const record = (await registry.get('f'))!;
    expect(views.health(record)).toEqual({ failing: false });
    const failed = { ...record, versions: record.versions.map((v) => ({ ...v, status: 'failed' as const })) };
    expect(views.health(failed)).toEqual({ failing: true, reason: 'v2 failed: bad model' });
  });

  it('calls a function failing when most of the last minute’s calls failed, with its latest error', async () => {
    const { registry, pools, logs, series, views } = await setUp();
    const record = (await registry.get('f'))!;
    const now = Date.now();
    series.sample(pools.summaries(), now - 2000);
    pools.fake('f', 1)!.counters.failure = 10;
    pools.fake('f', 1)!.counters.success = 2;
    series.sample(pools.summaries(), now - 1000);
    expect(views.health(record)).toEqual({ failing: true, reason: '10 failed calls in the last minute' });
    views.errorDetail('f', 'req-1')('INFERENCE_FAILED', 'shape mismatch\n  at forward', 'forward', 1);
    expect(views.health(record)).toEqual({ failing: true, reason: 'INFERENCE_FAILED in forward: shape mismatch' });
    expect(logs.recent('f')).toMatchObject([
      { function: 'f', version: 1, source: 'error', level: 'error', requestId: 'req-1' },
    ]);
  });

  it("logs a call's failure before its name resolved only for a function with a pool here", async () => {
    const { logs, views } = await setUp();
    views.errorDetail('g', undefined)('DEADLINE_EXCEEDED', 'too late');
    views.errorDetail(undefined, undefined)('INFERENCE_FAILED', 'no name');
    expect(logs.recent('g')).toEqual([]);
    views.errorDetail('g', undefined)('HOOK_FAILED', 'pre threw');
    views.errorDetail('f', undefined)('DEADLINE_EXCEEDED', 'too late');
    expect(logs.recent('g').map((e) => e.msg)).toEqual(['HOOK_FAILED: pre threw']);
    expect(logs.recent('f').map((e) => e.msg)).toEqual(['DEADLINE_EXCEEDED: too late']);
  });

  it('shows this node alone, and its pools as on node "local"', async () => {
    const { views } = await setUp();
    expect(views.nodes()).toEqual([
      { id: 'local', self: true, startedAt: '2026-12-05T00:00:00.000Z', heartbeatAgeMs: 0, pools: 1 },
    ]);
    expect(views.clusterPools()).toMatchObject([{ function: 'f', version: 1, node: 'local' }]);
  });

  it("shows every node of a cluster, and the other nodes' pools beside this one's", async () => {
    const other = { node: 'b', function: 'f', version: 1 } as PoolBrief;
    const node = (id: string, seenAt: number) => ({ id, http: `http://${id}`, startedAt: 0, seenAt, pools: [other] });
    const nodes = [node('a', Date.now()), node('b', Date.now() + 60_000)];
    const { views } = await setUp({ nodeId: 'a', nodes, pools: () => [{ ...other, node: 'a' }, other] });
    expect(views.clusterPools()).toMatchObject([{ node: 'a', function: 'f' }, other]);
    expect(views.nodes()).toMatchObject([
      { id: 'a', self: true, http: 'http://a', pools: 1 },
      { id: 'b', self: false, heartbeatAgeMs: 0 },
    ]);
  });

  it("gives Triton's statistics of the ready versions, or of the version named, after a refresh", async () => {
    const { pools, views } = await setUp();
    pools.fake('f', 1)!.counters.success = 3;
    const all = await views.statistics();
    expect(all.map((s) => [s.name, s.version, s.counters.success])).toEqual([['f', 1, 3]]);
    expect(pools.asked).toEqual(['refreshStats']);
    expect((await views.statistics('f', 2)).map((s) => s.version)).toEqual([2]);
    await expect(views.statistics('f', 9)).rejects.toMatchObject({
      code: 'VERSION_NOT_FOUND',
      message: "Request for unknown model: 'f' version 9 is not found",
    });
  });
});
