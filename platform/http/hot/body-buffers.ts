/**
 * Buffers for large request bodies, used again once a request is done with its own. Without them
 * each 602 KB image through KServe binary was a new ArrayBuffer, and V8 answers that much external
 * memory with major collections: at c=1 the node spent about as much CPU in its GC threads as on
 * the requests. Sizes are powers of two from 64 KiB; at most MAX_HELD_BYTES are kept idle.
 *
 * A buffer is given back only by the route that took it, after its response has been written out
 * (nothing reads the body then: neither the KServe infer route nor a function URL call answered
 * now keeps any part of a request past its reply; a job's body, which outlives its 202, is never
 * taken from here).
 */
const MIN_BYTES = 64 * 1024;
const MAX_HELD_BYTES = 64 * 2 ** 20;

export class BodyBuffers {
  readonly #free = new Map<number, ArrayBuffer[]>();
  #held = 0;

  /** A buffer of at least `bytes`, all zeros (a kept one was cleared when given back). */
  take(bytes: number): ArrayBuffer {
    const size = sizeClass(bytes);
    const kept = this.#free.get(size)?.pop();
    if (kept) {
      this.#held -= size;
      return kept;
    }
    return new ArrayBuffer(size);
  }

  /**
   * Keeps `buffer` for the next body of its size, unless enough are kept already; its first `used`
   * bytes are cleared first (no request's bytes are ever seen past the end of another's body).
   */
  give(buffer: ArrayBuffer, used: number): void {
    const size = buffer.byteLength;
    if (size !== sizeClass(size) || this.#held + size > MAX_HELD_BYTES) return;
    new Uint8Array(buffer, 0, Math.min(used, size)).fill(0);
    const list = this.#free.get(size);
    if (list) list.push(buffer);
    else this.#free.set(size, [buffer]);
    this.#held += size;
  }

  /** Bytes kept idle now. */
  get held(): number {
    return this.#held;
  }
}

function sizeClass(bytes: number): number {
  return bytes <= MIN_BYTES ? MIN_BYTES : 2 ** Math.ceil(Math.log2(bytes));
}
