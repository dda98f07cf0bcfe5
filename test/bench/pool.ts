/**
 * bench:pool — the MLP of bench:engine through a pool, hooks included (a binary hook in hook
 * threads), no HTTP, driven by 1, 16 and 64 closed-loop clients, against the engine's best batch
 * throughput and its batch-1 latency measured in the same run.
 *
 * Writes test/bench/results/pool.json: rows {concurrency, pool_per_s, engine_best_per_s, ratio,
 * p50_ms, p99_ms}, and engine_p50_ms on the concurrency-1 row. Targets: ratio ≥ 0.9 at 64; at 1,
 * p50 ≤ engine_p50_ms + 0.5 ms. Flags: --quick, --seconds S, --instances N.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

import { bundleHook, loadModel, Pool, setIntraOpThreads } from '../../runtime/index.js';
import { parseSpec } from '../../sdk/spec/index.js';
import { ensureModels, modelPath, REPO_ROOT } from '../helpers/fixtures.js';
import { engineBestBatch, randomRows } from './engine-reference.js';

const rows = (n: number, seed: number): Float32Array => randomRows(n * 1024, seed);

const { values: flags } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    seconds: { type: 'string' },
    instances: { type: 'string', default: '1' },
    threads: { type: 'string' },
    delay: { type: 'string', default: '2000' },
    out: { type: 'string', default: join(REPO_ROOT, 'test', 'bench', 'results', 'pool.json') },
  },
});
const seconds = Number(flags.seconds ?? (flags.quick ? 1.5 : 5));
const threads = Number(flags.threads ?? availableParallelism());

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

const round = (v: number, digits = 1): number => Math.round(v * 10 ** digits) / 10 ** digits;

async function engineReference(): Promise<{ best: number; bestBatch: number; p50: number }> {
  const model = await loadModel(modelPath('mlp'), {
    warmup: { inputs: [{ dtype: 'FP32', shape: [1, 1024], data: rows(1, 1) }], runs: 3 },
  });
  const { best, bestBatch } = await engineBestBatch(model, [1024], [8, 16, 32, 64], (seconds * 1000) / 2);
  const one = { dtype: 'FP32' as const, shape: [1, 1024], data: rows(1, 2) };
  const lat: number[] = [];
  const t0 = performance.now();
  while (performance.now() - t0 < (seconds * 1000) / 2) {
    const t = performance.now();
    await model.forward([one]);
    lat.push(performance.now() - t);
  }
  lat.sort((a, b) => a - b);
  model.dispose();
  return { best, bestBatch, p50: percentile(lat, 50) };
}

async function drive(
  pool: Pool,
  concurrency: number,
): Promise<{ perS: number; p50: number; p99: number; requests: number }> {
  const bodies = Array.from({ length: concurrency }, (_, i) => rows(1, 100 + i));
  const lat: number[] = [];
  let done = 0;
  const warmupEnd = performance.now() + 300;
  const end = warmupEnd + seconds * 1000;
  let measuredStart = 0;
  const client = async (i: number): Promise<void> => {
    for (;;) {
      const now = performance.now();
      if (now >= end) return;
      const body = new Uint8Array(bodies[i]!.buffer.slice(0));
      await pool.invoke({ body, contentType: 'application/octet-stream' });
      const t = performance.now();
      if (now >= warmupEnd) {
        if (measuredStart === 0) measuredStart = now;
        lat.push(t - now);
        done++;
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, (_, i) => client(i)));
  const elapsed = (end - Math.max(warmupEnd, measuredStart || warmupEnd)) / 1000;
  lat.sort((a, b) => a - b);
  return { perS: done / elapsed, p50: percentile(lat, 50), p99: percentile(lat, 99), requests: done };
}

async function main(): Promise<void> {
  ensureModels();
  setIntraOpThreads(threads);
  const engine = await engineReference();
  console.log(
    `bench:pool — MLP, ${threads} intra-op thread(s), engine best ${round(engine.best)} rows/s at batch ${engine.bestBatch}, engine batch-1 p50 ${round(engine.p50, 3)} ms`,
  );

  const hook = await bundleHook(
    join(REPO_ROOT, 'test', 'bench', 'hooks', 'mlp-binary.ts'),
    join(tmpdir(), 'hearth-bench-hooks'),
  );
  const spec = parseSpec({
    name: 'bench-mlp',
    model: 'model.pt',
    hook: 'hook.ts',
    maxBatchSize: 64,
    batching: { maxQueueDelayUs: Number(flags.delay) },
    instances: { count: Number(flags.instances), device: 'cpu' },
    scaling: { maxInstances: 8 },
    inputs: [{ name: 'x', dtype: 'FP32', dims: [1024] }],
    outputs: [{ name: 'y', dtype: 'FP32', dims: [1024] }],
  });
  const pool = new Pool({ spec, version: 1, model: modelPath('mlp'), hookBundle: hook.path, hooks: { threads: 1 } });
  await pool.start();

  const result = [];
  const breakdown: string[] = [];
  let before = pool.stats();
  for (const concurrency of [1, 16, 64]) {
    const r = await drive(pool, concurrency);
    const after = pool.stats();
    const avg = (k: 'pre' | 'queue' | 'compute' | 'post' | 'request'): string => {
      const d = after.durations[k];
      const b = before.durations[k];
      return ((d.totalUs - b.totalUs) / Math.max(1, d.count - b.count) / 1000).toFixed(2);
    };
    const forwards = after.execCount - before.execCount;
    const rowsRun = after.inferenceCount - before.inferenceCount;
    breakdown.push(
      `c=${concurrency}: mean ms pre ${avg('pre')} queue ${avg('queue')} compute ${avg('compute')} post ${avg('post')} request ${avg('request')}; mean batch ${(rowsRun / Math.max(1, forwards)).toFixed(1)} rows`,
    );
    before = after;
    const row = {
      concurrency,
      pool_per_s: round(r.perS),
      engine_best_per_s: round(engine.best),
      ratio: round(r.perS / engine.best, 3),
      p50_ms: round(r.p50, 3),
      p99_ms: round(r.p99, 3),
      ...(concurrency === 1 ? { engine_p50_ms: round(engine.p50, 3) } : {}),
      requests: r.requests,
      instances: spec.instances.count,
    };
    result.push(row);
  }
  const stats = pool.stats();
  await pool.stop();

  console.log('\nconcurrency   pool/s   engine best/s   ratio   p50 ms   p99 ms');
  for (const r of result) {
    const extra =
      r.concurrency === 1
        ? `   (engine batch-1 p50 ${r.engine_p50_ms} ms; target p50 ≤ ${round((r.engine_p50_ms ?? 0) + 0.5, 3)})`
        : r.concurrency === 64
          ? '   (target ratio ≥ 0.9)'
          : '';
    console.log(
      `${String(r.concurrency).padStart(11)} ${r.pool_per_s.toFixed(1).padStart(8)} ${r.engine_best_per_s.toFixed(1).padStart(15)} ${r.ratio.toFixed(3).padStart(7)} ${r.p50_ms.toFixed(3).padStart(8)} ${r.p99_ms.toFixed(3).padStart(8)}${extra}`,
    );
  }
  console.log(`\nwhere the time goes (pool counters):\n  ${breakdown.join('\n  ')}`);
  const sizes = Object.entries(stats.batchSizes)
    .sort((a, b) => b[1] - a[1])
    .slice(0, 6)
    .map(([s, n]) => `${s}×${n}`)
    .join(' ');
  console.log(`batch sizes (rows×forwards, most common): ${sizes}`);
  mkdirSync(join(flags.out, '..'), { recursive: true });
  writeFileSync(flags.out, `${JSON.stringify(result, null, 2)}\n`);
  console.log(`wrote ${flags.out}`);
}

await main();
