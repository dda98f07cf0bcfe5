/**
 * The engine: load TorchScript models onto a device, report devices, set threads.
 *
 * @example
 * const model = await loadModel('model.pt', { device: 'cpu', warmup: { inputs: [x], runs: 3 } });
 * const { outputs } = await model.forward([x]);
 */
import { markAsUntransferable } from 'node:worker_threads';

import type { Tensor } from '../../sdk/tensor.js';
import type { GpuMetric, PackedJson, RawAddon, RawDevices } from './binding.js';
import { native } from './binding.js';
import { Model } from './model.js';
import { fromNativeCode } from './native-errors.js';

export interface LoadOptions {
  /** `cpu`, `cuda`, `cuda:N`, or `model` (the devices it was saved on; inputs on the CPU). Default `cpu`. */
  device?: string;
  /** How forward runs: InferenceMode (default) or NoGradGuard, graph optimisations, JIT executor switches. */
  execution?: { inferenceMode?: boolean; optimizedExecution?: boolean; jitExecutor?: boolean; jitProfiling?: boolean };
  /**
   * Example inputs run through the model after loading: TorchScript's profiling executor makes the
   * first calls many times slower, so a model is warm only after a few passes. Default 3 runs.
   */
  warmup?: { inputs: readonly Tensor[]; runs?: number };
}

export const DEFAULT_WARMUP_RUNS = 3;

/** Loads a TorchScript module from a file path or from its bytes, calls eval() and warms it up. */
export async function loadModel(source: string | Uint8Array, options: LoadOptions = {}): Promise<Model> {
  try {
    const raw = await native().load(
      source,
      options.device ?? 'cpu',
      options.warmup?.inputs ?? [],
      options.warmup === undefined ? 0 : (options.warmup.runs ?? DEFAULT_WARMUP_RUNS),
      options.execution ?? {},
    );
    return new Model(raw);
  } catch (error) {
    throw fromNativeCode(error);
  }
}

export type DeviceReport = RawDevices;

/** CUDA availability, device names and memory (free/total), and the CPU's memory. */
export function devices(): DeviceReport {
  return native().devices();
}

/** Each GPU's utilization, memory and power as NVML reads them now: [] on a machine without one. */
export function gpuMetrics(): GpuMetric[] {
  return native().gpuMetrics?.() ?? [];
}

const cudaIndex = (device: string): number | undefined => {
  const m = /^cuda(?::(\d+))?$/.exec(device);
  return m ? Number(m[1] ?? 0) : undefined;
};

/** Caps this process's CUDA caching allocator on `device` (cuda:N) at `bytes` of its `totalBytes`. */
export function capCudaMemory(device: string, bytes: number, totalBytes: number): void {
  const index = cudaIndex(device);
  if (index === undefined) return;
  const call = native().setCudaMemoryFraction;
  if (!call) throw new Error('this build of the addon cannot cap CUDA memory');
  call(Math.min(1, bytes / totalBytes), index);
}

/** What this process's CUDA caching allocator holds on `device` (undefined off CUDA). */
export function cudaMemory(device: string): { allocatedBytes: number; reservedBytes: number } | undefined {
  const index = cudaIndex(device);
  return index === undefined ? undefined : native().cudaMemory?.(index);
}

function mapped<T>(call: () => T): T {
  try {
    return call();
  } catch (error) {
    throw fromNativeCode(error);
  }
}

/** LibTorch's intra-op (OpenMP) threads used by each forward. */
export function setIntraOpThreads(count: number): void {
  mapped(() => native().setIntraOpThreads(count));
}

/** The engine's own threads, where loads and forwards run: at most this many forwards run at once. Grows only. */
export function setExecutorThreads(count: number): void {
  mapped(() => native().setExecutorThreads(count));
}

export function threads(): { intraOp: number; executor: number } {
  return native().threads();
}

/**
 * Touches and frees `bytes` of heap on each CPU lane's thread, so a process's first model load and
 * forward reuse pages that are already mapped instead of faulting them in (a spare runner does
 * this while it waits). Blocks until done.
 */
export function prefault(bytes: number): void {
  mapped(() => native().prefault(bytes));
}

/**
 * Ends this process at once with `code`, skipping Node's teardown: what a runner does when it is
 * done (teardown would wait for a hung forward, and end hook threads inside their isolates, which
 * isolated-vm answers with an abort whose lines would bury the runner's own in its function's log).
 */
export function exitNow(code: number): never {
  return native().exitNow(code);
}

/**
 * A clock of the calling thread's CPU time (µs): the addon's, or the wall clock where the addon is
 * older or absent. Taken once; each call is a read of the clock.
 */
export function threadCpuClock(): () => number {
  try {
    const read = native().threadCpuUs;
    if (read) return () => read();
  } catch {
    // No addon here (a hook thread in a process without one): the wall clock.
  }
  return () => performance.now() * 1000;
}

/**
 * A shared-memory arena of `bytes` (a sealed memfd: its size never changes) and this process's
 * mapping of it; undefined where the addon has none. Its fd is for one child (stdio), then closed.
 */
export function createArena(bytes: number): { fd: number; buffer: ArrayBuffer } | undefined {
  const create = native().arenaCreate;
  if (!create) return undefined;
  const arena = create(bytes);
  markAsUntransferable(arena.buffer);
  return arena;
}

/** The arena this process inherited as `fd`, mapped (a runner's: runtime/runner/wire/arena.ts). */
export function mapArena(fd: number): ArrayBuffer {
  const map = native().arenaMap;
  if (!map) throw new Error('this addon has no arenas (rebuild it: npm run build:native)');
  const buffer = map(fd);
  markAsUntransferable(buffer);
  return buffer;
}

const utf8 = new TextDecoder();

/**
 * Below this many bytes JSON.parse is quicker: measured alone, a 158-byte binary-extension header
 * 5.4 µs natively against 2.1 µs, a 1.3 KB body of 64 numbers 5.5 against 8.5, 20 KB of 1024
 * numbers 31-34 against 111-123 (JSON.parse, flattening and the typed array).
 */
const NATIVE_JSON_FROM = 1024;

/**
 * A KServe JSON infer request body, parsed as JSON.parse parses it, except that each
 * `inputs[i].data` that is an array of numbers (nested or flat) comes as one Float64Array of its
 * leaves in order — where the addon has simdjson (a few ms for a 3 MB image against JSON.parse's
 * ~20-28 ms, and no heap number per element). Anything its parse could read differently (a body
 * that is not JSON, a lone surrogate, a "__proto__" key, "-0", integers past 64 bits) is left to
 * JSON.parse, which also throws its own SyntaxError. A body nested deeper than 1024 levels is
 * InvalidInputError: JSON.parse would read it, but on the JS thread, for as long as it is deep.
 */
export function parseInferJson(bytes: Uint8Array): unknown {
  let parsed: unknown;
  try {
    parsed = bytes.byteLength < NATIVE_JSON_FROM ? undefined : native().parseInferJson?.(bytes);
  } catch (error) {
    throw fromNativeCode(error);
  }
  return orJsonParse(parsed, bytes);
}

/** Arrays of fewer numbers are made by the parse as they are (packing them costs more than it saves). */
const PACKED_FROM_LEAVES = 16;

/** The addon's parseJsonPacked on this thread: null where it has none (looked up once). */
let packedParse: RawAddon['parseJsonPacked'] | null | undefined;

/**
 * A JSON body for a hook's request.json (any document, not only KServe's), parsed natively with
 * its arrays of numbers packed into one Float64Array (PackedJson) — a 20 KB body of 1024 numbers
 * in ~36 µs against JSON.parse's ~90, a 3 MB image in ~6 ms against ~17-21 — for the isolate to
 * rebuild as JSON.parse would have made it. undefined where JSON.parse must read it (the body is
 * small, the addon has no simdjson, or the parse could differ: runtime/engine/binding.ts).
 */
export function parseJsonPacked(bytes: Uint8Array): PackedJson | undefined {
  if (bytes.byteLength < NATIVE_JSON_FROM) return undefined;
  if (packedParse === undefined) {
    try {
      packedParse = native().parseJsonPacked ?? null;
    } catch {
      packedParse = null;
    }
  }
  try {
    return packedParse?.(bytes, PACKED_FROM_LEAVES) ?? undefined;
  } catch {
    return undefined;
  }
}

/** The addon's value, or JSON.parse's where the addon left the body to it. */
const orJsonParse = (parsed: unknown, bytes: Uint8Array): unknown =>
  parsed === undefined ? JSON.parse(utf8.decode(bytes)) : parsed;

/** From this size on the parse leaves the event loop: a 3 MB image body takes ~5-9 ms to parse. */
const OFF_LOOP_FROM = 256 * 1024;

/**
 * parseInferJson, with a large body parsed on libuv's threads: the event loop makes only the
 * resulting JS value (the numbers come as one Float64Array), so it keeps serving other requests.
 */
export async function parseInferJsonAsync(bytes: Uint8Array): Promise<unknown> {
  const parse = bytes.byteLength < OFF_LOOP_FROM ? undefined : native().parseInferJsonAsync;
  if (!parse) return parseInferJson(bytes);
  let parsed: unknown;
  try {
    parsed = await parse(bytes);
  } catch (error) {
    throw fromNativeCode(error);
  }
  return orJsonParse(parsed, bytes);
}

type ImageAddon = Required<Pick<RawAddon, 'imageInspect' | 'imageRun' | 'imageEncode'>>;

/** The addon's image functions, each failure as a typed error (ERR_IMAGE: the caller's input). */
function imageAddon<K extends keyof ImageAddon>(name: K): ImageAddon[K] {
  const f = native()[name];
  if (!f)
    throw new Error('this build of the native addon has no image functions (it needs libjpeg, libpng and libwebp)');
  return ((...args: unknown[]) => {
    try {
      return (f as (...a: unknown[]) => unknown)(...args);
    } catch (error) {
      throw fromNativeCode(error);
    }
  }) as ImageAddon[K];
}

/** The format and size an encoded image's header declares. */
export const imageInspect: ImageAddon['imageInspect'] = (bytes) => imageAddon('imageInspect')(bytes);
/** Decodes (when given bytes) and runs image steps in one native call, bounded by the limits. */
export const imageRun: ImageAddon['imageRun'] = (input, steps, maxPixels, maxBytes) =>
  imageAddon('imageRun')(input, steps, maxPixels, maxBytes);
/** PNG or JPEG bytes of pixels. */
export const imageEncode: ImageAddon['imageEncode'] = (pixels, format, quality) =>
  imageAddon('imageEncode')(pixels, format, quality);
