/**
 * A real node's front door: browser attacks on the no-key default (DNS rebinding, cross-site
 * requests, form bodies read as JSON), request ids, keys compared whole, the metrics key, and what
 * an invoke caller is told of a model's error (its headline and the request id, not its TorchScript
 * source).
 */

import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { HearthNode } from '../../../platform/node/index.js';
import { modelPath } from '../../helpers/fixtures.js';
import { inferenceClient } from '../../helpers/grpc.js';
import { postFunction, testNode, upload } from '../../helpers/node.js';
import { SMALL_SPEC } from '../../helpers/specs.js';

const dir = await mkdtemp(join(tmpdir(), 'hearth-front-door-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** A request with exactly these headers (fetch would add its own Sec-Fetch and Host rules). */
function send(url: string, method: string, path: string, headers: Record<string, string>, body = ''): Promise<Answer> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: u.hostname,
        port: u.port,
        method,
        path,
        headers: { ...headers, 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          text += c;
        });
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const INFER_BODY = JSON.stringify({ inputs: [{ name: 'x', shape: [1, 4], datatype: 'FP32', data: [1, 2, 3, 4] }] });

describe('front door of a node with no API key (the loopback default)', () => {
  let node: HearthNode;
  let host: string;
  beforeAll(async () => {
    node = await testNode(join(dir, 'open'));
    host = new URL(node.httpUrl).host;
    const small = await upload(node.httpUrl, new Uint8Array(await readFile(modelPath('small'))));
    expect(
      (await postFunction(node.httpUrl, { spec: { ...SMALL_SPEC, name: 'mlp' }, artifacts: { model: small } })).status,
    ).toBe(201);
    const fails = await upload(node.httpUrl, new Uint8Array(await readFile(modelPath('fails'))));
    const spec = { ...SMALL_SPEC, name: 'fails', outputs: [{ name: 'y', dtype: 'FP32', dims: [4] }] };
    expect((await postFunction(node.httpUrl, { spec, artifacts: { model: fails } })).status).toBe(201);
  });
  afterAll(() => node?.close());

  it('serves loopback names, and refuses any other Host (DNS rebinding)', async () => {
    const port = new URL(node.httpUrl).port;
    for (const ok of [host, `localhost:${port}`, `app.localhost:${port}`, `127.0.0.2:${port}`, `[::1]:${port}`])
      expect((await send(node.httpUrl, 'GET', '/api/v1/functions', { host: ok })).status, ok).toBe(200);
    for (const bad of [`evil.example:${port}`, 'evil.example', `localhost.evil.example:${port}`, `10.0.0.7:${port}`]) {
      const r = await send(node.httpUrl, 'POST', '/v2/models/mlp/infer', { host: bad }, INFER_BODY);
      expect(r.status, bad).toBe(403);
      expect(JSON.parse(r.body)).toMatchObject({
        code: 'PERMISSION_DENIED',
        error: expect.stringContaining('loopback'),
      });
    }
    // The metrics port too: a rebound page could read the names of every function.
    const metrics = new URL(node.metricsUrl);
    const rebound = await send(metrics.origin, 'GET', '/metrics', { host: `evil.example:${metrics.port}` });
    expect(rebound.status).toBe(403);
    expect((await send(metrics.origin, 'GET', '/metrics', { host: metrics.host })).status).toBe(200);
  });

  it("refuses another site's requests, and serves the node's own pages and non-browser clients", async () => {
    const cross: Record<string, string>[] = [
      { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' },
      { 'sec-fetch-site': 'same-site' },
      { origin: 'null' },
      { origin: 'http://localhost:3000' },
      { origin: 'https://evil.example' },
    ];
    for (const h of cross) {
      const r = await send(node.httpUrl, 'POST', '/v2/models/mlp/infer', { host, ...h }, INFER_BODY);
      expect(r.status, JSON.stringify(h)).toBe(403);
      // A deploy, which a page could otherwise send as a simple text/plain request.
      const d = await send(
        node.httpUrl,
        'POST',
        '/api/v1/functions',
        { host, 'content-type': 'text/plain', ...h },
        '{}',
      );
      expect(d.status, JSON.stringify(h)).toBe(403);
    }
    const own = await send(
      node.httpUrl,
      'POST',
      '/v2/models/mlp/infer',
      { host, origin: `http://${host}`, 'sec-fetch-site': 'same-origin', 'content-type': 'application/json' },
      INFER_BODY,
    );
    expect(own.status).toBe(200);
    const curl = await send(node.httpUrl, 'POST', '/v2/models/mlp/infer', { host }, INFER_BODY);
    expect(curl.status).toBe(200);
    expect(JSON.parse(curl.body).outputs[0].name).toBe('y');
  });

  it("reads no browser's form or text/plain body as a KServe request, and answers curl -d as Triton does", async () => {
    const forms = [
      'text/plain',
      'text/plain;charset=UTF-8',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
    ];
    // The node's own page (same origin), and a browser that sends only Sec-Fetch-Site.
    const browsers: Record<string, string>[] = [{ origin: `http://${host}` }, { 'sec-fetch-site': 'same-origin' }];
    for (const type of forms)
      for (const b of browsers) {
        const r = await send(
          node.httpUrl,
          'POST',
          '/v2/models/mlp/infer',
          { host, 'content-type': type, ...b },
          INFER_BODY,
        );
        expect(r.status, `${type} ${JSON.stringify(b)}`).toBe(400);
        expect(JSON.parse(r.body).error).toMatch(/not read as JSON/);
      }
    // `curl -d @body.json` labels the body a form and sends no Origin: Triton reads it as JSON.
    for (const type of forms) {
      const r = await send(node.httpUrl, 'POST', '/v2/models/mlp/infer', { host, 'content-type': type }, INFER_BODY);
      expect(r.status, type).toBe(200);
      expect(JSON.parse(r.body).outputs[0].name).toBe('y');
    }
  });

  it('answers JSON nested 10,000 deep with 400 on every route, and JSON over its limit with 413 before parsing it', async () => {
    const deep = (leaf: string) => `${'['.repeat(10_000)}${leaf}${']'.repeat(10_000)}`;
    const routes: [string, string][] = [
      [
        '/v2/models/mlp/infer',
        JSON.stringify({ inputs: [{ name: 'x', shape: [1, 4], datatype: 'FP32', data: 0 }] }).replace(
          '0',
          deep('1,2,3,4'),
        ),
      ],
      ['/v2/models/mlp/infer', deep('0')],
      ['/fn/mlp', `{"inputs": {"x": ${deep('1,2,3,4')}}}`],
      ['/api/v1/functions', `{"spec": ${deep('0')}}`],
      ['/v2/repository/models/mlp/load', `{"parameters": ${deep('0')}}`],
      ['/v2/systemsharedmemory/region/r/register', deep('0')],
    ];
    for (const [path, body] of routes) {
      const r = await send(node.httpUrl, 'POST', path, { host, 'content-type': 'application/json' }, body);
      expect(r.status, path).toBe(400);
      expect(JSON.parse(r.body).code, path).toBe('INVALID_INPUT');
    }
    const big = JSON.stringify({
      inputs: [{ name: 'x', shape: [1, 4], datatype: 'FP32', data: [1, 2, 3, 4] }],
      pad: 'x'.repeat(33 * 2 ** 20),
    });
    const r = await send(
      node.httpUrl,
      'POST',
      '/v2/models/mlp/infer',
      { host, 'content-type': 'application/json' },
      big,
    );
    expect(r.status).toBe(413);
    expect(JSON.parse(r.body).error).toMatch(/HEARTH_MAX_JSON_BYTES/);
    expect((await send(node.httpUrl, 'GET', '/v2/health/live', { host })).status).toBe(200);
  });

  it('answers every request with its id: the caller’s own, or a new one, also in error bodies', async () => {
    const mine = await send(node.httpUrl, 'GET', '/v2/health/live', { host, 'x-request-id': 'trace-42.a:b_c' });
    expect(mine.headers['x-request-id']).toBe('trace-42.a:b_c');
    const made = await send(node.httpUrl, 'GET', '/v2/health/live', { host });
    expect(made.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    // Malformed ids (too long, odd characters) are replaced, never echoed.
    const odd = await send(node.httpUrl, 'GET', '/v2/health/live', { host, 'x-request-id': 'a b<script>' });
    expect(odd.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    for (const path of ['/v2/models/nope/infer', '/fn/nope']) {
      const r = await send(node.httpUrl, 'POST', path, { host, 'x-request-id': 'req-404' }, INFER_BODY);
      expect(r.status).toBe(404);
      expect(JSON.parse(r.body)).toMatchObject({ code: 'FUNCTION_NOT_FOUND', request_id: 'req-404' });
    }
    const hono = await send(node.httpUrl, 'GET', '/api/v1/functions/nope', { host, 'x-request-id': 'req-hono' });
    expect(JSON.parse(hono.body)).toMatchObject({ code: 'FUNCTION_NOT_FOUND', request_id: 'req-hono' });
  });

  it("tells an invoke caller a model error's headline, not the model's TorchScript source", async () => {
    // The `fails` model raises for a negative input; the interpreter's message carries its source.
    const body = JSON.stringify({ inputs: [{ name: 'x', shape: [1, 4], datatype: 'FP32', data: [-1, -2, -3, -4] }] });
    const r = await send(node.httpUrl, 'POST', '/v2/models/fails/infer', { host, 'x-request-id': 'req-fails' }, body);
    expect(r.status).toBe(500);
    const error = JSON.parse(r.body);
    expect(error).toEqual({
      error: 'builtins.RuntimeError: negative input is not allowed',
      code: 'INFERENCE_FAILED',
      request_id: 'req-fails',
    });
    const client = inferenceClient(node.grpcAddress);
    try {
      const md = new grpc.Metadata();
      md.set('x-request-id', 'grpc-req-7');
      const infer = {
        model_name: 'fails',
        inputs: [{ name: 'x', shape: [1, 4], datatype: 'FP32', contents: { fp32_contents: [-1, -2, -3, -4] } }],
      };
      const answer = await new Promise<{ error: grpc.ServiceError | null; metadata?: grpc.Metadata }>((resolve) => {
        let metadata: grpc.Metadata | undefined;
        const call = (client as unknown as Record<string, (...a: unknown[]) => grpc.ClientUnaryCall>).ModelInfer!(
          infer,
          md,
          (error: grpc.ServiceError | null) => resolve({ error, metadata }),
        );
        call.on('metadata', (m: grpc.Metadata) => {
          metadata = m;
        });
      });
      expect(answer.error?.code).toBe(grpc.status.INTERNAL);
      expect(answer.error?.details).toBe('builtins.RuntimeError: negative input is not allowed');
      expect(answer.metadata?.get('x-request-id')).toEqual(['grpc-req-7']);
    } finally {
      client.close();
    }
  });
});

describe('front door of a node with API keys', () => {
  let node: HearthNode;
  beforeAll(async () => {
    node = await testNode(join(dir, 'keys'), {
      HEARTH_API_KEYS: 'admin-key-0001:admin,invoke-key-0002:invoke',
      HEARTH_METRICS_KEY: 'metrics-key-000000003',
    });
  });
  afterAll(() => node?.close());

  it('compares keys whole: a prefix, an extension or another case of a key is refused', async () => {
    const host = new URL(node.httpUrl).host;
    const status = async (key: string) =>
      (await send(node.httpUrl, 'GET', '/api/v1/functions', { host, authorization: `Bearer ${key}` })).status;
    expect(await status('admin-key-0001')).toBe(200);
    expect(await status('invoke-key-0002')).toBe(403);
    for (const bad of ['admin-key-000', 'admin-key-00011', 'ADMIN-KEY-0001', '', 'admin key-0001'])
      expect(await status(bad), JSON.stringify(bad)).toBe(401);
    // With keys, any Host and Origin are served: a page cannot send the key.
    expect(
      (
        await send(node.httpUrl, 'GET', '/api/v1/functions', {
          host: 'hearth.internal',
          authorization: 'Bearer admin-key-0001',
        })
      ).status,
    ).toBe(200);
  });

  it('asks for the metrics key on the metrics port', async () => {
    const m = new URL(node.metricsUrl);
    const none = await send(m.origin, 'GET', '/metrics', { host: m.host });
    expect(none.status).toBe(401);
    expect(none.headers['www-authenticate']).toBe('Bearer');
    expect(
      (await send(m.origin, 'GET', '/metrics', { host: m.host, authorization: 'Bearer admin-key-0001' })).status,
    ).toBe(401);
    const ok = await send(m.origin, 'GET', '/metrics', { host: m.host, authorization: 'Bearer metrics-key-000000003' });
    expect(ok.status).toBe(200);
    expect(ok.body).toContain('hearth_process_');
  });
});
