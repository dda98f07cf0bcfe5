/**
 * The raw native addon: its interface as C++ exposes it, and the one place that loads the `.node`.
 * Everything else goes through ./engine.ts, which turns these raw values into public types.
 *
 * HEARTH_NATIVE_ADDON names another build (for example one made against a CUDA LibTorch).
 */
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';

import type { EngineDType } from '../../sdk/tensor.js';

/** What the addon reads: dtype names are validated natively (an unknown one is ERR_DTYPE). */
export interface RawTensor {
  dtype: string;
  shape: readonly number[];
  data: ArrayBufferView;
}

export interface RawOutput {
  name: string;
  /** BYTES: a List[str] output, serialized as Triton's length-prefixed strings. */
  dtype: EngineDType | 'BYTES';
  shape: number[];
  data: ArrayBufferView;
}

export interface RawForwardResult {
  kind: 'tensor' | 'tuple' | 'list' | 'dict';
  outputs: RawOutput[];
}

export interface RawModelInfo {
  disposed: boolean;
  device?: string;
  inferenceMode?: boolean;
  optimizedExecution?: boolean;
  minInputs?: number;
  maxInputs?: number;
  argNames?: string[];
  argTypes?: string[];
  weightBytes?: number;
  loadMs?: number;
  warmupMs?: number;
  warmupRuns?: number;
  inflight?: number;
  instances?: number;
}

export interface RawModel {
  /**
   * dictKeys: the inputs go to forward() as one Dict[str, Tensor] under these names; threads > 0:
   * this forward's intra-op threads (the configured count otherwise, and again after it);
   * maxOutputBytes > 0: the bytes the outputs may take in all, checked before any is copied
   * (ERR_OUTPUT_SIZE past it).
   */
  forward(
    inputs: readonly RawTensor[],
    dictKeys?: readonly string[],
    threads?: number,
    maxOutputBytes?: number,
  ): Promise<RawForwardResult>;
  /** parts[i]: the pieces of input i, concatenated along dim 0 on the engine's thread. */
  forwardBatch(
    parts: readonly (readonly RawTensor[])[],
    dictKeys?: readonly string[],
    threads?: number,
    maxOutputBytes?: number,
  ): Promise<RawForwardResult>;
  share(): RawModel;
  dispose(): void;
  info(): RawModelInfo;
}

export interface RawDevice {
  id: string;
  kind: 'cpu' | 'cuda';
  name: string;
  memoryTotalBytes: number;
  memoryFreeBytes: number;
}

export interface RawDevices {
  torchVersion: string;
  cudaAvailable: boolean;
  cudaDeviceCount: number;
  cudaBuild: boolean;
  devices: RawDevice[];
}

/** One GPU as NVML reads it; a field NVML did not answer is absent. */
export interface GpuMetric {
  index: number;
  uuid?: string;
  name?: string;
  /** Of the last sample period, the fraction a kernel ran (0..1). */
  utilization?: number;
  memoryTotalBytes?: number;
  memoryUsedBytes?: number;
  powerWatts?: number;
}

/** One step of the addon's imageRun (runtime/hooks/images.ts makes them from a hook's transforms). */
export type RawImageStep =
  | { op: 'decode'; channels: number }
  | {
      op: 'resize';
      width: number;
      height: number;
      filter: 'nearest' | 'bilinear' | 'bicubic';
      antialias: boolean;
      /** Only this region of the resized image is made (a crop after the resize). */
      window?: { top: number; left: number; height: number; width: number };
    }
  | { op: 'crop'; top: number; left: number; height: number; width: number }
  | { op: 'gray'; channels: number }
  | { op: 'tensor'; layout: 'CHW' | 'HWC'; dtype: 'FP32' | 'UINT8'; mean?: number[]; std?: number[] };

/** Decoded pixels: rows top to bottom, channels interleaved. */
export interface RawPixels {
  width: number;
  height: number;
  channels: number;
  data: Uint8Array;
}

export interface RawAddon {
  load(
    source: string | ArrayBufferView,
    device: string,
    warmup: readonly RawTensor[],
    warmupRuns: number,
    execution: { inferenceMode?: boolean; optimizedExecution?: boolean; jitExecutor?: boolean; jitProfiling?: boolean },
  ): Promise<RawModel>;
  devices(): RawDevices;
  /** NVML's readings per GPU, loaded at run time; [] without the driver (absent in older builds). */
  gpuMetrics?(): GpuMetric[];
  /** Caps this process's CUDA caching allocator on a device (throws without CUDA). */
  setCudaMemoryFraction?(fraction: number, device: number): void;
  /** This process's caching allocator on a device; undefined without CUDA. */
  cudaMemory?(device: number): { allocatedBytes: number; reservedBytes: number } | undefined;
  setIntraOpThreads(count: number): void;
  setExecutorThreads(count: number): void;
  threads(): { intraOp: number; executor: number };
  /** Touches and frees `bytes` of heap on each CPU lane's thread (blocks until done). */
  prefault(bytes: number): void;
  /** Ends the process at once (_exit), with no teardown. */
  exitNow(code: number): never;
  /** The calling thread's CPU time so far, µs (absent in older builds). */
  threadCpuUs?(): number;
  /** A new memfd of `bytes`, sealed at that size, and this process's mapping of it (absent in older builds). */
  arenaCreate?(bytes: number): { fd: number; buffer: ArrayBuffer };
  /** A mapping of the sealed memfd `fd` (closed once mapped); throws unless it is one. */
  arenaMap?(fd: number): ArrayBuffer;
  /** The format and size an encoded image's header declares (ERR_IMAGE if it is none); absent in a build without libjpeg/libpng/libwebp. */
  imageInspect?(bytes: Uint8Array): { format: 'jpeg' | 'png' | 'webp'; width: number; height: number };
  /**
   * Decodes `input` (when it is bytes: the first step is decode) and runs the steps on it in one
   * call; a tensor step comes last. Every buffer is held to maxPixels and maxBytes (ERR_IMAGE).
   */
  imageRun?(
    input: Uint8Array | RawPixels,
    steps: readonly RawImageStep[],
    maxPixels: number,
    maxBytes: number,
  ): RawPixels | { dtype: 'FP32' | 'UINT8'; shape: number[]; data: Float32Array | Uint8Array };
  /** PNG or JPEG bytes of `pixels` (JPEG: 1 or 3 channels, quality 1-100). */
  imageEncode?(pixels: RawPixels, format: 'png' | 'jpeg', quality: number): Uint8Array;
  /**
   * A KServe JSON infer request parsed as JSON.parse would, with each `inputs[i].data` of numbers
   * as one Float64Array of its leaves; undefined where JSON.parse must do it. Absent in a build
   * without simdjson.
   */
  parseInferJson?(bytes: Uint8Array): unknown;
  /** parseInferJson with the parse on libuv's threads. */
  parseInferJsonAsync?(bytes: Uint8Array): Promise<unknown>;
  /** Any JSON document with its arrays of numbers packed (engine.ts parseJsonPacked says how). */
  parseJsonPacked?(bytes: Uint8Array, minLeaves: number): PackedJson | undefined;
}

/**
 * JSON.parse's value with each outermost rectangular array of numbers (of enough leaves) left as
 * null: its leaves are in `numbers` from `at`, in `shape`, at `path` (keys and indexes from the top).
 */
export interface PackedJson {
  value: unknown;
  numbers: Float64Array;
  packs: [path: (string | number)[], at: number, shape: number[]][];
}

/** Where `npm run build:native` puts the addon. */
export const DEFAULT_ADDON_PATH = fileURLToPath(
  new URL('../../native/build/Release/hearth_native.node', import.meta.url),
);

let addon: RawAddon | undefined;
let addonPath: string | undefined;

/** Where this thread loads the addon from, when it is not where its environment or file says (a hook thread's). */
export function useAddonAt(path: string): void {
  addonPath = path;
}

/**
 * Loads the addon (with LibTorch: ~0.5 s here) on a thread of its own, beside whatever this thread
 * does meanwhile (a starting node loads its modules); the library stays mapped for the process, so
 * this thread's own load later is quick. Its failure is left to that load to report.
 */
export function preloadAddon(): void {
  const worker = new Worker('try { require(process.argv[2]); } catch {}', {
    eval: true,
    argv: [addonLocation()],
    stdout: true,
    stderr: true,
  });
  worker.unref();
  worker.on('error', () => undefined);
}

/** The path this thread loads the addon from. */
export function addonLocation(): string {
  return addonPath ?? process.env.HEARTH_NATIVE_ADDON ?? DEFAULT_ADDON_PATH;
}

export function native(): RawAddon {
  if (addon === undefined) {
    const path = addonLocation();
    try {
      addon = createRequire(import.meta.url)(path) as RawAddon;
    } catch (cause) {
      throw new Error(
        `cannot load Hearth's native addon at ${path}: run \`npm run build:native\` (or infra/bootstrap.sh) first`,
        { cause },
      );
    }
  }
  return addon;
}
