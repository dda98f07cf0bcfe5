/**
 * How requests that wait for a hook thread go to it in groups: one task, one crossing into the
 * isolate, for many requests (hook-pool.ts).
 */

/** Requests per pre task at most. */
export const MAX_PRE_GROUP = 64;
/**
 * A pre task's bodies in bytes at most (a request larger goes alone). A group's bodies are copied
 * several times on their way into the isolate and out (crossing.ts); 64 image tensors of 602 KB
 * made each copy a fresh 38 MB, past every cache and through the page allocator.
 */
export const MAX_PRE_GROUP_BYTES = 1 << 20;
/**
 * How many of `queued` requests the next free thread takes: an even share among the `free` threads
 * (so they run pre in parallel rather than one taking all), at most MAX_PRE_GROUP, and bodies of
 * MAX_PRE_GROUP_BYTES at most in all (`bytes(i)`: the i-th queued body's size) — but always the
 * first, however large.
 */
export function preGroupSize(queued: number, free: number, bytes: (i: number) => number): number {
  if (queued === 0) return 0;
  const share = Math.min(MAX_PRE_GROUP, Math.ceil(queued / Math.max(1, free)));
  let total = bytes(0);
  let n = 1;
  while (n < share && total + bytes(n) <= MAX_PRE_GROUP_BYTES) total += bytes(n++);
  return n;
}
