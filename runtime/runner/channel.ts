/**
 * The node ↔ runner channel: length-prefixed frames on one Unix socket (the child's fd 3).
 *
 * A frame is `u32 length · u32 header length · header (JSON) · blobs`, each blob starting on a
 * 64-byte boundary so a typed array can view it in place. Tensor data and request bodies travel as
 * blobs, never inside the JSON. Copies of a request's bytes on the way in: one, when a frame is
 * gathered from the socket's chunks into its own buffer (views over it reach the batcher, whose
 * concatenation into the batch is the copy it makes anyway). The first frame written in a tick
 * leaves at once; the frames written after it in that tick leave together in one writev.
 */
import type { Socket } from 'node:net';

import type { HearthError } from '../../sdk/errors.js';
import { errorFromBody, InferenceError } from '../../sdk/errors.js';
import type { HookTensors } from '../../sdk/hook.js';
import type { DType, Tensor } from '../../sdk/tensor.js';
import { bytesOf, elementSize, isDType, numel, viewAs } from '../../sdk/tensor.js';

export type Header = Record<string, unknown> & { t: string };

/** A message: its header and the blobs its header points at by index. */
export interface Frame {
  header: Header;
  blobs: Uint8Array[];
}

const ALIGN = 64;
const pad = (n: number): number => (n + ALIGN - 1) & ~(ALIGN - 1);
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A tensor in a header: its data is blob `blob`. */
interface WireTensor {
  dtype: DType;
  shape: number[];
  blob: number;
}

/** Tensors as header fields plus blobs (appended to `blobs`). */
export function packTensors(tensors: HookTensors, blobs: Uint8Array[]): Record<string, WireTensor> {
  const out: Record<string, WireTensor> = {};
  for (const [name, t] of Object.entries(tensors)) {
    out[name] = { dtype: t.dtype, shape: t.shape, blob: blobs.length };
    blobs.push(bytesOf(t.data));
  }
  return out;
}

/** Tensors back from header fields and blobs; one whose blob does not hold its shape is refused. */
export function unpackTensors(wire: Record<string, WireTensor>, blobs: Uint8Array[]): HookTensors {
  const out: HookTensors = {};
  for (const [name, w] of Object.entries(wire)) {
    const b = blobs[w.blob];
    const shapeOk = Array.isArray(w.shape) && w.shape.every((d) => Number.isSafeInteger(d) && d >= 0);
    if (
      !b ||
      !isDType(w.dtype) ||
      !shapeOk ||
      (w.dtype !== 'BYTES' && numel(w.shape) * elementSize(w.dtype) !== b.byteLength)
    ) {
      throw new InferenceError(`tensor "${name}" came back malformed from the runner`);
    }
    out[name] = { dtype: w.dtype, shape: w.shape, data: viewAs(w.dtype, b) } as Tensor;
  }
  return out;
}

/** An error as a header field, and back as its class (the code picks the class). */
export interface WireError {
  code: string;
  error: string;
  reason?: string;
}

export function packError(error: HearthError): WireError {
  return { code: error.code, error: error.message, ...(error.reason === undefined ? {} : { reason: error.reason }) };
}

export function unpackError(wire: WireError): HearthError {
  const e = errorFromBody(wire);
  if (wire.reason !== undefined) Object.defineProperty(e, 'reason', { value: wire.reason });
  return e;
}

/** The largest frame an end takes (the length prefix could name 4 GiB). */
const MAX_FRAME_BYTES = 2 ** 31;

/**
 * One end of the channel: `send` frames, `onFrame` for each frame received. A frame that does not
 * parse, or is larger than MAX_FRAME_BYTES, goes to `onMalformed` and the channel reads no more.
 */
export class Channel {
  readonly #socket: Socket;
  #corked = false;
  /** Bytes of the frame being gathered; its length once known. */
  #chunks: Buffer[] = [];
  #have = 0;

  /**
   * `onFrame` for each frame received; the frames of one chunk read from the socket are delivered
   * inside one call of `around` (the runner gathers them into one batching decision).
   */
  constructor(
    socket: Socket,
    onFrame: (frame: Frame) => void,
    onMalformed: (why: string) => void = () => undefined,
    around: (deliver: () => void) => void = (deliver) => deliver(),
  ) {
    this.#socket = socket;
    const deliver = (): void => {
      while (this.#have >= 4) {
        const length = this.#peekLength();
        let frame: Frame;
        try {
          if (length > MAX_FRAME_BYTES) throw new Error(`a frame of ${length} bytes, past ${MAX_FRAME_BYTES}`);
          if (this.#have < 4 + length) break;
          frame = this.#take(4 + length);
        } catch (error) {
          socket.off('data', onData);
          this.#chunks = [];
          onMalformed((error as Error).message);
          return;
        }
        onFrame(frame);
      }
    };
    const onData = (chunk: Buffer): void => {
      this.#chunks.push(chunk);
      this.#have += chunk.length;
      around(deliver);
    };
    socket.on('data', onData);
    // A socket error (the other process died with bytes unread: ECONNRESET, EPIPE) is that
    // process's end, which its owner handles (the runner's exit, onClose); unheard, the error
    // event would throw and take this process down with it.
    socket.on('error', () => undefined);
  }

  #peekLength(): number {
    const first = this.#chunks[0]!;
    if (first.length >= 4) return first.readUInt32LE(0);
    return Buffer.concat(this.#chunks, 4).readUInt32LE(0);
  }

  /** Cuts the next `total` bytes into a frame of its own, aligned buffer. */
  #take(total: number): Frame {
    const bytes = new Uint8Array(new ArrayBuffer(total));
    let at = 0;
    while (at < total) {
      const chunk = this.#chunks[0]!;
      const n = Math.min(chunk.length, total - at);
      bytes.set(chunk.subarray(0, n), at);
      at += n;
      if (n === chunk.length) this.#chunks.shift();
      else this.#chunks[0] = chunk.subarray(n);
    }
    this.#have -= total;
    const view = new DataView(bytes.buffer);
    const headerLength = view.getUint32(4, true);
    const header = JSON.parse(decoder.decode(bytes.subarray(8, 8 + headerLength))) as Header & { b?: number[] };
    if (typeof header !== 'object' || header === null || typeof header.t !== 'string')
      throw new Error('a frame without a type');
    const blobs: Uint8Array[] = [];
    let offset = pad(8 + headerLength);
    for (const size of header.b ?? []) {
      if (!Number.isSafeInteger(size) || size < 0 || offset + size > total)
        throw new Error('a blob past the end of its frame');
      blobs.push(bytes.subarray(offset, offset + size));
      offset = pad(offset + size);
    }
    delete header.b;
    return { header, blobs };
  }

  /**
   * Sends a frame. The first frame of a tick leaves at once (one writev); frames sent after it in
   * the same tick are corked and leave together when the tick ends. Held to the end of its tick,
   * a lone request waited ~30-45 µs for the rest of its HTTP handler before it left.
   */
  send(header: Header, blobs: Uint8Array[] = []): void {
    const json = encoder.encode(
      JSON.stringify(blobs.length ? { ...header, b: blobs.map((b) => b.byteLength) } : header),
    );
    let length = pad(8 + json.length);
    for (const b of blobs) length = pad(length + b.byteLength);
    const head = Buffer.allocUnsafe(pad(8 + json.length));
    head.writeUInt32LE(length - 4, 0);
    head.writeUInt32LE(json.length, 4);
    head.set(json, 8);
    head.fill(0, 8 + json.length);
    // Corked (once per tick) either way, so a frame's parts leave in one writev.
    const first = !this.#corked;
    if (first) this.#socket.cork();
    this.#socket.write(head);
    for (const b of blobs) {
      if (b.byteLength > 0) this.#socket.write(b);
      const gap = pad(b.byteLength) - b.byteLength;
      if (gap > 0) this.#socket.write(ZEROS.subarray(0, gap));
    }
    if (!first) return;
    this.#socket.uncork();
    this.#corked = true;
    this.#socket.cork();
    process.nextTick(() => {
      this.#corked = false;
      this.#socket.uncork();
    });
  }

  /** Called once when the other end goes away (or the socket fails). */
  onClose(fn: () => void): void {
    let called = false;
    const once = (): void => {
      if (called) return;
      called = true;
      fn();
    };
    this.#socket.on('close', once);
    this.#socket.on('error', once);
  }

  /** Whether the channel keeps the process alive (only while replies are awaited). */
  hold(on: boolean): void {
    if (on) this.#socket.ref();
    else this.#socket.unref();
  }

  close(): void {
    this.#socket.destroy();
  }
}

const ZEROS = new Uint8Array(ALIGN);
