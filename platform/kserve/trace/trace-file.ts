/**
 * Where a node's traces are written: a file in the folder its operator configured
 * (HEARTH_TRACE_DIR, by default `<data dir>/traces`), never one a caller names. As Triton writes
 * it: a JSON array of trace records; with a log frequency, groups of traces in indexed files beside
 * it (`trace.json.0`, `trace.json.1`, …). Unlike Triton, which writes the main file when it shuts
 * down, each trace is appended as it ends and the file is a whole JSON array after every write.
 *
 * Writes are queued one after another off the request's path. What the trace files hold on disk
 * is bounded (`maxBytes`, in bytes, and `maxFiles`), as a rotated log is: the main file is moved aside to
 * `trace.prev.json` once it holds half the bound (replacing the one before), and the
 * oldest files (the one moved aside, then the oldest indexed files) are removed to make room for
 * new traces. Whoever traces, the newest traces are always written: no tenant's traffic can use up
 * the node's tracing until a restart.
 */
import type { FileHandle } from 'node:fs/promises';
import { mkdir, open, rename, unlink, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';

export interface TraceFileLog {
  info(o: object, msg?: string): void;
  warn(o: object, msg?: string): void;
  debug(o: object, msg?: string): void;
}

/** The most the node's trace files hold on disk together, unless configured otherwise. */
export const TRACE_MAX_BYTES = 256 * 2 ** 20;

/**
 * The most files the node's traces are kept in, unless configured otherwise: a setting of
 * log_frequency 1 writes a file per request, and small files would otherwise fill the bound in
 * bytes only after millions of them (inodes, and an entry each in `#older`).
 */
export const TRACE_MAX_FILES = 10_000;
/** The most traces waiting to be written may hold (bytes): past it, while the disk is behind, traces are dropped. */
export const TRACE_QUEUE_BYTES = 16 * 2 ** 20;

/** A file written and closed: removed, oldest first, to make room. */
interface Written {
  path: string;
  bytes: number;
}

export class TraceFile {
  readonly #dir: string;
  readonly #path: string;
  readonly #prev: string;
  readonly #maxBytes: number;
  readonly #maxFiles: number;
  readonly #log: TraceFileLog | undefined;
  #queue: Promise<void> = Promise.resolve();
  #handle: FileHandle | undefined;
  /** Bytes in the main file (its closing `]` included). */
  #size = 0;
  /** The files written before, oldest first, and their bytes together. */
  readonly #older: Written[] = [];
  #olderBytes = 0;
  #index = 0;
  #warned = false;
  /** Bytes of the writes queued and not yet done, and the most there may be. */
  #queued = 0;
  readonly #maxQueued: number;
  #warnedBehind = false;

  constructor(
    dir: string,
    options: { maxBytes?: number; maxFiles?: number; maxQueuedBytes?: number; log?: TraceFileLog } = {},
  ) {
    this.#maxQueued = options.maxQueuedBytes ?? TRACE_QUEUE_BYTES;
    this.#dir = dir;
    this.#path = join(dir, 'trace.json');
    this.#prev = join(dir, 'trace.prev.json');
    this.#maxBytes = options.maxBytes ?? TRACE_MAX_BYTES;
    this.#maxFiles = options.maxFiles ?? TRACE_MAX_FILES;
    this.#log = options.log;
  }

  /** The file's name, as the settings show it (its folder is the node's). */
  get name(): string {
    return basename(this.#path);
  }

  /** The most one file holds: half the bound (a trace larger than that is dropped). */
  get #fileMax(): number {
    return Math.floor(this.#maxBytes / 2);
  }

  /** Appends one trace's records (a JSON array's items, comma-separated) to the main file. */
  append(records: string): void {
    const bytes = Buffer.byteLength(records) + 2;
    if (!this.#fits(bytes)) return;
    this.#enqueue(bytes, async () => {
      if (this.#handle && this.#size + bytes > this.#fileMax) await this.#rotate();
      await this.#makeRoom(this.#size === 0 ? bytes : bytes - 1);
      if (!this.#handle) {
        await mkdir(this.#dir, { recursive: true, mode: 0o700 });
        this.#handle = await open(this.#path, 'w', 0o600);
        this.#size = 0;
      }
      const text = this.#size === 0 ? `[${records}]` : `,${records}]`;
      // Over the closing bracket of what is there: the file stays one JSON array.
      const at = this.#size === 0 ? 0 : this.#size - 1;
      const buffer = Buffer.from(text);
      this.#log?.debug({ file: this.name, bytes: buffer.byteLength }, 'writing a trace');
      await this.#handle.write(buffer, 0, buffer.byteLength, at);
      this.#size = at + buffer.byteLength;
    });
  }

  /** Writes traces together to the next indexed file (Triton's log frequency). */
  appendIndexed(traces: readonly string[]): void {
    if (traces.length === 0) return;
    const text = `[${traces.join(',')}]`;
    const bytes = Buffer.byteLength(text);
    if (!this.#fits(bytes)) return;
    const path = `${this.#path}.${this.#index++}`;
    this.#enqueue(bytes, async () => {
      await this.#makeRoom(bytes, 1);
      this.#log?.debug({ file: basename(path), traces: traces.length }, 'writing traces');
      await mkdir(this.#dir, { recursive: true, mode: 0o700 });
      await writeFile(path, text, { mode: 0o600 });
      this.#older.push({ path, bytes });
      this.#olderBytes += bytes;
    });
  }

  /** Settles once every write queued so far is done. */
  flushed(): Promise<void> {
    return this.#queue;
  }

  async close(): Promise<void> {
    await this.#queue;
    await this.#handle?.close();
    this.#handle = undefined;
  }

  /** Whether a write of `bytes` can be kept at all (one file's share of the bound). */
  #fits(bytes: number): boolean {
    if (bytes <= this.#fileMax) return true;
    this.#log?.warn({ bytes, maxBytes: this.#maxBytes }, 'a trace larger than half the trace files bound is dropped');
    return false;
  }

  /** The main file moved aside (to trace.prev.json, replacing the one there); the next write starts it anew. */
  async #rotate(): Promise<void> {
    this.#bounded(this.#prev);
    await this.#handle?.close();
    this.#handle = undefined;
    const replaced = this.#older.findIndex((w) => w.path === this.#prev);
    if (replaced !== -1) this.#olderBytes -= this.#older.splice(replaced, 1)[0]!.bytes;
    await rename(this.#path, this.#prev);
    this.#older.push({ path: this.#prev, bytes: this.#size });
    this.#olderBytes += this.#size;
    this.#size = 0;
  }

  /** Removes the oldest files until `bytes` more, in `files` new files, fit in the bounds. */
  async #makeRoom(bytes: number, files = 0): Promise<void> {
    while (
      this.#older.length > 0 &&
      (this.#olderBytes + this.#size + bytes > this.#maxBytes || this.#older.length + files > this.#maxFiles)
    ) {
      const oldest = this.#older.shift()!;
      this.#olderBytes -= oldest.bytes;
      this.#bounded(oldest.path);
      await unlink(oldest.path).catch(() => undefined);
    }
  }

  /** Says once that the bound is reached (`file` replaced or removed). */
  #bounded(file: string): void {
    if (!this.#warned)
      this.#log?.warn(
        { maxBytes: this.#maxBytes, replaced: basename(file) },
        `the trace files reached ${this.#maxBytes} bytes: trace.json is moved to trace.prev.json and the oldest files removed as new traces are written`,
      );
    this.#warned = true;
  }

  /** Queues `write` (of `bytes`), or drops it while the queue holds its most (the disk is behind). */
  #enqueue(bytes: number, write: () => Promise<void>): void {
    if (this.#queued + bytes > this.#maxQueued) {
      if (!this.#warnedBehind)
        this.#log?.warn({ maxQueuedBytes: this.#maxQueued }, 'traces are dropped while their writes are behind');
      this.#warnedBehind = true;
      return;
    }
    this.#queued += bytes;
    this.#queue = this.#queue
      .then(write)
      .catch((error: unknown) => {
        this.#log?.warn({ err: error, dir: this.#dir }, 'a trace could not be written (HEARTH_TRACE_DIR)');
      })
      .finally(() => {
        this.#queued -= bytes;
      });
  }
}
