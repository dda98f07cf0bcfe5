/**
 * A first-fit allocator of byte extents: the runner arena's halves (runtime/runner/wire/arena.ts)
 * and a hook pool's exchange with its threads (runtime/hooks/exchange.ts).
 */
const ALIGN = 64;
const pad = (n: number): number => (n + ALIGN - 1) & ~(ALIGN - 1);

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
