/**
 * How far a Hearth process's V8 heap grows between full collections: to four times what the last
 * one left live (V8's own largest factor; it picks 1.1–4 by its measured GC speed, ~1.7 here).
 *
 * V8 counts every ArrayBuffer made since the last mark-compact against the old generation's limit
 * (Heap::OldGenerationSpaceAvailable), and starts marking once what is left is under the young
 * generation's size. A request's bytes are ArrayBuffers — a body, a reply cut out of the arena, a
 * tensor — so with the node's ~37 MB live and its limit at ~64 MB, about 11 MB of them started a
 * full marking of the whole heap: at 2,000 JSON calls a second, seven a second, and GC took 21–47% of
 * the node's CPU. Both processes that carry requests, the node and its runners, set this first.
 *
 * What it costs is memory: a heap may hold up to four times what it keeps before it collects (the
 * node's heap, committed, went from ~72 to ~115 MB under load). V8 still keeps each limit under
 * halfway to the heap's maximum, which Node sizes from the memory its cgroup allows.
 */
import { setFlagsFromString } from 'node:v8';

export const HEAP_GROWTH_FLAG = '--heap-growing-percent=300';

/** Sets HEAP_GROWTH_FLAG in this process (read at each collection, so it holds from the next one). */
export function growHeapsFurther(): void {
  setFlagsFromString(HEAP_GROWTH_FLAG);
}
