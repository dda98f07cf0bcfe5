import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { type AddressInfo, createServer as createNetServer } from 'node:net';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { httpTarget } from './http-target.js';
import type { BenchBody } from './types.js';

/** A node:http server (the reference HTTP/1.1 implementation) answering each route its own way. */
let server: Server;
let url: string;
const seen: { path: string; body: string; headers: Record<string, unknown> }[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.push({ path: req.url ?? '', body: Buffer.concat(chunks).toString(), headers: req.headers });
      if (req.url === '/length') res.writeHead(200, { 'content-length': 5 }).end('hello');
      else if (req.url === '/chunked') {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write('a'.repeat(70_000));
        setTimeout(() => res.end('tail'), 5);
      } else if (req.url === '/refuse')
        res
          .writeHead(400, { 'content-type': 'application/json' })
          .end('{"error":"no such input","code":"INVALID_INPUT"}');
      else if (req.url === '/refuse-chunked') {
        res.writeHead(503, { 'content-type': 'application/json', trailer: 'x-done' });
        res.write('{"error":"not ready');
        setTimeout(() => {
          res.addTrailers({ 'x-done': '1' });
          res.end(' yet","code":"UNAVAILABLE"}');
        }, 5);
      } else if (req.url === '/close') res.writeHead(200, { connection: 'close', 'content-length': 2 }).end('ok');
      else if (req.url === '/hang-up') req.socket.destroy();
      else if (req.url === '/slow') setTimeout(() => res.end('late'), 2000);
      else res.writeHead(204).end();
    });
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise((resolve) => server.close(resolve)));

const bodies: BenchBody[] = [
  { bytes: new TextEncoder().encode('{"a":1}'), contentType: 'application/json' },
  { bytes: new Uint8Array([0, 1, 2, 255]), contentType: 'application/octet-stream', headerLength: 2 },
];

/** `n` requests in turn to `path` over `connections` sockets: each outcome. */
async function sendAll(path: string, n: number, connections = 1, timeoutMs = 10_000) {
  const sender = await httpTarget({ url, path, bodies, connections, apiKey: 'k1', timeoutMs });
  const outcomes: { code?: string; message?: string }[] = [];
  for (let i = 0; i < n; i++)
    outcomes.push(await new Promise((resolve) => sender.send(i, (code, message) => resolve({ code, message }))));
  await sender.close();
  return outcomes;
}

describe('httpTarget over its own HTTP/1.1 connections', () => {
  it('sends each body whole with its headers, and reads Content-Length answers on one kept-alive socket', async () => {
    seen.length = 0;
    const ports = new Set<number>();
    const onConnection = (s: { remotePort?: number }) => ports.add(s.remotePort ?? 0);
    server.on('connection', onConnection);
    expect(await sendAll('/length', 4)).toEqual(Array(4).fill({ code: undefined, message: undefined }));
    server.off('connection', onConnection);
    expect(ports.size).toBe(1);
    expect(seen.map((s) => s.body)).toEqual([
      '{"a":1}',
      '\u0000\u0001\u0002\ufffd',
      '{"a":1}',
      '\u0000\u0001\u0002\ufffd',
    ]);
    expect(seen[0]!.headers).toMatchObject({ 'content-type': 'application/json', authorization: 'Bearer k1' });
    expect(seen[1]!.headers).toMatchObject({ 'inference-header-content-length': '2' });
  });

  it('reads chunked answers split across reads, and 204s with no body', async () => {
    expect(await sendAll('/chunked', 3)).toEqual(Array(3).fill({ code: undefined, message: undefined }));
    expect(await sendAll('/empty', 2)).toEqual(Array(2).fill({ code: undefined, message: undefined }));
  });

  it("gives an error's status as its code and Hearth's error body as its message", async () => {
    expect(await sendAll('/refuse', 2)).toEqual(
      Array(2).fill({ code: '400', message: 'no such input (INVALID_INPUT)' }),
    );
    // Chunked, split across reads, with a trailer.
    expect(await sendAll('/refuse-chunked', 2)).toEqual(
      Array(2).fill({ code: '503', message: 'not ready yet (UNAVAILABLE)' }),
    );
  });

  it('opens a new connection after Connection: close, and counts a hang-up as a socket error', async () => {
    expect(await sendAll('/close', 3)).toEqual(Array(3).fill({ code: undefined, message: undefined }));
    const hangUps = await sendAll('/hang-up', 2);
    expect(hangUps.map((o) => o.code)).toEqual(['ECONNRESET', 'ECONNRESET']);
  });

  it('fails a request past its deadline with ETIMEDOUT', async () => {
    const [late] = await sendAll('/slow', 1, 1, 100);
    expect(late!.code).toBe('ETIMEDOUT');
  });

  it('refuses a path that would split the request', async () => {
    await expect(httpTarget({ url, path: '/x\r\nhost: y', bodies, connections: 1, timeoutMs: 1000 })).rejects.toThrow(
      'line break',
    );
  });
});

describe('H1Connection against a server that never ends a line', () => {
  /** A raw TCP server that writes `answer()` forever in 16 KiB pieces to each request; the outcome of one request. */
  async function against(answer: string, piece: string): Promise<{ code?: string; message?: string }> {
    const raw = createNetServer((socket) => {
      socket.once('data', () => {
        socket.write(answer);
        const flood = setInterval(() => socket.write(piece.repeat(16_384 / piece.length)), 1);
        socket.on('close', () => clearInterval(flood));
        socket.on('error', () => clearInterval(flood));
      });
    });
    raw.listen(0, '127.0.0.1');
    await once(raw, 'listening');
    const port = (raw.address() as AddressInfo).port;
    const sender = await httpTarget({
      url: `http://127.0.0.1:${port}`,
      path: '/',
      bodies,
      connections: 1,
      timeoutMs: 30_000,
    });
    try {
      return await new Promise((resolve) => sender.send(0, (code, message) => resolve({ code, message })));
    } finally {
      await sender.close();
      raw.close();
    }
  }

  it('drops a head that grows past 64 KiB without its blank line as EPROTO', async () => {
    expect((await against('HTTP/1.1 200 OK\r\n', 'x')).code).toBe('EPROTO');
  });

  it('drops a chunk-size line past 8 KiB as EPROTO', async () => {
    expect((await against('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n', 'f')).code).toBe('EPROTO');
  });
});
