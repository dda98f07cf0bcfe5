/**
 * BYTES tensors as Triton carries them: each element is a 4-byte little-endian length followed by
 * that many bytes, elements one after another in row-major order. A Hearth BYTES tensor's `data`
 * holds exactly this serialized form, so it crosses HTTP binary and gRPC raw contents unchanged.
 *
 * @example
 * const t = bytesTensor([2], ['cat', 'dog']);
 * decodeBytes(t.data).map((b) => new TextDecoder().decode(b)); // ['cat', 'dog']
 */
import { InvalidInputError } from './errors.js';
import type { Tensor } from './tensor.js';

const encoder = new TextEncoder();

/** The serialized form of the elements (strings are UTF-8). */
export function encodeBytes(elements: readonly (string | Uint8Array)[]): Uint8Array {
  const parts = elements.map((e) => (typeof e === 'string' ? encoder.encode(e) : e));
  const out = new Uint8Array(parts.reduce((n, p) => n + 4 + p.byteLength, 0));
  const view = new DataView(out.buffer);
  let at = 0;
  for (const p of parts) {
    view.setUint32(at, p.byteLength, true);
    out.set(p, at + 4);
    at += 4 + p.byteLength;
  }
  return out;
}

/**
 * Checks a serialized BYTES buffer without building its elements: every length fits, and there are
 * `count` elements. Throws the TypeError decodeBytes would.
 */
export function checkBytes(data: Uint8Array, count: number): void {
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  let n = 0;
  for (let at = 0; at < data.byteLength; n++) {
    if (at + 4 > data.byteLength)
      throw new InvalidInputError(
        `BYTES element ${n}: ${data.byteLength - at} byte(s) left, too few for its 4-byte length`,
      );
    const length = view.getUint32(at, true);
    if (at + 4 + length > data.byteLength)
      throw new InvalidInputError(`BYTES element ${n} says ${length} byte(s) but ${data.byteLength - at - 4} are left`);
    at += 4 + length;
  }
  if (n !== count) throw new InvalidInputError(`the BYTES data holds ${n} element(s) but the shape needs ${count}`);
}

/**
 * The elements of a serialized BYTES buffer (views, no copy). Throws a TypeError naming the
 * element whose length runs past the end, or when `count` is given and does not match.
 */
export function decodeBytes(data: Uint8Array, count?: number): Uint8Array[] {
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const out: Uint8Array[] = [];
  let at = 0;
  while (at < data.byteLength) {
    if (at + 4 > data.byteLength)
      throw new InvalidInputError(
        `BYTES element ${out.length}: ${data.byteLength - at} byte(s) left, too few for its 4-byte length`,
      );
    const length = view.getUint32(at, true);
    if (at + 4 + length > data.byteLength)
      throw new InvalidInputError(
        `BYTES element ${out.length} says ${length} byte(s) but ${data.byteLength - at - 4} are left`,
      );
    out.push(data.subarray(at + 4, at + 4 + length));
    at += 4 + length;
  }
  if (count !== undefined && out.length !== count)
    throw new InvalidInputError(`the BYTES data holds ${out.length} element(s) but the shape needs ${count}`);
  return out;
}

export function bytesTensor(shape: number[], elements: readonly (string | Uint8Array)[]): Tensor<'BYTES'> {
  return { dtype: 'BYTES', shape, data: encodeBytes(elements) };
}
