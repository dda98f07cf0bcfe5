/**
 * A bounded fuzzer, as Triton's L0_http_fuzz: a node in its own process (as `npm start` runs it),
 * every route × method with mutated bodies, headers, content types, encodings and lengths, raw HTTP
 * with lying framing, and malformed gRPC frames. Fixed seeds and a fixed number of cases: six
 * workers, each with its own generator, so every run sends the same 9,000 requests whatever the
 * machine's speed (a time budget sent fewer on a busy machine). Every answer's status must
 * be one docs/operations.md documents; a 500 `INTERNAL` must be in the node's log under its request id;
 * `/v2/health/live` answers 200 throughout; the process never exits.
 */

import { mkdtemp, rm } from 'node:fs/promises';
import { connect as http2Connect } from 'node:http2';
import { connect as netConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { NodeProcess } from '../helpers/node.js';
import { deployFixture, spawnNode } from '../helpers/node.js';
import { rng } from '../helpers/random.js';
import { SMALL_SPEC } from '../helpers/specs.js';

const dir = await mkdtemp(join(tmpdir(), 'hearth-fuzz-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

const SEED = 20261201;
const WORKERS = 6;
const CASES_PER_WORKER = 1500;
/** The statuses the error table (docs/operations.md) and the routes (docs/api.md) document. */
const DOCUMENTED = new Set([200, 201, 202, 400, 401, 403, 404, 413, 422, 429, 499, 500, 503, 504]);
const GRPC_CODES = new Set([0, 1, 3, 4, 5, 8, 9, 12, 13, 14, 16]);

const VALID_INFER = JSON.stringify({
  inputs: [{ name: 'x', shape: [2, 4], datatype: 'FP32', data: [1, 2, 3, 4, 0.5, -1, 2, 0] }],
});
const VALID_FN = JSON.stringify({ inputs: { x: [[1, 2, 3, 4]] } });
const SHA = 'a'.repeat(64);

const PATHS = [
  '/v2',
  '/v2/health/live',
  '/v2/health/ready',
  '/v2/models/m',
  '/v2/models/m/ready',
  '/v2/models/m/config',
  '/v2/models/m/stats',
  '/v2/models/stats',
  '/v2/models/m/infer',
  '/v2/models/m/versions/1/infer',
  '/v2/models/m/versions/x/infer',
  '/v2/models/%ZZ/infer',
  '/v2/models/..%2F..%2Fetc/infer',
  '/fn/m',
  '/fn/m/versions/1',
  '/fn/m?async=1',
  '/fn/%00',
  '/api/v1/functions',
  '/api/v1/functions/m',
  '/api/v1/functions/m/traffic',
  '/api/v1/functions/m/logs?limit=5',
  '/api/v1/functions/m/logs?limit=-1',
  `/api/v1/artifacts/${SHA}`,
  '/api/v1/artifacts/not-a-sha',
  '/api/v1/artifacts/import',
  '/api/v1/jobs/nope',
  '/api/v1/jobs/nope/result',
  '/api/v1/pools',
  '/v2/repository/index',
  '/v2/repository/models/m/load',
  '/v2/repository/models/m/unload',
  '/v2/systemsharedmemory/status',
  '/v2/systemsharedmemory/region/r/register',
  '/v2/systemsharedmemory/region/r/unregister',
  '/v2/cudasharedmemory/region/r/register',
  '/nowhere',
  '//v2//models',
];
const METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'];
const TYPES = [
  undefined,
  'application/json',
  'application/octet-stream',
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=zz',
  'image/jpeg',
  'application/json; charset=utf-16',
  '\u00ff/\u00fe',
];

function mutate(next: () => number, base: string): Uint8Array {
  const bytes = Buffer.from(base);
  const pick = Math.floor(next() * 9);
  const at = Math.floor(next() * bytes.length);
  switch (pick) {
    case 0:
      return bytes.subarray(0, at); // truncated
    case 1: {
      const out = Buffer.from(bytes);
      for (let i = 0; i < 1 + next() * 8; i++) out[Math.floor(next() * out.length)] = Math.floor(next() * 256);
      return out; // flipped bytes
    }
    case 2:
      return Buffer.concat([
        bytes.subarray(0, at),
        Buffer.from(Array.from({ length: 64 }, () => Math.floor(next() * 256))),
        bytes.subarray(at),
      ]);
    case 3:
      return Buffer.from(
        base.replace(
          /\d+(\.\d+)?/g,
          () => ['1e309', '-0', '9007199254740993', 'NaN', '"1"', 'null', '[]'][Math.floor(next() * 7)]!,
        ),
      );
    case 4:
      return Buffer.from(`${'['.repeat(5000)}${']'.repeat(5000)}`);
    case 5:
      return Buffer.from(
        base.replace('"x"', ['"__proto__"', '"constructor"', '""', '"x\\ud800"'][Math.floor(next() * 4)]!),
      );
    case 6:
      return Buffer.from(
        base.replace(/\[2, ?4\]|\[2,4\]/, ['[-1, 4]', '[1e12, 4]', '[2]', '[]', '"2x4"'][Math.floor(next() * 5)]!),
      );
    case 7:
      return new Uint8Array(0);
    default:
      return bytes;
  }
}

interface Seen {
  status: number;
  body: string;
  requestId?: string;
  what: string;
}

async function httpCase(url: string, next: () => number): Promise<Seen> {
  const path = PATHS[Math.floor(next() * PATHS.length)]!;
  const method = METHODS[Math.floor(next() * METHODS.length)]!;
  const headers: Record<string, string> = {};
  const type = TYPES[Math.floor(next() * TYPES.length)];
  if (type !== undefined) headers['content-type'] = type;
  let body: Uint8Array | undefined;
  if (method !== 'GET' && method !== 'HEAD') {
    body = mutate(next, path.startsWith('/fn') ? VALID_FN : VALID_INFER);
    const r = next();
    if (r < 0.15) {
      // Triton's binary extension, with a header length that may lie.
      headers['inference-header-content-length'] = String(
        [body.length, body.length + 10, -1, 0, 1e15, Number.NaN][Math.floor(next() * 6)],
      );
      body = Buffer.concat([body, Buffer.alloc(Math.floor(next() * 64))]);
    } else if (r < 0.25) {
      headers['content-encoding'] = ['gzip', 'deflate', 'br', 'gzip, gzip'][Math.floor(next() * 4)]!;
      if (next() < 0.5) body = gzipSync(body);
    }
  }
  if (next() < 0.1) headers['hearth-timeout-ms'] = ['0', '-5', 'soon', '1', '1e9'][Math.floor(next() * 5)]!;
  if (next() < 0.1) headers['idempotency-key'] = 'k'.repeat(Math.floor(next() * 300));
  if (next() < 0.1)
    headers.authorization = ['Bearer', 'Basic x', `Bearer ${'z'.repeat(5000)}`][Math.floor(next() * 3)]!;
  if (next() < 0.05) headers['x-request-id'] = ['', 'a'.repeat(500), 'ok-id'][Math.floor(next() * 3)]!;
  const r = await fetch(`${url}${path}`, { method, headers, body, signal: AbortSignal.timeout(15_000) });
  const text = method === 'HEAD' ? '' : await r.text();
  return {
    status: r.status,
    body: text,
    requestId: r.headers.get('x-request-id') ?? undefined,
    what: `${method} ${path} ${JSON.stringify(headers).slice(0, 200)}`,
  };
}

/** Raw HTTP/1.1 with framing that lies: the node's parser answers 400 or closes, and lives. */
function rawCase(port: number, next: () => number): Promise<string> {
  const requests = [
    'POST /v2/models/m/infer HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{"inputs"',
    'POST /fn/m HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nxx\r\n0\r\n\r\n',
    'POST /fn/m HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\nContent-Length: 7\r\n\r\nabcdefg',
    'GET /v2/health/live HTTP/1.1\r\nHost: 127.0.0.1\r\nX: \u0000\r\n\r\n',
    `GET /${'a'.repeat(20000)} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`,
    'BREW /v2 HTCPCP/1.0\r\n\r\n',
    'POST /v2/models/m/infer HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: -1\r\n\r\n',
  ];
  const text = requests[Math.floor(next() * requests.length)]!;
  return new Promise((resolve) => {
    const socket = netConnect(port, '127.0.0.1', () => socket.end(text));
    let answer = '';
    socket.on('data', (d) => {
      answer += d.toString('latin1');
    });
    socket.setTimeout(3000, () => socket.destroy());
    socket.on('close', () => resolve(answer.split('\r\n')[0] ?? ''));
    socket.on('error', () => undefined);
  });
}

/** A gRPC call whose message bytes are random protobuf (or a length prefix that lies). */
function grpcCase(address: string, next: () => number): Promise<number | undefined> {
  const method = ['ModelInfer', 'ModelMetadata', 'ServerLive', 'RepositoryModelLoad', 'SystemSharedMemoryRegister'][
    Math.floor(next() * 5)
  ]!;
  const payload = Buffer.from(Array.from({ length: Math.floor(next() * 200) }, () => Math.floor(next() * 256)));
  const prefix = Buffer.alloc(5);
  prefix[0] = next() < 0.1 ? 1 : 0; // "compressed" with no encoding agreed
  prefix.writeUInt32BE(next() < 0.1 ? payload.length + 1000 : payload.length, 1);
  return new Promise((resolve) => {
    const session = http2Connect(`http://${address}`);
    session.on('error', () => resolve(undefined));
    const stream = session.request({
      ':method': 'POST',
      ':path': `/inference.GRPCInferenceService/${method}`,
      'content-type': 'application/grpc',
      te: 'trailers',
    });
    let status: number | undefined;
    stream.on('response', (h) => {
      if (h['grpc-status'] !== undefined) status = Number(h['grpc-status']);
    });
    stream.on('trailers', (t) => {
      status = Number(t['grpc-status']);
    });
    stream.on('data', () => undefined);
    stream.on('error', () => undefined);
    stream.setTimeout(5000, () => stream.close());
    stream.on('close', () => {
      session.close();
      resolve(status);
    });
    stream.end(Buffer.concat([prefix, payload]));
  });
}

describe('fuzzer (fixed seed, bounded)', () => {
  let node: NodeProcess;
  const logLines: string[] = [];
  beforeAll(async () => {
    node = await spawnNode(join(dir, 'node'), {}, (line) => logLines.push(line));
    expect((await deployFixture(node.url, { ...SMALL_SPEC, name: 'm' }, { model: 'small' })).status).toBe(201);
  });
  afterAll(async () => {
    node?.child.kill('SIGTERM');
    await node?.exited;
  });

  it('answers every mutated request with a documented status, logs every INTERNAL, and stays alive', async () => {
    const port = Number(new URL(node.url).port);
    let exited = false;
    void node.exited.then(() => {
      exited = true;
    });
    const odd: string[] = [];
    const internal: Seen[] = [];
    let cases = 0;
    let liveChecks = 0;
    const worker = async (w: number) => {
      const next = rng(SEED + w);
      for (let i = 0; i < CASES_PER_WORKER && !exited; i++) {
        const r = next();
        cases++;
        if (r < 0.8) {
          const seen = await httpCase(node.url, next).catch(
            (e: Error) => ({ status: -1, body: e.message, what: 'fetch' }) as Seen,
          );
          // -1: the node closed a connection it would not read, which is allowed.
          if (seen.status !== -1 && !DOCUMENTED.has(seen.status)) odd.push(`${seen.status} ${seen.what}`);
          if (seen.status === 500 && seen.body.includes('"INTERNAL"')) internal.push(seen);
        } else if (r < 0.88) {
          const line = await rawCase(port, next);
          if (line && !/^HTTP\/1\.1 (400|404|413|431|200|503) /.test(line)) odd.push(`raw: ${line}`);
        } else {
          const code = await grpcCase(node.grpc, next);
          if (code !== undefined && !GRPC_CODES.has(code)) odd.push(`grpc status ${code}`);
        }
        if ((i + 1) % 50 === 0) {
          liveChecks++;
          const live = await fetch(`${node.url}/v2/health/live`, { signal: AbortSignal.timeout(5000) });
          expect(live.status).toBe(200);
        }
      }
    };
    await Promise.all(Array.from({ length: WORKERS }, (_, w) => worker(w)));
    if (process.env.FUZZ_REPORT)
      console.log({ cases, liveChecks, internal: internal.length, statuses: [...new Set(odd)] });
    expect(exited).toBe(false);
    expect(odd).toEqual([]);
    // Every INTERNAL a caller saw is in the node's log, with its stack, under its request id.
    for (const seen of internal)
      expect(
        logLines.some((l) => l.includes(seen.requestId!) && l.includes('"stack"')),
        seen.what,
      ).toBe(true);
    expect(cases).toBe(WORKERS * CASES_PER_WORKER);
    expect(liveChecks).toBe(cases / 50);
    expect((await fetch(`${node.url}/v2/health/live`)).status).toBe(200);
    // And functions still deploy and answer (the fuzzer may have deleted or unloaded `m`).
    expect((await deployFixture(node.url, { ...SMALL_SPEC, name: 'm' }, { model: 'small' })).status).toBe(201);
    await fetch(`${node.url}/v2/repository/models/m/load`, { method: 'POST' });
    const ok = await fetch(`${node.url}/v2/models/m/infer`, {
      method: 'POST',
      body: VALID_INFER,
      headers: { 'content-type': 'application/json' },
    });
    expect(ok.status).toBe(200);
  });
});
