import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { deployFixture, testNode } from '../../helpers/node.js';
import { SMALL_SPEC } from '../../helpers/specs.js';

const dir = await mkdtemp(join(tmpdir(), 'hearth-metrics-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

function value(text: string, metric: string, labels: string): number | undefined {
  const line = text
    .split('\n')
    .find((l) => l.startsWith(`${metric}{`) && labels.split(',').every((kv) => l.includes(kv)));
  return line === undefined ? undefined : Number(line.split(' ').at(-1));
}

describe('metrics on the metrics port', () => {
  it('reports Triton-named counters per function and version, instances by state, and cold starts by phase', async () => {
    const node = await testNode(join(dir, 'node'));
    try {
      const spec = { ...SMALL_SPEC, hook: 'hook.ts' };
      await deployFixture(node.httpUrl, spec, { model: 'small', hook: 'echo', bundles: join(dir, 'bundles') });
      const send = (x: unknown) =>
        fetch(`${node.httpUrl}/fn/small`, {
          method: 'POST',
          body: JSON.stringify({ x }),
          headers: { 'content-type': 'application/json' },
        });
      for (let i = 0; i < 3; i++) expect((await send([[1, 2, 3, i]])).status).toBe(200);
      const bad = await fetch(`${node.httpUrl}/fn/small`, {
        method: 'POST',
        body: '{not json',
        headers: { 'content-type': 'application/json' },
      });
      expect(bad.status).toBe(400);

      const text = await (await fetch(node.metricsUrl)).text();
      const l = 'model="small",version="1"';
      expect(value(text, 'nv_inference_request_success', l)).toBe(3);
      expect(value(text, 'nv_inference_request_failure', `${l},reason="INVALID_INPUT"`)).toBe(1);
      expect(value(text, 'nv_inference_count', l)).toBe(3);
      expect(value(text, 'nv_inference_exec_count', l)).toBeGreaterThanOrEqual(1);
      expect(value(text, 'nv_inference_compute_infer_duration_us', l)).toBeGreaterThan(0);
      expect(value(text, 'nv_inference_request_duration_us', l)).toBeGreaterThan(0);
      expect(value(text, 'nv_inference_pending_request_count', l)).toBe(0);
      expect(value(text, 'hearth_pool_instances', `${l},state="idle"`)).toBe(1);
      expect(value(text, 'hearth_hook_duration_us', `${l},phase="pre"`)).toBeGreaterThan(0);
      for (const phase of ['fetch', 'runner', 'runner_jail', 'runner_runtime', 'load', 'warmup'])
        expect(value(text, 'hearth_cold_start_seconds_count', `${l},phase="${phase}"`)).toBe(1);
      // The node's own start, in order: modules, stores, port live, ready (seconds of its process).
      const start = ['modules', 'stores', 'port_live', 'ready'].map((phase) =>
        value(text, 'hearth_node_start_seconds', `phase="${phase}"`),
      );
      expect(start.every((s) => s !== undefined && s > 0)).toBe(true);
      expect([...start].sort((a, b) => a! - b!)).toEqual(start);
      // The deploy's cold start had nobody waiting: no queue phase. Unloaded, the next request
      // cold-starts the pool and waits through it: a second cold start, now with its queue wait.
      expect(value(text, 'hearth_cold_start_seconds_count', `${l},phase="queue"`)).toBeUndefined();
      expect((await fetch(`${node.httpUrl}/v2/repository/models/small/unload`, { method: 'POST' })).status).toBe(200);
      expect((await send([[1, 2, 3, 4]])).status).toBe(200);
      const after = await (await fetch(node.metricsUrl)).text();
      expect(value(after, 'hearth_cold_start_seconds_count', `${l},phase="queue"`)).toBe(1);
      expect(value(after, 'hearth_cold_start_seconds_count', `${l},phase="load"`)).toBe(2);
      // The queue wait covers the load it waited through.
      expect(value(after, 'hearth_cold_start_seconds_sum', `${l},phase="queue"`)).toBeGreaterThan(
        value(after, 'hearth_cold_start_seconds_sum', `${l},phase="load"`)! / 2,
      );
      const { pools } = (await (await fetch(`${node.httpUrl}/api/v1/pools`)).json()) as {
        pools: { events: { type: string; detail?: string }[] }[];
      };
      expect(pools[0]!.events.filter((e) => e.type === 'cold-start').map((e) => e.detail)).toEqual([
        expect.stringMatching(/^fetch .* runner .* load .* warm-up/),
        expect.stringMatching(/^the first request waited/),
      ]);
      expect((await fetch(node.metricsUrl.replace('/metrics', '/other'))).status).toBe(404);
    } finally {
      await node.close();
    }
  });
});
