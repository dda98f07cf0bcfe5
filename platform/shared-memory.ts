/**
 * Triton's system shared memory extension: a client on the same host registers a POSIX shared
 * memory segment as a named region, then sends inputs from it and asks for outputs into it by
 * name, offset and size instead of carrying the bytes in the request.
 *
 * Regions belong to the API key that registered them (with no keys configured, to everyone): one
 * caller can neither see, read, write nor unregister another's. Keys are "/name" (no other "/"),
 * checked here and again natively, and only segments that already exist are opened.
 */
import { InvalidInputError, UnsupportedError } from '../sdk/errors.js';
import { mapSharedMemory } from '../runtime/index.js';
import type { DType, Tensor } from '../sdk/tensor.js';
import { bytesOf } from '../sdk/tensor.js';
import { tensorFromRaw } from './inference-tensors.js';

export interface RegionStatus {
  name: string;
  key: string;
  offset: number;
  byte_size: number;
}

interface Region extends RegionStatus {
  bytes: Uint8Array;
}

/** The caller's regions, for inputs read from and outputs written to them. */
export interface ShmContext {
  regions: SharedMemoryRegions;
  owner: string;
}

/** Where an input comes from or an output goes: a region, an offset into it, a size. */
export interface SharedMemoryRef {
  region: string;
  offset: number;
  byteSize: number;
}

const KEY = /^\/[A-Za-z0-9_.-]{1,250}$/;
const NAME = /^[A-Za-z0-9_.-]{1,128}$/;
/** Regions one caller may hold at once. */
const MAX_REGIONS = 256;

function integer(value: unknown, what: string, min: number): number {
  const n = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < min)
    throw new InvalidInputError(`${what} must be an integer ≥ ${min}`);
  return n;
}

export class SharedMemoryRegions {
  readonly #byOwner = new Map<string, Map<string, Region>>();

  /** `enabled` false: every register is refused (HEARTH_SYSTEM_SHARED_MEMORY). */
  constructor(readonly enabled = true) {}

  #regions(owner: string): Map<string, Region> {
    let regions = this.#byOwner.get(owner);
    if (!regions) {
      regions = new Map();
      this.#byOwner.set(owner, regions);
    }
    return regions;
  }

  register(owner: string, name: string, request: { key?: unknown; offset?: unknown; byte_size?: unknown }): void {
    if (!this.enabled)
      throw new UnsupportedError(
        'system shared memory is off on this node: it serves callers beyond this host (set HEARTH_SYSTEM_SHARED_MEMORY=on to allow it)',
      );
    if (!NAME.test(name))
      throw new InvalidInputError(`shared memory region name "${name}" must be letters, digits, "_", "-" or "."`);
    const key = request.key;
    if (typeof key !== 'string' || !KEY.test(key))
      throw new InvalidInputError(
        'key must name a POSIX shared memory segment: "/name" (letters, digits, "_", "-", ".")',
      );
    const offset = integer(request.offset ?? 0, 'offset', 0);
    const byteSize = integer(request.byte_size, 'byte_size', 1);
    const regions = this.#regions(owner);
    if (regions.has(name)) throw new InvalidInputError(`shared memory region '${name}' already in manager`);
    if (regions.size >= MAX_REGIONS)
      throw new InvalidInputError(
        `at most ${MAX_REGIONS} shared memory regions may be registered at once; unregister some first`,
      );
    const bytes = new Uint8Array(mapSharedMemory(key, offset, byteSize));
    regions.set(name, { name, key, offset, byte_size: byteSize, bytes });
  }

  /** Unregisters one region, or all of the owner's when no name is given; unknown names are no error (as in Triton). */
  unregister(owner: string, name?: string): void {
    if (name === undefined || name === '') this.#byOwner.delete(owner);
    else this.#byOwner.get(owner)?.delete(name);
  }

  status(owner: string, name?: string): RegionStatus[] {
    const regions = [...(this.#byOwner.get(owner)?.values() ?? [])];
    const found = name === undefined || name === '' ? regions : regions.filter((r) => r.name === name);
    if (name && found.length === 0)
      throw new InvalidInputError(`Unable to find system shared memory region: '${name}'`);
    return found.map(({ name: n, key, offset, byte_size }) => ({ name: n, key, offset, byte_size }));
  }

  /** The bytes a reference names, checked to lie inside its region. */
  view(owner: string, ref: SharedMemoryRef, what: string): Uint8Array {
    const region = this.#byOwner.get(owner)?.get(ref.region);
    if (!region) throw new InvalidInputError(`${what}: Unable to find system shared memory region: '${ref.region}'`);
    if (ref.offset + ref.byteSize > region.byte_size) {
      throw new InvalidInputError(
        `${what}: offset ${ref.offset} + byte size ${ref.byteSize} runs past shared memory region '${ref.region}' of ${region.byte_size} bytes`,
      );
    }
    return region.bytes.subarray(ref.offset, ref.offset + ref.byteSize);
  }
}

/** A tensor's shared-memory parameters (HTTP JSON numbers, or gRPC InferParameter values already unwrapped). */
export function sharedMemoryRef(
  parameters: Record<string, unknown> | undefined,
  what: string,
): SharedMemoryRef | undefined {
  const region = parameters?.shared_memory_region;
  if (region === undefined) return undefined;
  if (typeof region !== 'string') throw new InvalidInputError(`${what}: shared_memory_region must be a string`);
  return {
    region,
    byteSize: integer(parameters!.shared_memory_byte_size, `${what}: shared_memory_byte_size`, 0),
    offset: integer(parameters!.shared_memory_offset ?? 0, `${what}: shared_memory_offset`, 0),
  };
}

/**
 * An input read from the region its parameters name in the caller's regions, or undefined when they
 * name none (both transports read inputs so).
 */
export function sharedInput(
  name: string,
  dtype: DType,
  shape: number[],
  parameters: Record<string, unknown> | undefined,
  shm: ShmContext | undefined,
): Tensor | undefined {
  const what = `input '${name}'`;
  const ref = sharedMemoryRef(parameters, what);
  return ref && tensorFromRaw(name, dtype, shape, regionBytes(shm, ref, what), 'shared_memory_byte_size');
}

/** The bytes a reference names in the caller's regions. */
function regionBytes(shm: ShmContext | undefined, ref: SharedMemoryRef, what: string): Uint8Array {
  if (!shm) throw new InvalidInputError(`${what}: shared memory is not available here`);
  return shm.regions.view(shm.owner, ref, what);
}

/** Writes an output's bytes into the region its request named; refuses a region too small for them. */
export function writeToRegion(
  shm: ShmContext | undefined,
  ref: SharedMemoryRef,
  name: string,
  data: ArrayBufferView,
): void {
  const target = regionBytes(shm, ref, `output '${name}'`);
  if (target.byteLength < data.byteLength) {
    throw new InvalidInputError(
      `shared memory size specified with the request for output '${name}' (${target.byteLength} bytes) should be at least ${data.byteLength} bytes to hold the results`,
    );
  }
  target.set(bytesOf(data));
}
