/**
 * One HTTP/1.1 keep-alive connection that carries one request at a time: the request written as
 * one prepared buffer (head and body, one write), the answer's head parsed for its status and
 * length (Content-Length, chunked, or until close), its body counted and dropped (an error's first
 * bytes kept). Deliberately small — it is what lets `hearth bench` spend about as little per
 * request as wrk does; undici's Pool, the first version, spent ~55 µs of CPU a request here.
 */
import { connect as netConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';

/** How an answer ended: its status (0 when the connection failed: `error` says how) and an error's first bytes. */
export type Answered = (status: number, error?: string, body?: Buffer) => void;

export interface Endpoint {
  host: string;
  port: number;
  tls?: { ca?: string; cert?: string; key?: string; servername?: string };
}

/** The most bytes of an error answer's body kept. */
const KEEP = 4096;
const CRLF2 = Buffer.from('\r\n\r\n');
/** Where plain TCP reads land (see #open): valid only during the read's callback. */
const READ_BUFFER = Buffer.allocUnsafe(64 * 1024);

/** Where a chunked body's reading stands: bytes left to skip, a line being read, trailers. */
interface Chunked {
  skip: number;
  line: string;
  trailers: boolean;
}
/** The longest chunk-size or trailer line read. */
const MAX_LINE = 8192;

type BodyState =
  | { kind: 'length'; left: number }
  | ({ kind: 'chunked' } & Chunked)
  | { kind: 'close' }
  | { kind: 'none' };

export class H1Connection {
  readonly #endpoint: Endpoint;
  #socket: Socket | undefined;
  #head: Buffer | undefined;
  #body: BodyState | undefined;
  #status = 0;
  #close = false;
  #kept: Buffer[] | undefined;
  #keptBytes = 0;
  #done: Answered | undefined;
  /** performance.now() when the request in flight went out (for the deadline sweep). */
  startedAt = 0;

  constructor(endpoint: Endpoint) {
    this.#endpoint = endpoint;
  }

  get busy(): boolean {
    return this.#done !== undefined;
  }

  /** Sends `request` (a whole HTTP/1.1 request); `done` hears its answer once. */
  send(request: Buffer, done: Answered): void {
    this.#done = done;
    this.#head = undefined;
    this.#body = undefined;
    this.#kept = undefined;
    this.#keptBytes = 0;
    this.#socket ??= this.#open();
    this.#socket.write(request);
  }

  /** Ends the connection; a request in flight fails with `reason`. */
  destroy(reason = 'ECONNRESET'): void {
    const socket = this.#socket;
    this.#socket = undefined;
    socket?.destroy();
    this.#fail(reason);
  }

  #open(): Socket {
    const { host, port, tls } = this.#endpoint;
    // Plain TCP reads into one buffer reused for every read of every connection (net's onread):
    // no 64 KiB allocation and no stream machinery per read. What the parser keeps, it copies.
    const socket = tls
      ? tlsConnect({ host, port, servername: tls.servername ?? host, ca: tls.ca, cert: tls.cert, key: tls.key })
      : netConnect({
          host,
          port,
          onread: {
            buffer: READ_BUFFER,
            callback: (n) => {
              this.#read(READ_BUFFER.subarray(0, n));
              return true;
            },
          },
        });
    if (tls) socket.on('data', (chunk: Buffer) => this.#read(chunk));
    socket.setNoDelay(true);
    // A socket this connection has already let go of (closed after its answer) speaks for no request.
    socket.on('error', (e: Error & { code?: string }) => {
      if (this.#socket !== socket) return;
      this.#socket = undefined;
      this.#fail(e.code ?? e.name, e.message);
    });
    socket.on('close', () => {
      if (this.#socket !== socket) return;
      this.#socket = undefined;
      if (this.#body?.kind === 'close') this.#finish();
      else this.#fail('ECONNRESET', 'the server closed the connection before it answered');
    });
    return socket;
  }

  #fail(code: string, message = code): void {
    const done = this.#done;
    this.#done = undefined;
    done?.(0, `${code}: ${message}`);
  }

  #read(chunk: Buffer): void {
    if (!this.#done) return;
    if (this.#body === undefined) {
      const head = this.#head ? Buffer.concat([this.#head, chunk]) : chunk;
      const end = head.indexOf(CRLF2);
      if (end < 0) {
        if (head.length > 64 * 1024) this.destroy('EPROTO');
        // A concat is already a copy; a first read is not (its buffer is reused).
        else this.#head = this.#head ? head : Buffer.from(head);
        return;
      }
      if (!this.#parseHead(head.toString('latin1', 0, end))) {
        this.destroy('EPROTO');
        return;
      }
      chunk = head.subarray(end + 4);
    }
    this.#take(chunk);
  }

  /** The status line and the headers that say how long the body is. */
  #parseHead(text: string): boolean {
    const status = Number(text.slice(9, 12));
    if (!text.startsWith('HTTP/1.') || !Number.isInteger(status)) return false;
    this.#status = status;
    // Three searches of the head, not a split into lines: this runs once a request.
    const length = /\r\ncontent-length:[ \t]*(\d+)/i.exec(text);
    const chunked = /\r\ntransfer-encoding:[^\r]*chunked/i.test(text);
    const connection = /\r\nconnection:[ \t]*(close|keep-alive)/i.exec(text)?.[1]?.toLowerCase();
    this.#close = connection === 'close' || (connection === undefined && text.startsWith('HTTP/1.0'));
    if (status >= 300) this.#kept = [];
    this.#body =
      status === 204 || status === 304 || (status >= 100 && status < 200)
        ? { kind: 'none' }
        : chunked
          ? { kind: 'chunked', skip: 0, line: '', trailers: false }
          : length
            ? { kind: 'length', left: Number(length[1]) }
            : { kind: 'close' };
    return true;
  }

  /**
   * Copies (a read's buffer is reused) bytes [from, to) of `bytes`, only what is still wanted of an
   * error's first KEEP bytes; a 2xx answer's bytes make no view at all.
   */
  #keep(bytes: Buffer, from = 0, to = bytes.length): void {
    if (this.#kept && this.#keptBytes < KEEP) {
      const wanted = bytes.subarray(from, Math.min(to, from + KEEP - this.#keptBytes));
      this.#kept.push(Buffer.from(wanted));
      this.#keptBytes += wanted.length;
    }
  }

  #take(chunk: Buffer): void {
    const body = this.#body!;
    if (body.kind === 'length') {
      this.#keep(chunk, 0, body.left);
      body.left -= Math.min(body.left, chunk.length);
      if (body.left === 0) this.#finish();
    } else if (body.kind === 'chunked') {
      if (this.#chunks(body, chunk)) this.#finish();
    } else if (body.kind === 'close') this.#keep(chunk);
    else this.#finish();
  }

  /**
   * Chunked framing, read as it streams: a size line, that many bytes and CRLF skipped (an error's
   * kept), until the size-0 chunk's trailer lines end in an empty one. Only a line is ever held
   * (at most MAX_LINE bytes), never a chunk. True at the answer's end.
   */
  #chunks(body: Chunked, chunk: Buffer): boolean {
    let at = 0;
    while (at < chunk.length) {
      if (body.skip > 0) {
        const n = Math.min(body.skip, chunk.length - at);
        // The chunk's data, not its closing CRLF.
        if (body.skip > 2) this.#keep(chunk, at, at + Math.min(n, body.skip - 2));
        body.skip -= n;
        at += n;
        continue;
      }
      const end = chunk.indexOf(0x0a, at);
      body.line += chunk.toString('latin1', at, end < 0 ? chunk.length : end + 1);
      at = end < 0 ? chunk.length : end + 1;
      if (body.line.length > MAX_LINE) {
        this.destroy('EPROTO');
        return false;
      }
      if (end < 0) break;
      const line = body.line.trim();
      body.line = '';
      if (body.trailers) {
        if (line === '') return true;
        continue;
      }
      const size = Number.parseInt(line, 16);
      if (!Number.isFinite(size) || size < 0) {
        this.destroy('EPROTO');
        return false;
      }
      if (size === 0) body.trailers = true;
      else body.skip = size + 2;
    }
    return false;
  }

  #finish(): void {
    const done = this.#done;
    this.#done = undefined;
    this.#body = undefined;
    if (this.#close) {
      this.#socket?.destroy();
      this.#socket = undefined;
    }
    if (!done) return;
    if (this.#status < 300) done(this.#status);
    else done(this.#status, undefined, Buffer.concat(this.#kept ?? []));
  }
}
