/**
 * Requests through runners with their tensors in the arena, and with none (HEARTH_ARENA_MB=0, every
 * blob on the socket): each of many concurrent requests gets back exactly its own tensor from
 * `zero_vec` (x * 1.0), batched or not — an extent given to two requests, or freed while in use,
 * would answer one with another's rows. The node gathers concurrent requests into calls of many
 * (runtime/runner/wire/gather.ts): each still gets its own rows, and counts as one request.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { deployFixture, testNode } from '../../helpers/node.js';

const dir = await mkdtemp(join(tmpdir(), 'hearth-arena-serving-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

const SPEC = {
  name: 'zero',
  model: 'model.pt',
  maxBatchSize: 64,
  batching: { maxQueueDelayUs: 2000 },
  instances: { device: 'cpu' },
  inputs: [{ name: 'x', dtype: 'FP32', dims: [1024] }],
  outputs: [{ name: 'y', dtype: 'FP32', dims: [1024] }],
};

/** Request i's rows: values exact in FP32 and in JSON, none equal to another request's. */
const rowsOf = (i: number, rows: number): number[] =>
  Array.from({ length: rows * 1024 }, (_, k) => i * 4096 + (k % 4096) / 8);

describe.each(['256', '0'])('through a runner, HEARTH_ARENA_MB=%s', (arenaMb) => {
  it('answers each of 48 concurrent requests with its own rows', async () => {
    const node = await testNode(join(dir, `mb-${arenaMb}`), { HEARTH_ARENA_MB: arenaMb });
    try {
      const r = await deployFixture(node.httpUrl, SPEC, { model: 'zero_vec' });
      expect(r.status, await r.clone().text()).toBe(201);
      const answers = await Promise.all(
        Array.from({ length: 48 }, async (_, i) => {
          const rows = 1 + (i % 3);
          const res = await fetch(`${node.httpUrl}/v2/models/zero/infer`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({
              inputs: [{ name: 'x', shape: [rows, 1024], datatype: 'FP32', data: rowsOf(i, rows) }],
            }),
          });
          expect(res.status).toBe(200);
          const out = ((await res.json()) as { outputs: { shape: number[]; data: number[] }[] }).outputs[0]!;
          return { i, rows, out };
        }),
      );
      for (const { i, rows, out } of answers) {
        expect(out.shape).toEqual([rows, 1024]);
        expect(out.data).toEqual(rowsOf(i, rows));
      }
      // Requests the node gathered into one call still count one by one (Triton's statistics):
      // 48 successes of 96 rows in all.
      const stats = (await (await fetch(`${node.httpUrl}/v2/models/zero/stats`)).json()) as {
        model_stats: { inference_count: number; inference_stats: { success: { count: number } } }[];
      };
      expect(stats.model_stats[0]!.inference_stats.success.count).toBe(48);
      expect(stats.model_stats[0]!.inference_count).toBe(96);
    } finally {
      await node.close();
    }
  });
});
