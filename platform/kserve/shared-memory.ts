/**
 * Triton's system shared memory extension: a client on the same host registers a POSIX shared
 * memory segment as a named region, then sends inputs from it and asks for outputs into it by
 * name, offset and size instead of carrying the bytes in the request.
 *
 * Regions belong to the API key that registered them (with no keys configured, to everyone): one
 * caller can neither see, read, write nor unregister another's. Registering needs a key of scope
 * `shm` (or admin). Keys are "/name" (no other "/"; under HEARTH_SHM_PREFIX when set), and only
 * segments that already exist, are plain files (no symbolic link followed) and belong to the
 * node's own user are opened: a caller cannot reach another user's segment through the node.
 *
 * A segment is read and written through its descriptor (pread, pwrite), never mapped: a segment
 * its owner truncates after registering it gives that request a 400, where a mapping would have
 * faulted the node with SIGBUS. Every access checks the segment's size first.
 */
import { closeSync, constants, fstatSync, openSync, readSync, writeSync } from 'node:fs';

import { InvalidInputError, PermissionDeniedError, UnsupportedError } from '../../sdk/errors.js';
import type { DType, Tensor } from '../../sdk/tensor.js';
import { allocate, bytesOf, elementSize, numel } from '../../sdk/tensor.js';
import { DEFAULT_TENANT } from '../config/index.js';
import { checkRawSize, tensorFromRaw } from './tensors.js';

export interface RegionStatus {
  name: string;
  key: string;
  offset: number;
  byte_size: number;
}

interface Region extends RegionStatus {
  /** The segment, open for reading and writing. */
  fd: number;
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

const KEY = /^\/(?!\.{1,2}$)[A-Za-z0-9_.-]{1,250}$/;
/** Where POSIX shared memory segments live on Linux (what shm_open opens). */
const SHM_DIR = '/dev/shm';
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

  /**
   * `enabled` false: every register is refused (HEARTH_SYSTEM_SHARED_MEMORY); `prefix`: keys must
   * start with it (HEARTH_SHM_PREFIX).
   */
  constructor(
    readonly enabled = true,
    readonly prefix = '',
    /** The node's tenants other than the default: a key `PREFIX` + `TENANT.` + … is that tenant's segment. */
    readonly tenants: readonly string[] = [],
  ) {}

  /**
   * Whose a segment is: `PREFIX` + `TENANT.` + … names one of tenant TENANT's (a tenant's name has no
   * "."), any other the default tenant's. A caller registers its own tenant's only (an admin any), so
   * one tenant never maps another's segment.
   */
  #tenantOfSegment(key: string): string {
    for (const t of this.tenants) if (key.startsWith(`${this.prefix}${t}.`)) return t;
    return DEFAULT_TENANT;
  }

  #regions(owner: string): Map<string, Region> {
    let regions = this.#byOwner.get(owner);
    if (!regions) {
      regions = new Map();
      this.#byOwner.set(owner, regions);
    }
    return regions;
  }

  register(
    owner: string,
    name: string,
    request: { key?: unknown; offset?: unknown; byte_size?: unknown },
    by: { tenant: string; admin: boolean } = { tenant: DEFAULT_TENANT, admin: true },
  ): void {
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
    if (!key.startsWith(this.prefix))
      throw new InvalidInputError(`key must start with "${this.prefix}" on this node (HEARTH_SHM_PREFIX)`);
    if (!by.admin && this.#tenantOfSegment(key) !== by.tenant)
      throw new PermissionDeniedError(
        by.tenant === DEFAULT_TENANT
          ? `"${this.prefix}TENANT." keys are those tenants' segments: name yours otherwise`
          : `this key's segments are named "${this.prefix}${by.tenant}.…" (its tenant's)`,
      );
    const offset = integer(request.offset ?? 0, 'offset', 0);
    const byteSize = integer(request.byte_size, 'byte_size', 1);
    const regions = this.#regions(owner);
    if (regions.has(name)) throw new InvalidInputError(`shared memory region '${name}' already in manager`);
    if (regions.size >= MAX_REGIONS)
      throw new InvalidInputError(
        `at most ${MAX_REGIONS} shared memory regions may be registered at once; unregister some first`,
      );
    const fd = openSegment(key, offset + byteSize);
    regions.set(name, { name, key, offset, byte_size: byteSize, fd });
  }

  /** Unregisters one region, or all of the owner's when no name is given; unknown names are no error (as in Triton). */
  unregister(owner: string, name?: string): void {
    const regions = this.#byOwner.get(owner);
    if (!regions) return;
    for (const r of regions.values()) {
      if (name !== undefined && name !== '' && r.name !== name) continue;
      closeSync(r.fd);
      regions.delete(r.name);
    }
    if (regions.size === 0) this.#byOwner.delete(owner);
  }

  /** Closes every region (the node closes). */
  close(): void {
    for (const owner of [...this.#byOwner.keys()]) this.unregister(owner);
  }

  status(owner: string, name?: string): RegionStatus[] {
    const regions = [...(this.#byOwner.get(owner)?.values() ?? [])];
    const found = name === undefined || name === '' ? regions : regions.filter((r) => r.name === name);
    if (name && found.length === 0)
      throw new InvalidInputError(`Unable to find system shared memory region: '${name}'`);
    return found.map(({ name: n, key, offset, byte_size }) => ({ name: n, key, offset, byte_size }));
  }

  /**
   * The region a reference names, checked to hold it, and where its bytes start in the segment —
   * checked against the segment's size now, so a segment truncated since its registration is a
   * 400 for this request.
   */
  #locate(owner: string, ref: SharedMemoryRef, what: string): { fd: number; position: number } {
    const region = this.#byOwner.get(owner)?.get(ref.region);
    if (!region) throw new InvalidInputError(`${what}: Unable to find system shared memory region: '${ref.region}'`);
    if (ref.offset + ref.byteSize > region.byte_size) {
      throw new InvalidInputError(
        `${what}: offset ${ref.offset} + byte size ${ref.byteSize} runs past shared memory region '${ref.region}' of ${region.byte_size} bytes`,
      );
    }
    const position = region.offset + ref.offset;
    const size = fstatSync(region.fd).size;
    if (size < position + ref.byteSize)
      throw new InvalidInputError(
        `${what}: shared memory region '${ref.region}' (${region.key}) now holds ${size} bytes, fewer than its registration's: it was truncated`,
      );
    return { fd: region.fd, position };
  }

  /** Reads the bytes a reference names into `into` (its byte size long). */
  read(owner: string, ref: SharedMemoryRef, what: string, into: Uint8Array): void {
    const { fd, position } = this.#locate(owner, ref, what);
    const n = ref.byteSize === 0 ? 0 : readSync(fd, into, 0, ref.byteSize, position);
    if (n !== ref.byteSize)
      throw new InvalidInputError(`${what}: shared memory region '${ref.region}' was truncated while it was read`);
  }

  /** Writes `bytes` where a reference names (at most its byte size). */
  write(owner: string, ref: SharedMemoryRef, what: string, bytes: Uint8Array): void {
    const { fd, position } = this.#locate(owner, ref, what);
    if (bytes.byteLength > 0) writeSync(fd, bytes, 0, bytes.byteLength, position);
  }
}

/**
 * Opens a segment by key: a plain file under /dev/shm (no symbolic link followed), of the node's own
 * user, holding at least `bytes`.
 */
function openSegment(key: string, bytes: number): number {
  let fd: number;
  try {
    fd = openSync(`${SHM_DIR}${key}`, constants.O_RDWR | constants.O_NOFOLLOW);
  } catch (error) {
    throw new InvalidInputError(
      `unable to open shared memory region "${key}": ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
    );
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new InvalidInputError(`shared memory region "${key}" is not a shared memory segment`);
    const uid = process.geteuid?.();
    if (uid !== undefined && st.uid !== uid)
      throw new InvalidInputError(
        `shared memory region "${key}" belongs to another user (uid ${st.uid}): the node maps only its own user's segments`,
      );
    if (st.size < bytes)
      throw new InvalidInputError(
        `shared memory region "${key}" holds ${st.size} bytes; offset + byte size (${bytes}) runs past it`,
      );
    return fd;
  } catch (error) {
    closeSync(fd);
    throw error;
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
  if (!ref) return undefined;
  const regions = regionsOf(shm, what);
  if (dtype === 'BYTES') {
    const bytes = new Uint8Array(ref.byteSize);
    regions.read(shm!.owner, ref, what, bytes);
    return tensorFromRaw(name, dtype, shape, bytes, 'shared_memory_byte_size');
  }
  // Read straight into the tensor's own (aligned) buffer: one copy, segment to tensor.
  checkRawSize(name, dtype, shape, ref.byteSize, 'shared_memory_byte_size');
  const data = allocate(dtype, numel(shape));
  regions.read(shm!.owner, ref, what, new Uint8Array(data.buffer, 0, numel(shape) * elementSize(dtype)));
  return { dtype, shape, data } as Tensor;
}

function regionsOf(shm: ShmContext | undefined, what: string): SharedMemoryRegions {
  if (!shm) throw new InvalidInputError(`${what}: shared memory is not available here`);
  return shm.regions;
}

/** Writes an output's bytes into the region its request named; refuses a region too small for them. */
export function writeToRegion(
  shm: ShmContext | undefined,
  ref: SharedMemoryRef,
  name: string,
  data: ArrayBufferView,
): void {
  const what = `output '${name}'`;
  const regions = regionsOf(shm, what);
  if (ref.byteSize < data.byteLength) {
    throw new InvalidInputError(
      `shared memory size specified with the request for output '${name}' (${ref.byteSize} bytes) should be at least ${data.byteLength} bytes to hold the results`,
    );
  }
  regions.write(shm!.owner, ref, what, bytesOf(data));
}
