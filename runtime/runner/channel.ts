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

/** A message: its header (decoded by the receiving side's codec, ./protocol.ts) and the blobs it names by index. */
export interface Frame<M> {
  header: M;
  blobs: Uint8Array[];
}

const ALIGN = 64;
const pad = (n: number): number => (n + ALIGN - 1) & ~(ALIGN - 1);
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The largest frame an end takes (the length prefix could name 4 GiB). */
const MAX_FRAME_BYTES = 2 ** 31;

/**
 * One end of the channel: `send` frames of `Out`, `onFrame` for each frame received, its header
 * made an `In` by `decode`. A frame that does not parse or decode, or is larger than
 * MAX_FRAME_BYTES, goes to `onMalformed` and the channel reads no more.
 */
export class Channel<In, Out extends { t: string }> {
  readonly #decode: (header: unknown) => In;
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
    decode: (header: unknown) => In,
    onFrame: (frame: Frame<In>) => void,
    onMalformed: (why: string) => void = () => undefined,
    around: (deliver: () => void) => void = (deliver) => deliver(),
  ) {
    this.#socket = socket;
    this.#decode = decode;
    const deliver = (): void => {
      while (this.#have >= 4) {
        const length = this.#peekLength();
        let frame: Frame<In>;
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
  #take(total: number): Frame<In> {
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
    const header: unknown = JSON.parse(decoder.decode(bytes.subarray(8, 8 + headerLength)));
    if (typeof header !== 'object' || header === null) throw new Error('a frame whose header is not an object');
    const { b: sizes = [], ...fields } = header as { b?: unknown };
    if (!Array.isArray(sizes)) throw new Error('a frame whose blob sizes are not a list');
    const blobs: Uint8Array[] = [];
    let offset = pad(8 + headerLength);
    for (const size of sizes) {
      if (!Number.isSafeInteger(size) || size < 0 || offset + size > total)
        throw new Error('a blob past the end of its frame');
      blobs.push(bytes.subarray(offset, offset + size));
      offset = pad(offset + size);
    }
    return { header: this.#decode(fields), blobs };
  }

  /**
   * Sends a frame. The first frame of a tick leaves at once (one writev); frames sent after it in
   * the same tick are corked and leave together when the tick ends. Held to the end of its tick,
   * a lone request waited ~30-45 µs for the rest of its HTTP handler before it left.
   */
  send(header: Out, blobs: Uint8Array[] = []): void {
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
