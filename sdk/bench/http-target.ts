/**
 * Requests over HTTP/1.1 keep-alive: exactly `connections` sockets to the node (./h1-connection.ts),
 * each request one prepared buffer written whole, one request per connection at a time. An answer's
 * body is read and dropped; an error's first bytes are kept as its message.
 */
import { H1Connection } from './h1-connection.js';
import type { BenchBody } from './types.js';

/** One request's outcome: undefined when it succeeded, else its error code (and a message). */
export type Done = (code: string | undefined, message?: string) => void;

/** What a bench loop sends through: the `index`th body (cycled), its outcome to `done`. */
export interface Sender {
  send(index: number, done: Done): void;
  close(): Promise<void>;
}

/** The most characters of an error's message kept. */
const MESSAGE_CHARS = 200;

export interface HttpTargetOptions {
  url: string;
  path: string;
  bodies: readonly BenchBody[];
  connections: number;
  apiKey?: string;
  tls?: { ca?: string; cert?: string; key?: string };
  timeoutMs: number;
}

/** Each body as a whole request: the head (Host, content type and length, key) and the bytes. */
function prepare(o: HttpTargetOptions, host: string): Buffer[] {
  return o.bodies.map((b) => {
    const head = [
      `POST ${o.path} HTTP/1.1`,
      `host: ${host}`,
      `content-type: ${b.contentType}`,
      `content-length: ${b.bytes.byteLength}`,
      ...(o.apiKey ? [`authorization: Bearer ${o.apiKey}`] : []),
      ...(b.headerLength === undefined ? [] : [`inference-header-content-length: ${b.headerLength}`]),
      '',
      '',
    ].join('\r\n');
    return Buffer.concat([Buffer.from(head, 'latin1'), b.bytes]);
  });
}

/** `POST url+path` with the bodies in turn over `connections` keep-alive sockets. */
export async function httpTarget(o: HttpTargetOptions): Promise<Sender> {
  const url = new URL(o.url);
  if (/[\r\n]/.test(`${o.path}${o.apiKey ?? ''}${o.bodies.map((b) => b.contentType).join('')}`))
    throw new RangeError('a path, key or content type holds a line break');
  const https = url.protocol === 'https:';
  const endpoint = {
    host: url.hostname.replace(/^\[|\]$/g, ''),
    port: Number(url.port || (https ? 443 : 80)),
    ...(https ? { tls: o.tls ?? {} } : {}),
  };
  const requests = prepare(o, url.host);
  const connections = Array.from({ length: o.connections }, () => new H1Connection(endpoint));
  const idle = [...connections];
  const waiting: { index: number; done: Done }[] = [];
  // One sweep for every deadline, not a timer per request.
  const sweep = setInterval(
    () => {
      const now = performance.now();
      for (const c of connections) if (c.busy && now - c.startedAt > o.timeoutMs) c.destroy('ETIMEDOUT');
    },
    Math.min(1000, Math.max(10, o.timeoutMs / 4)),
  );
  sweep.unref();
  const send = (index: number, done: Done): void => {
    const connection = idle.pop();
    if (!connection) {
      waiting.push({ index, done });
      return;
    }
    connection.startedAt = performance.now();
    connection.send(requests[index % requests.length]!, (status, error, body) => {
      idle.push(connection);
      const next = waiting.shift();
      if (status === 0) done(error?.split(':')[0] ?? 'ERROR', error);
      else if (status < 300) done(undefined);
      else done(String(status), errorMessage(body?.toString('utf8') ?? ''));
      if (next) send(next.index, next.done);
    });
  };
  return {
    send,
    close: async () => {
      clearInterval(sweep);
      for (const c of connections) c.destroy();
    },
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
