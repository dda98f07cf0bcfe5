/**
 * A pool's cold start, as one function: fetch the artifacts, start the hook threads while the model
 * loads (on the engine's thread), bind the spec's tensors to forward(), and warm the first instance
 * up — unless requests are already waiting, which then are the warm-up.
 */
import { ModelLoadError } from '../../sdk/errors.js';
import type { FunctionSpec } from '../../sdk/spec/function-spec.js';
import type { TensorsByName } from '../../sdk/tensor.js';
import type { Model } from '../engine/index.js';
import { loadModel } from '../engine/index.js';
import { HookPool } from '../hooks/index.js';
import { freeBytes, instanceCost } from './capacity.js';
import type { IoBinding } from './io-binding.js';
import { bindIo } from './io-binding.js';
import { forwardArgs, sequenceInputs, warmupSamples } from './pool-tensors.js';
import type { ColdStart, PoolArtifacts, PoolOptions } from './types.js';

export interface LoadRequest {
  spec: FunctionSpec;
  version: number;
  device: string;
  artifacts: () => Promise<PoolArtifacts>;
  hooks: PoolOptions['hooks'];
  /** Dummy warm-up passes per sample when nobody waits (default 2). */
  warmupRuns?: number;
  /** Whether requests wait for this pool now: asked after the load, before any dummy pass. */
  waiting: () => boolean;
  /** Called with +1 when the model starts loading and -1 when it is done (instances loading). */
  loading: (delta: number) => void;
  /**
   * The hook threads, as soon as they are up (requests waiting for the pool run their pre hooks
   * while the model warms up). From then on the caller owns them: it closes them if the load fails.
   */
  hooksReady: (hooks: HookPool) => void;
}

/** What a cold start leaves: hook threads, the first instance bound to the spec, and its phases. */
export interface Loaded {
  first: Model;
  binding: IoBinding;
  coldStart: ColdStart;
  /** What each shared instance adds beyond the weights (Capacity). */
  instanceBytes: number;
}

/** The model and hook a pool loads: from its `artifacts` option, else `model` and `hookBundle`. */
export function poolArtifacts(options: PoolOptions): Promise<PoolArtifacts> {
  const { artifacts, model, hookBundle } = options;
  if (artifacts) return artifacts();
  if (model === undefined)
    return Promise.reject(new ModelLoadError(`function ${options.spec.name}: the pool was given no model`));
  return Promise.resolve({ model, hookBundle });
}

export async function loadVersion(r: LoadRequest): Promise<Loaded> {
  const { spec } = r;
  const fetchStarted = performance.now();
  const artifacts = await r.artifacts();
  const fetch = (performance.now() - fetchStarted) / 1000;
  const freeBefore = freeBytes(r.device);
  r.loading(1);
  const [hooks, loaded] = await Promise.allSettled([
    HookPool.create({
      spec,
      version: r.version,
      bundlePath: artifacts.hookBundle,
      timeoutMs: spec.limits.hookTimeoutMs,
      maxQueue: spec.limits.hookQueueSize,
      maxHeapMb: spec.limits.hookMemoryMb,
      maxResponseBytes: spec.limits.maxResponseMb * 2 ** 20,
      webAssembly: spec.limits.hookWebAssembly,
      ...r.hooks,
      ...(artifacts.secrets ? { secrets: artifacts.secrets } : {}),
    }),
    loadModel(artifacts.model, { device: r.device, execution: spec.execution }),
  ]).finally(() => r.loading(-1));
  if (loaded.status === 'rejected' || hooks.status === 'rejected') {
    if (loaded.status === 'fulfilled') loaded.value.dispose();
    if (hooks.status === 'fulfilled') await hooks.value.close();
    throw loaded.status === 'rejected' ? loaded.reason : (hooks as PromiseRejectedResult).reason;
  }
  r.hooksReady(hooks.value);
  const first = loaded.value;
  const info = first.info;
  try {
    const binding = bindIo(spec, info);
    // Requests already waiting are the warm-up: their first batch profiles the graph as a dummy
    // pass would, and nobody waits for a pass whose output is thrown away. A pool started with
    // nobody waiting (a deploy, a scale-up) runs its dummy passes, bound to forward() as requests
    // are. The spec's own samples (model_warmup) always run.
    const t0 = performance.now();
    for (const sample of warmupSamples(spec, r.warmupRuns ?? 2)) {
      if (sample.always || !r.waiting()) await warmUp(spec, binding, first, sample.tensors, sample.runs);
    }
    const warmup = (performance.now() - t0) / 1000;
    return {
      first,
      binding,
      // What the first instance took beyond its weights: what each shared instance adds.
      instanceBytes: instanceCost(freeBefore, freeBytes(r.device), info.weightBytes),
      coldStart: { fetch, load: info.loadMs / 1000, warmup, ...(artifacts.source ? { source: artifacts.source } : {}) },
    };
  } catch (error) {
    first.dispose();
    throw error;
  }
}

/** Runs `runs` forwards of the warm-up inputs (by spec name) on a fresh instance. */
async function warmUp(
  spec: FunctionSpec,
  binding: IoBinding,
  instance: Model,
  inputs: TensorsByName,
  runs: number,
): Promise<void> {
  // A sequence model warms up on filler rows: READY false, so no sequence's state is touched.
  const rows = spec.maxBatchSize > 0 ? (Object.values(inputs)[0]?.shape[0] ?? 1) : 1;
  const fillers = Array.from({ length: rows }, () => ({ filler: true as const }));
  const controls = spec.sequence ? sequenceInputs(spec, fillers) : [];
  const args = forwardArgs(spec, binding, [inputs], controls).map((parts) => parts[0]!);
  try {
    for (let i = 0; i < runs; i++) await instance.forward(args, binding.dictKeys);
  } catch (error) {
    throw new ModelLoadError(`warm-up forward failed: ${(error as Error).message}`, {
      cause: error,
      reason: 'ERR_WARMUP',
    });
  }
}
