/**
 * Where a node's traces are written: a file in the folder its operator configured
 * (HEARTH_TRACE_DIR, by default `<data dir>/traces`), never one a caller names. As Triton writes
 * it: a JSON array of trace records; with a log frequency, groups of traces in indexed files beside
 * it (`trace.json.0`, `trace.json.1`, …). Unlike Triton, which writes the main file when it shuts
 * down, each trace is appended as it ends and the file is a whole JSON array after every write.
 *
 * Writes are queued one after another off the request's path; what the node writes in all is
 * bounded (`maxBytes`): past it, traces are dropped and one warning says so.
 */
import type { FileHandle } from 'node:fs/promises';
import { mkdir, open, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';

export interface TraceFileLog {
  info(o: object, msg?: string): void;
  warn(o: object, msg?: string): void;
  debug(o: object, msg?: string): void;
}

/** The most a node writes to its trace files in its life, unless configured otherwise. */
export const TRACE_MAX_BYTES = 256 * 2 ** 20;

export class TraceFile {
  readonly #dir: string;
  readonly #path: string;
  readonly #maxBytes: number;
  readonly #log: TraceFileLog | undefined;
  #queue: Promise<void> = Promise.resolve();
  #handle: FileHandle | undefined;
  /** Bytes in the main file (its closing `]` included), and written in all. */
  #size = 0;
  #written = 0;
  #index = 0;
  #warned = false;

  constructor(dir: string, options: { maxBytes?: number; log?: TraceFileLog } = {}) {
    this.#dir = dir;
    this.#path = join(dir, 'trace.json');
    this.#maxBytes = options.maxBytes ?? TRACE_MAX_BYTES;
    this.#log = options.log;
  }

  /** The file's name, as the settings show it (its folder is the node's). */
  get name(): string {
    return basename(this.#path);
  }

  /** Appends one trace's records (a JSON array's items, comma-separated) to the main file. */
  append(records: string): void {
    if (!this.#budget(records.length + 2)) return;
    this.#enqueue(async () => {
      if (!this.#handle) {
        await mkdir(this.#dir, { recursive: true, mode: 0o700 });
        this.#handle = await open(this.#path, 'w', 0o600);
        this.#size = 0;
      }
      const text = this.#size === 0 ? `[${records}]` : `,${records}]`;
      // Over the closing bracket of what is there: the file stays one JSON array.
      const at = this.#size === 0 ? 0 : this.#size - 1;
      const bytes = Buffer.from(text);
      this.#log?.debug({ file: this.name, bytes: bytes.byteLength }, 'writing a trace');
      await this.#handle.write(bytes, 0, bytes.byteLength, at);
      this.#size = at + bytes.byteLength;
    });
  }

  /** Writes traces together to the next indexed file (Triton's log frequency). */
  appendIndexed(traces: readonly string[]): void {
    if (traces.length === 0) return;
    const text = `[${traces.join(',')}]`;
    if (!this.#budget(text.length)) return;
    const path = `${this.#path}.${this.#index++}`;
    this.#enqueue(async () => {
      this.#log?.debug({ file: basename(path), traces: traces.length }, 'writing traces');
      await mkdir(this.#dir, { recursive: true, mode: 0o700 });
      await writeFile(path, text, { mode: 0o600 });
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

  #budget(bytes: number): boolean {
    if (this.#written + bytes <= this.#maxBytes) {
      this.#written += bytes;
      return true;
    }
    if (!this.#warned)
      this.#log?.warn(
        { maxBytes: this.#maxBytes },
        `traces past ${this.#maxBytes} bytes are dropped: the node's trace files are bounded (set trace_level to ["OFF"], or restart the node to write anew)`,
      );
    this.#warned = true;
    return false;
  }

  #enqueue(write: () => Promise<void>): void {
    this.#queue = this.#queue.then(write).catch((error: unknown) => {
      this.#log?.warn({ err: error, dir: this.#dir }, 'a trace could not be written (HEARTH_TRACE_DIR)');
    });
  }
}
