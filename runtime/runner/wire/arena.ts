/**
 * The shared-memory arena between a node and one runner (a sealed memfd, native/src/arena.cc): the
 * node makes it when it spawns the runner, which inherits it as fd 4 and maps it. Each end writes
 * its outgoing blobs (request tensors and bodies one way, response tensors the other) into its own
 * half, and the channel's frame names them by offset (channel.ts); the bytes never cross the socket.
 *
 * Sparse: a page exists once written, and the first-fit allocator (Extents) reuses the lowest free
 * extents, so an arena holds about the largest set of bytes ever in flight at once. Where a half
 * has no room, a blob travels on the socket as before.
 *
 * Trust runs one way. The node checks every offset a runner names against the runner's half
 * before it copies the bytes out (it never hands a view of the arena to anything that could read
 * it while the runner rewrites it), and frees only extents it gave out itself; the runner cannot
 * shrink the memfd under the node's mapping (sealed), so no access of the node's faults.
 */
import { Extents } from '../../tensors/index.js';

const ALIGN = 64;

/** Bytes of an arena unless HEARTH_ARENA_MB says otherwise (0: none). Virtual: pages exist once written. */
export const DEFAULT_ARENA_MB = 256;
/** Blobs smaller than this go on the socket (an extent and its release cost more than the bytes). */
export const ARENA_MIN_BYTES = 1024;

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
