/** The functions the serving benchmarks deploy, and one way to deploy them with a bench hook. */
import { join } from 'node:path';

import type { FunctionSpecInput } from '../../sdk/spec/function-spec.js';
import type { FixtureModel } from '../helpers/fixtures.js';
import { REPO_ROOT } from '../helpers/fixtures.js';
import { deployFixture } from '../helpers/node.js';

const ON_CPU_WITH_HOOK = { model: 'model.pt', hook: 'hook.ts', instances: { device: 'cpu' } } as const;

/**
 * The MLP (1024 → 1024) behind a JSON hook. It reads all its weights per forward, so batch size is
 * its throughput: one instance takes the whole queue (a second would split the batches on 2 cores).
 */
export const MLP_SPEC = {
  ...ON_CPU_WITH_HOOK,
  name: 'mlp',
  maxBatchSize: 64,
  batching: { maxQueueDelayUs: 2000 },
  scaling: { targetQueueDepth: 64 },
  inputs: [{ name: 'x', dtype: 'FP32', dims: [1024] }],
  outputs: [{ name: 'y', dtype: 'FP32', dims: [1024] }],
} satisfies FunctionSpecInput;

/**
 * ResNet-50: compute-bound, it scales to an instance per lane on the autoscaler's defaults. Its
 * largest batch is this CPU's, as a Triton user sets max_batch_size from perf_analyzer: on one
 * thread here ResNet-50 runs 5.86 / 6.01 / 5.59 / 4.10 rows/s at batch 1 / 2 / 4 / 16
 * (python3-torch), and behind Hearth at c=64 served 6.4 req/s with batches of 16, 9.2 with 2 and
 * 10.6 with 4. On a GPU, where a batch of 16 runs many times faster per row, it would be 16 or more.
 */
export const RESNET_SPEC = {
  ...ON_CPU_WITH_HOOK,
  name: 'resnet50',
  maxBatchSize: 4,
  batching: { maxQueueDelayUs: 5000 },
  inputs: [{ name: 'x', dtype: 'FP32', dims: [3, 224, 224] }],
  outputs: [{ name: 'y', dtype: 'FP32', dims: [1000] }],
} satisfies FunctionSpecInput;

/**
 * Uploads the fixture model `model` and the hook `hooksDir`/`hook`.ts (test/bench/hooks by default;
 * bundled under `dir`), then deploys `spec` with them on the node at `url`; throws unless the
 * version is ready.
 */
export async function deployWithHook(
  url: string,
  spec: FunctionSpecInput,
  model: FixtureModel,
  hook: string,
  dir: string,
  hooksDir = join(REPO_ROOT, 'test', 'bench', 'hooks'),
): Promise<void> {
  const r = await deployFixture(url, spec, { model, hook, bundles: join(dir, 'bundles'), hooksDir });
  if (r.status !== 201) throw new Error(`deploy failed: ${await r.text()}`);
}

/**
 * Waits out the spare runner a cold start leaves booting (it starts 1.5 s after the load and takes
 * about two seconds of a core to load LibTorch and map its heap): timed beside it, a cell at c=1
 * measured the boot, 2-5 ms a request where the runner answers in under one.
 */
export function afterSpareBoots(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 5000));
}
