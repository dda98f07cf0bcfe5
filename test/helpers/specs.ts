/**
 * The spec most tests deploy: the `small` fixture (a Linear 4 → 3, test/fixtures/make_models.py),
 * batched up to 8 rows on the CPU, with two rows to send it. Add `hook: 'hook.ts'` for a hooked one.
 */
import type { FunctionSpecInput } from '../../sdk/spec/function-spec.js';

export const SMALL_SPEC = {
  name: 'small',
  model: 'model.pt',
  maxBatchSize: 8,
  instances: { device: 'cpu' },
  inputs: [{ name: 'x', dtype: 'FP32', dims: [4] }],
  outputs: [{ name: 'y', dtype: 'FP32', dims: [3] }],
} satisfies FunctionSpecInput;

export const SMALL_X = [
  [1, 2, 3, 4],
  [0.5, -1, 2, 0],
];

/**
 * The `slow` fixture: `n` rounds of a 512×512 matmul chain on a 4×512 input, unbatched, so a test chooses how long
 * each forward takes (queues, deadlines, autoscaling): about 0.1 ms a round here. On one intra-op
 * thread, so a busy machine slows it in proportion: a team of two OpenMP threads meets at a barrier
 * every round, and with a core taken by other work each meeting waits for the preempted thread (a
 * 60 000-round forward took 55 s instead of 6 beside `stress-ng --cpu 1`).
 */
export const SLOW_SPEC = {
  name: 'slow',
  model: 'model.pt',
  maxBatchSize: 0,
  instances: { device: 'cpu', threads: 1 },
  inputs: [
    { name: 'x', dtype: 'FP32', dims: [4, 512] },
    { name: 'n', dtype: 'INT64', dims: [] },
  ],
  outputs: [{ name: 'y', dtype: 'FP32', dims: [4, 512] }],
} satisfies FunctionSpecInput;
