/**
 * Triton's statistics extension: a version's counters as the ModelStatistics message (HTTP
 * `GET /v2/models[/{m}[/versions/{v}]]/stats` as JSON, gRPC `ModelStatistics`). Durations are
 * cumulative nanoseconds; `count`s are requests, except batch statistics, which count batches.
 *
 * Hearth measures a forward as one span (the concatenation of the batch's inputs runs inside it
 * on the engine's thread, and outputs are handed over without a copy), so compute_input and
 * compute_output carry their counts with no time of their own: all of it is in compute_infer.
 */
import type { DurationSummary, PoolCounters } from '../../runtime/index.js';

const ns = (s: DurationSummary, count = s.count) => ({ count, ns: Math.round(s.totalUs * 1000) });
const zero = (count: number) => ({ count, ns: 0 });

export function modelStatistics(name: string, version: number, c: PoolCounters): Record<string, unknown> {
  const d = c.durations;
  return {
    name,
    version: String(version),
    last_inference: c.lastInferenceMs,
    inference_count: c.inferenceCount,
    execution_count: c.execCount,
    inference_stats: {
      success: ns(d.success),
      fail: ns(d.failure),
      queue: ns(d.queue),
      compute_input: zero(d.queue.count),
      compute_infer: ns(d.requestCompute),
      compute_output: zero(d.queue.count),
      cache_hit: zero(0),
      cache_miss: zero(0),
    },
    response_stats: {},
    batch_stats: Object.entries(c.batchCompute)
      .map(([size, s]) => ({
        batch_size: Number(size),
        compute_input: zero(s.count),
        compute_infer: ns(s),
        compute_output: zero(s.count),
      }))
      .sort((a, b) => a.batch_size - b.batch_size),
    memory_usage: [],
  };
}
