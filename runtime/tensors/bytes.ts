/**
 * Buffers a request's bytes are copied into, made without zero-filling them first: `new
 * Uint8Array(n)` and `slice()` write every byte twice (calloc's zeros, then the copy), and for a
 * 602 KB image through a hook that was one pass of memset per copy (~10% of the hook lane's CPU in
 * a perf profile). Every byte of what these return is written before anyone reads it: a caller that
 * leaves gaps (alignment) zeroes them itself, so no earlier bytes of this process ever show through.
 */

/** `size` bytes in an ArrayBuffer of their own, not yet written: the caller writes every one. */
export function unfilled(size: number): Uint8Array {
  const b = Buffer.allocUnsafeSlow(size);
  return new Uint8Array(b.buffer, b.byteOffset, size);
}

/** A copy of `bytes` in an ArrayBuffer of its own (what `bytes.slice()` gives, without its zeros first). */
export function copyOf(bytes: Uint8Array): Uint8Array {
  const out = unfilled(bytes.byteLength);
  out.set(bytes);
  return out;
}

/** Whether `view` is the whole of an ArrayBuffer (not a SharedArrayBuffer) of its own: one that can be moved. */
export function ownsWholeBuffer(view: ArrayBufferView): view is ArrayBufferView & { buffer: ArrayBuffer } {
  return view.buffer instanceof ArrayBuffer && view.byteOffset === 0 && view.byteLength === view.buffer.byteLength;
}
