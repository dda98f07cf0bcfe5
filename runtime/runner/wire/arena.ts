/**
 * The shared-memory arena between a node and one runner (a sealed memfd, native/src/arena.cc): the
 * node makes it when it spawns the runner, which inherits it as fd 4 and maps it. Each end writes
 * its outgoing blobs (request tensors and bodies one way, response tensors the other) into its own
 * half, and the channel's frame names them by offset (channel.ts); the bytes never cross the socket.
 *
 * Sparse: a page exists once written, and the first-fit allocator below reuses the lowest free
 * extents, so an arena holds about the largest set of bytes ever in flight at once. Where a half
 * has no room, a blob travels on the socket as before.
 *
 * Trust runs one way. The node checks every offset a runner names against the runner's half
 * before it copies the bytes out (it never hands a view of the arena to anything that could read
 * it while the runner rewrites it), and frees only extents it gave out itself; the runner cannot
 * shrink the memfd under the node's mapping (sealed), so no access of the node's faults.
 */
const ALIGN = 64;
const pad = (n: number): number => (n + ALIGN - 1) & ~(ALIGN - 1);

/** Bytes of an arena unless HEARTH_ARENA_MB says otherwise (0: none). Virtual: pages exist once written. */
export const DEFAULT_ARENA_MB = 256;
/** Blobs smaller than this go on the socket (an extent and its release cost more than the bytes). */
export const ARENA_MIN_BYTES = 1024;

/** A first-fit allocator of 64-byte-aligned extents of [from, to). */
export class Extents {
  /** Free extents as [start, end), sorted by start, none touching another. */
  readonly #free: [number, number][];
  /** Extents given out: start → size. */
  readonly #used = new Map<number, number>();
  #usedBytes = 0;
  /** Bytes it gives out at most at once (capArena): less than its span where a function's memory is small. */
  cap = Number.POSITIVE_INFINITY;

  constructor(
    readonly from: number,
    readonly to: number,
  ) {
    this.#free = to > from ? [[from, to]] : [];
  }

  /** Where `bytes` now live, or undefined where no free extent holds them. */
  alloc(bytes: number): number | undefined {
    const size = pad(Math.max(bytes, 1));
    if (this.#usedBytes + size > this.cap) return undefined;
    for (let i = 0; i < this.#free.length; i++) {
      const extent = this.#free[i]!;
      const [start, end] = extent;
      if (end - start < size) continue;
      if (end - start === size) this.#free.splice(i, 1);
      else extent[0] = start + size;
      this.#used.set(start, size);
      this.#usedBytes += size;
      return start;
    }
    return undefined;
  }

  /** Frees the extent given out at `at`; false (and nothing freed) for any other offset. */
  free(at: number): boolean {
    const size = this.#used.get(at);
    if (size === undefined) return false;
    this.#used.delete(at);
    this.#usedBytes -= size;
    const end = at + size;
    const free = this.#free;
    // The first free extent after it.
    let lo = 0;
    let hi = free.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (free[mid]![0] < at) lo = mid + 1;
      else hi = mid;
    }
    const before = free[lo - 1];
    const after = free[lo];
    if (before && before[1] === at) {
      before[1] = end;
      if (after && after[0] === end) {
        before[1] = after[1];
        free.splice(lo, 1);
      }
    } else if (after && after[0] === end) after[0] = at;
    else free.splice(lo, 0, [at, end]);
    return true;
  }

  /** Bytes given out now. */
  get used(): number {
    return this.#usedBytes;
  }
}

/** One end's view of the arena: the half it writes, the half the other end writes. */
export interface ArenaEnd {
  buffer: ArrayBuffer;
  /** Where this end writes its outgoing blobs. */
  out: Extents;
  /** The other end's half: [from, to). */
  in: { from: number; to: number };
  /**
   * Received blobs are copied out of the arena at once and their extents released (the node: what
   * a runner wrote is read once, by the node alone); otherwise they are views the receiver releases
   * when done with them (the runner: its node does not change what it sent).
   */
  copyIn: boolean;
}

/** The node's end of an arena of `buffer`: it writes the first half. */
export function nodeEnd(buffer: ArrayBuffer): ArenaEnd {
  const half = halfOf(buffer);
  return { buffer, out: new Extents(0, half), in: { from: half, to: buffer.byteLength }, copyIn: true };
}

/** A runner's end: it writes the second half. */
export function runnerEnd(buffer: ArrayBuffer): ArenaEnd {
  const half = halfOf(buffer);
  return { buffer, out: new Extents(half, buffer.byteLength), in: { from: 0, to: half }, copyIn: false };
}

/**
 * What one side may hold of its half for a function whose runner may use `runnerMemoryMb`: an
 * eighth of it. The pages a runner touches there count in its resident memory where no cgroup
 * charges them to the node (the RSS watch), so a burst of large requests must not end it.
 */
export function arenaCapBytes(runnerMemoryMb: number): number {
  return Math.floor((runnerMemoryMb * 2 ** 20) / 8);
}

const halfOf = (buffer: ArrayBuffer): number => Math.floor(buffer.byteLength / 2 / ALIGN) * ALIGN;
