/** The native LibTorch engine, typed. */

export type { GpuMetric, PackedJson, RawImageStep, RawPixels } from './binding.js';
export { addonLocation, DEFAULT_ADDON_PATH, preloadAddon, useAddonAt } from './binding.js';
export type { UsableCores } from './cores.js';
export { CORES_ENV, usableCores } from './cores.js';
export type { DeviceReport, LoadOptions } from './engine.js';
export {
  capCudaMemory,
  createArena,
  cudaMemory,
  DEFAULT_WARMUP_RUNS,
  devices,
  exitNow,
  gpuMetrics,
  imageEncode,
  imageInspect,
  imageRun,
  loadModel,
  mapArena,
  parseInferJson,
  parseInferJsonAsync,
  parseJsonPacked,
  prefault,
  setExecutorThreads,
  setIntraOpThreads,
  threadCpuClock,
  threads,
} from './engine.js';
export type { ForwardResult, ModelInfo, OutputKind } from './model.js';
export { Model } from './model.js';
export { fromNativeCode } from './native-errors.js';
