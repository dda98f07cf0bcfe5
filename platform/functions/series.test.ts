import { describe, expect, it } from 'vitest';

import type { PoolSummary } from '../../runtime/index.js';
import { FunctionSeries, SERIES_LENGTH } from './series.js';

/** A pool's listing with the counters given (the rest as a fresh pool has them). */
const pool = (version: number, c: { success: number; failure: number; exec: number; rows: number; queue?: number }) =>
  ({
    function: 'f',
    version,
    success: c.success,
    failure: c.failure,
    execCount: c.exec,
    inferenceCount: c.rows,
    queueDepth: c.queue ?? 0,
    instances: { total: 2, idle: 1, busy: 1, loading: 0 },
    latency: { p50Ms: 3, p99Ms: 9, of: 100 },
  }) as unknown as PoolSummary;

describe('per-version time series', () => {
  it('turns counters into per-second rates and mean batch sizes', () => {
    const s = new FunctionSeries();
    s.sample([pool(1, { success: 0, failure: 0, exec: 0, rows: 0 })], 1000);
    s.sample([pool(1, { success: 40, failure: 2, exec: 5, rows: 40 })], 3000);
    const [first, second] = s.of('f')['1']!;
    expect(first).toMatchObject({ reqPerS: 0, meanBatch: null });
    expect(second).toEqual({
      at: 3000,
      reqPerS: 20,
      errPerS: 1,
      p50Ms: 3,
      p99Ms: 9,
      meanBatch: 8,
      queueDepth: 0,
      instances: 2,
      busy: 1,
      loading: 0,
    });
  });

  it('goes on with empty seconds for a version scaled to zero, keeps 15 minutes, and forgets a deleted function', () => {
    const s = new FunctionSeries();
    s.sample([pool(2, { success: 5, failure: 0, exec: 1, rows: 5 })], 0);
    for (let t = 1; t <= SERIES_LENGTH + 10; t++) s.sample([], t * 1000);
    const ring = s.of('f', 2)['2']!;
    expect(ring).toHaveLength(SERIES_LENGTH);
    expect(ring.at(-1)).toMatchObject({ reqPerS: 0, instances: 0 });
    s.forget('f');
    expect(s.of('f')).toEqual({});
  });
});
