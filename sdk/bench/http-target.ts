/**
 * Requests over HTTP/1.1 keep-alive: an undici Pool of exactly `connections` sockets to the node,
 * each request dispatched with a bare handler (no fetch, no streams: the least a Node client can
 * spend on a request). Answers are read whole and dropped; an error's first bytes are kept as its
 * message.
 */
import type { BenchBody } from './types.js';

/** One request's outcome: undefined when it succeeded, else its error code (and a message). */
export type Done = (code: string | undefined, message?: string) => void;

/** What a bench loop sends through: the `index`th body (cycled), its outcome to `done`. */
export interface Sender {
  send(index: number, done: Done): void;
  close(): Promise<void>;
}

/** The most bytes of an error answer read for its message, and the most characters of it kept. */
const ERROR_BYTES = 4096;
const MESSAGE_CHARS = 200;

interface Prepared {
  body: Buffer;
  headers: string[];
}

export interface HttpTargetOptions {
  url: string;
  path: string;
  bodies: readonly BenchBody[];
  connections: number;
  apiKey?: string;
  tls?: { ca?: string; cert?: string; key?: string };
  timeoutMs: number;
}

/**
 * `POST url+path` with the bodies in turn over `connections` keep-alive sockets. undici is loaded
 * here, on first use: the CLI's bundle leaves it out, and its other verbs never pay for it.
 */
export async function httpTarget(o: HttpTargetOptions): Promise<Sender> {
  const { Pool } = await import('undici');
  const pool = new Pool(o.url, {
    connections: o.connections,
    pipelining: 1,
    keepAliveTimeout: 60_000,
    headersTimeout: o.timeoutMs,
    bodyTimeout: o.timeoutMs,
    ...(o.tls ? { connect: o.tls } : {}),
  });
  const prepared: Prepared[] = o.bodies.map((b) => ({
    body: Buffer.from(b.bytes.buffer, b.bytes.byteOffset, b.bytes.byteLength),
    headers: [
      'content-type',
      b.contentType,
      'accept-encoding',
      'identity',
      ...(o.apiKey ? ['authorization', `Bearer ${o.apiKey}`] : []),
      ...(b.headerLength === undefined ? [] : ['inference-header-content-length', String(b.headerLength)]),
    ],
  }));
  const { path } = o;
  return {
    send(index, done) {
      const p = prepared[index % prepared.length]!;
      let status = 0;
      let error: Buffer[] | undefined;
      let kept = 0;
      pool.dispatch(
        { path, method: 'POST', body: p.body, headers: p.headers },
        {
          onConnect() {},
          onHeaders(statusCode) {
            status = statusCode;
            if (statusCode >= 300) error = [];
            return true;
          },
          onData(chunk) {
            if (error && kept < ERROR_BYTES) {
              error.push(chunk);
              kept += chunk.byteLength;
            }
            return true;
          },
          onComplete() {
            if (!error) return done(undefined);
            done(String(status), errorMessage(Buffer.concat(error).subarray(0, ERROR_BYTES).toString('utf8')));
          },
          onError(e) {
            done((e as { code?: string }).code ?? e.name, e.message);
          },
        },
      );
    },
    close: () => pool.close(),
  };
}

/** An error body's `error` field where it is Hearth's JSON, else its text. */
function errorMessage(text: string): string {
  try {
    const body = JSON.parse(text) as { error?: unknown; code?: unknown };
    if (typeof body.error === 'string')
      return (typeof body.code === 'string' ? `${body.error} (${body.code})` : body.error).slice(0, MESSAGE_CHARS);
  } catch {}
  return text.slice(0, MESSAGE_CHARS);
}
