/**
 * Triton's binary tensor data extension, both ways: a body is a JSON header of
 * `Inference-Header-Content-Length` bytes followed by each binary tensor's raw bytes, in the order
 * the header lists them (`parameters.binary_data_size`). The client encodes requests and decodes
 * responses with it; the node decodes requests and encodes responses.
 */
import { InvalidInputError } from './errors.js';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A body of `header` (as JSON) followed by `parts`; `headerLength` is its JSON's byte length. */
export function encodeBinary(
  header: unknown,
  parts: readonly Uint8Array[],
): { body: Uint8Array; headerLength: number } {
  const json = encoder.encode(JSON.stringify(header));
  const body = new Uint8Array(json.byteLength + parts.reduce((n, p) => n + p.byteLength, 0));
  body.set(json, 0);
  let at = json.byteLength;
  for (const p of parts) {
    body.set(p, at);
    at += p.byteLength;
  }
  return { body, headerLength: json.byteLength };
}

/**
 * A body read back: its JSON header (parsed; `what` names it in errors), and its binary tail taken
 * in order. Without a header length the whole body is JSON and has no tail.
 */
export class BinaryBody {
  readonly header: unknown;
  readonly #body: Uint8Array;
  readonly #headerLength: number | undefined;
  #at: number;

  /** `parse` reads the JSON header's bytes (default: UTF-8 and JSON.parse). */
  constructor(
    body: Uint8Array,
    headerLength: number | undefined,
    what: string,
    parse: (json: Uint8Array) => unknown = (json) => JSON.parse(decoder.decode(json)),
  ) {
    if (
      headerLength !== undefined &&
      (!Number.isInteger(headerLength) || headerLength < 0 || headerLength > body.byteLength)
    ) {
      throw new InvalidInputError(
        `Inference-Header-Content-Length ${headerLength} does not fit a body of ${body.byteLength} bytes`,
      );
    }
    try {
      this.header = parse(headerLength === undefined ? body : body.subarray(0, headerLength));
    } catch (error) {
      throw new InvalidInputError(`${what} is not valid JSON: ${(error as Error).message}`);
    }
    this.#body = body;
    this.#headerLength = headerLength;
    this.#at = headerLength ?? 0;
  }

  /** Whether the body has a binary tail (it came with a header length). */
  get binary(): boolean {
    return this.#headerLength !== undefined;
  }

  /** The next `size` bytes of the tail (a view), for the tensor `what` names. */
  take(size: unknown, what: string): Uint8Array {
    if (!Number.isInteger(size) || (size as number) < 0 || this.#at + (size as number) > this.#body.byteLength) {
      throw new InvalidInputError(`${what}: the body ends before its ${String(size)} bytes`, { reason: 'ERR_SHAPE' });
    }
    const bytes = this.#body.subarray(this.#at, this.#at + (size as number));
    this.#at += size as number;
    return bytes;
  }

  /** Refuses bytes left over past the tensors (`what`: whose binary data). */
  end(what: string): void {
    if (this.#headerLength !== undefined && this.#at !== this.#body.byteLength) {
      throw new InvalidInputError(
        `the body has ${this.#body.byteLength - this.#at} bytes past the ${what}' binary data`,
        { reason: 'ERR_SHAPE' },
      );
    }
  }
}
