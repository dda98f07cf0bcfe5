/**
 * The engine reference the serving benchmarks compare against, measured in the same run: its best
 * batch throughput (two forwards in flight on one instance, as a pool keeps an instance busy).
 */
import type { Model } from '../../runtime/engine/index.js';
import { rng } from '../helpers/random.js';

/** Rows of uniform values in [-1, 1), seeded. */
export function randomRows(count: number, seed: number): Float32Array {
  const next = rng(seed);
  return Float32Array.from({ length: count }, () => next() * 2 - 1);
}

/** Best rows/s over `batches`, each run for `budgetMs`, inputs of shape [batch, ...rowShape]. */
export async function engineBestBatch(
  model: Model,
  rowShape: number[],
  batches: number[],
  budgetMs: number,
): Promise<{ best: number; bestBatch: number }> {
  const perRow = rowShape.reduce((a, b) => a * b, 1);
  let best = 0;
  let bestBatch = 0;
  for (const batch of batches) {
    const x = { dtype: 'FP32' as const, shape: [batch, ...rowShape], data: randomRows(batch * perRow, batch) };
    for (let i = 0; i < 3; i++) await model.forward([x]);
    let n = 0;
    const t0 = performance.now();
    const client = async (): Promise<void> => {
      while (performance.now() - t0 < budgetMs) {
        await model.forward([x]);
        n++;
      }
    };
    await Promise.all([client(), client()]);
    const perS = (n * batch * 1000) / (performance.now() - t0);
    if (perS > best) [best, bestBatch] = [perS, batch];
  }
  return { best, bestBatch };
}
