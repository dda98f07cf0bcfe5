/** The native LibTorch engine, typed. */
export {
  loadModel,
  devices,
  gpuMetrics,
  capCudaMemory,
  cudaMemory,
  parseInferJson,
  parseInferJsonAsync,
  setIntraOpThreads,
  setExecutorThreads,
  threads,
  prefault,
  exitNow,
  createArena,
  mapArena,
  DEFAULT_WARMUP_RUNS,
} from './engine.js';
export type { LoadOptions, DeviceReport } from './engine.js';
export { Model } from './model.js';
export type { ForwardResult, ModelInfo, OutputKind } from './model.js';
export { fromNativeCode } from './native-errors.js';
export { DEFAULT_ADDON_PATH } from './binding.js';
export type { GpuMetric } from './binding.js';
