/**
 * The node ↔ runner channel: length-prefixed frames on one Unix socket (the child's fd 3), their
 * large blobs in the shared-memory arena between the two (./arena.ts) where there is one.
 *
 * A frame is `u32 length · u32 header length · header (JSON) · blobs`, each blob starting on a
 * 64-byte boundary so a typed array can view it in place. Tensor data and request bodies travel as
 * blobs, never inside the JSON: in the arena (the header's `b` names each as [offset, bytes]) or,
 * small or where the arena has no room, after the header (`b` names its size). Copies of a
 * request's bytes on the way in: one, into the arena (the runner reads them in place there); on
 * the socket, one as they are written (the caller's buffer may serve another request once this
 * one is answered) and one more when a frame is gathered from the socket's chunks. When
 * frames leave: see send().
 *
 * An end frees the extents it wrote when the other end says it is done with them: a `~freed`
 * frame of the channel's own, sent before the next frame or within FREED_DELAY_MS.
 */
import type { Socket } from 'node:net';

import type { ArenaEnd } from './arena.js';
import { ARENA_MIN_BYTES } from './arena.js';

/** A message: its header (decoded by the receiving side's codec, ./protocol.ts) and the blobs it names by index. */
export interface Frame<M> {
  header: M;
  blobs: Uint8Array[];
  /** Gives the frame's blobs that are views of the arena back to their writer (call once done with them). */
  release?: () => void;
}

/** A blob in a header: its size (after the header) or [offset, size] in the arena. */
type BlobAt = number | [number, number];

/**
 * A blob to send: its bytes, or its parts in order (one blob made of several requests' rows,
 * written once into the arena or onto the socket, never gathered first).
 */
export type OutBlob = Uint8Array | readonly Uint8Array[];

const byteLength = (b: OutBlob): number =>
  b instanceof Uint8Array ? b.byteLength : b.reduce((n, part) => n + part.byteLength, 0);

/** The channel's own frame: the extents (offsets) of the receiver's half that the sender is done with. */
const FREED = '~freed';
/** How long released extents wait for a frame to ride with before they go alone. */
const FREED_DELAY_MS = 5;

const ALIGN = 64;
const pad = (n: number): number => (n + ALIGN - 1) & ~(ALIGN - 1);
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The largest frame an end takes by default (the length prefix could name 4 GiB). */
const MAX_FRAME_BYTES = 2 ** 31;

/**
 * One end of the channel: `send` frames of `Out`, `onFrame` for each frame received, its header
 * made an `In` by `decode`. A frame that does not parse or decode, or is larger than
 * maxFrameBytes (its blobs in the arena counted too), goes to `onMalformed` and the channel reads
 * no more: its length is refused before its bytes are gathered, and its arena blobs before they
 * are viewed or copied.
 */
export class Channel<In, Out extends { t: string }> {
  readonly #decode: (header: unknown) => In;
  readonly #socket: Socket;
  readonly #arena: ArenaEnd | undefined;
  /** Extents of the other end's half this end is done with, not yet said. */
  #freed: number[] = [];
  #freedTimer: NodeJS.Timeout | undefined;
  #corked = false;
  /** Bytes of the frame being gathered; its length once known. */
  #chunks: Buffer[] = [];
  #have = 0;
  /** The largest frame this end takes, its arena blobs included (a node sets its runner's: capFrames). */
  maxFrameBytes = MAX_FRAME_BYTES;

  /**
   * `onFrame` for each frame received; the frames of one chunk read from the socket are delivered
   * inside one call of `around` (the runner gathers them into one batching decision). `arena`: this
   * end of the shared memory, where the two processes have one.
   */
  constructor(
    socket: Socket,
    decode: (header: unknown) => In,
    onFrame: (frame: Frame<In>) => void,
    onMalformed: (why: string) => void = () => undefined,
    around: (deliver: () => void) => void = (deliver) => deliver(),
    arena?: ArenaEnd,
  ) {
    this.#socket = socket;
    this.#decode = decode;
    this.#arena = arena;
    const deliver = (): void => {
      while (this.#have >= 4) {
        const length = this.#peekLength();
        let frame: Frame<In> | undefined;
        try {
          if (length > this.maxFrameBytes) throw new Error(`a frame of ${length} bytes, past ${this.maxFrameBytes}`);
          if (this.#have < 4 + length) break;
          frame = this.#take(4 + length);
        } catch (error) {
          socket.off('data', onData);
          this.#chunks = [];
          onMalformed((error as Error).message);
          return;
        }
        if (frame) onFrame(frame);
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

  /** Cuts the next `total` bytes into a frame of its own, aligned buffer (undefined for the channel's own). */
  #take(total: number): Frame<In> | undefined {
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
    const { b: sizes = [], ...fields } = header as { b?: unknown; t?: unknown; at?: unknown };
    if (fields.t === FREED) {
      this.#takeFreed(fields);
      return undefined;
    }
    if (!Array.isArray(sizes)) throw new Error('a frame whose blob sizes are not a list');
    const blobs: Uint8Array[] = [];
    const inArena: number[] = [];
    const named = { bytes: 0 };
    let offset = pad(8 + headerLength);
    for (const size of sizes as unknown[]) {
      if (Array.isArray(size)) {
        blobs.push(this.#fromArena(size, inArena, named));
        continue;
      }
      if (!Number.isSafeInteger(size) || (size as number) < 0 || offset + (size as number) > total)
        throw new Error('a blob past the end of its frame');
      blobs.push(bytes.subarray(offset, offset + (size as number)));
      offset = pad(offset + (size as number));
    }
    const frame: Frame<In> = { header: this.#decode(fields), blobs };
    if (inArena.length > 0) {
      if (this.#arena!.copyIn) this.#release(inArena);
      else frame.release = () => this.#release(inArena.splice(0));
    }
    return frame;
  }

  /**
   * A blob the other end wrote in its half of the arena: checked there, copied out or viewed in
   * place. A frame names at most its half's bytes in all: naming the same bytes over and over
   * would cost the sender nothing and the receiver a copy each time.
   */
  #fromArena(at: unknown[], inArena: number[], named: { bytes: number }): Uint8Array {
    const arena = this.#arena;
    const [offset, size] = at;
    if (
      !arena ||
      at.length !== 2 ||
      !Number.isSafeInteger(offset) ||
      !Number.isSafeInteger(size) ||
      (offset as number) % 64 !== 0 ||
      (size as number) < 0 ||
      (offset as number) < arena.in.from ||
      (offset as number) + (size as number) > arena.in.to
    )
      throw new Error('a blob outside its half of the arena');
    named.bytes += size as number;
    if (named.bytes > arena.in.to - arena.in.from) throw new Error('a frame naming more than its half of the arena');
    if (named.bytes > this.maxFrameBytes)
      throw new Error(`a frame naming ${named.bytes} bytes, past ${this.maxFrameBytes}`);
    inArena.push(offset as number);
    const view = new Uint8Array(arena.buffer, offset as number, size as number);
    return arena.copyIn ? view.slice() : view;
  }

  /** The other end is done with these extents of this end's half. */
  #takeFreed(fields: { at?: unknown }): void {
    const out = this.#arena?.out;
    if (!out || !Array.isArray(fields.at)) throw new Error('a freed frame without an arena or offsets');
    // Offsets this end never gave out (or gave back already) are no one's: ignored.
    for (const at of fields.at) if (typeof at === 'number') out.free(at);
  }

  /** Says (soon, or with the next frame) that these extents of the other end's half are free again. */
  #release(extents: number[]): void {
    if (extents.length === 0) return;
    this.#freed.push(...extents);
    if (this.#freedTimer) return;
    this.#freedTimer = setTimeout(() => {
      this.#freedTimer = undefined;
      this.#sayFreed();
    }, FREED_DELAY_MS).unref();
  }

  #sayFreed(): void {
    if (this.#freed.length > 0) this.#write({ t: FREED, at: this.#freed.splice(0) }, []);
  }

  /**
   * Sends a frame. Where `eager` says so (nothing else outstanding: a lone request), the first
   * frame of a tick leaves at once (one writev) and frames sent after it in the same tick leave
   * together when the tick ends — held to the end of its tick, a lone request waited ~30-45 µs for
   * the rest of its HTTP handler. Otherwise (the other end is busy with earlier frames anyway) the
   * frames of a whole turn of the event loop — every request whose bytes arrived in it — leave
   * together after it (setImmediate): one write, one wake-up and one read of the other end for all.
   */
  send(header: Out, blobs: readonly OutBlob[] = []): void {
    // Released extents ride ahead of it, in the same writev.
    this.#sayFreed();
    this.#write(header, blobs);
  }

  #write(header: { t: string; at?: number[] }, blobs: readonly OutBlob[]): void {
    const sizes: BlobAt[] = [];
    const onSocket: OutBlob[] = [];
    for (const b of blobs) {
      const size = byteLength(b);
      const at = this.#toArena(b, size);
      if (at === undefined) {
        sizes.push(size);
        onSocket.push(b);
      } else sizes.push([at, size]);
    }
    const json = encoder.encode(JSON.stringify(blobs.length ? { ...header, b: sizes } : header));
    let length = pad(8 + json.length);
    for (const size of sizes) if (typeof size === 'number') length = pad(length + size);
    const head = Buffer.allocUnsafe(pad(8 + json.length));
    head.writeUInt32LE(length - 4, 0);
    head.writeUInt32LE(json.length, 4);
    head.set(json, 8);
    head.fill(0, 8 + json.length);
    // Corked either way, so a frame's parts leave in one writev.
    const opening = !this.#corked;
    if (opening) {
      this.#socket.cork();
      this.#corked = true;
    }
    this.#socket.write(head);
    for (const b of onSocket) {
      // Copied: the socket holds what it is given until the kernel takes it, and a caller's buffer
      // may be used again for another request once its reply is out (a node's reused body
      // buffers) — an end that answered before reading the frame must not get that request's bytes.
      for (const part of b instanceof Uint8Array ? [b] : b)
        if (part.byteLength > 0) this.#socket.write(Buffer.from(part));
      const size = byteLength(b);
      const gap = pad(size) - size;
      if (gap > 0) this.#socket.write(ZEROS.subarray(0, gap));
    }
    if (!opening) return;
    if (this.eager()) {
      this.#socket.uncork();
      this.#socket.cork();
      process.nextTick(this.#flush);
    } else setImmediate(this.#flush);
  }

  readonly #flush = (): void => {
    if (!this.#corked) return;
    this.#corked = false;
    this.#socket.uncork();
  };

  /** Lets the frames sent so far leave now. */
  flush(): void {
    this.#flush();
  }

  /** Whether a frame leaves in its own tick (true) or waits for the rest of the event loop's turn (send). */
  eager: () => boolean = () => true;

  /** Copies a large blob into this end's half of the arena; its offset, or undefined (it goes on the socket). */
  #toArena(b: OutBlob, size: number): number | undefined {
    const arena = this.#arena;
    if (!arena || size < ARENA_MIN_BYTES) return undefined;
    const at = arena.out.alloc(size);
    if (at === undefined) return undefined;
    let to = at;
    for (const part of b instanceof Uint8Array ? [b] : b) {
      new Uint8Array(arena.buffer, to, part.byteLength).set(part);
      to += part.byteLength;
    }
    return at;
  }

  /** Caps the bytes this end holds in its half of the arena at once (past it, blobs go on the socket). */
  capArena(bytes: number): void {
    if (this.#arena) this.#arena.out.cap = bytes;
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
