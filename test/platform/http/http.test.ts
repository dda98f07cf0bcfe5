import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { HearthNode } from '../../../platform/node/index.js';
import { modelPath } from '../../helpers/fixtures.js';
import { dropKeys, hookBundle, postFunction, testNode, uniquePrefix, upload } from '../../helpers/node.js';
import { maxAbsDiff } from '../../helpers/random.js';
import { pythonForwardMany } from '../../helpers/reference.js';
import type { TestS3 } from '../../helpers/s3.js';
import { startS3 } from '../../helpers/s3.js';
import { SMALL_SPEC, SMALL_X } from '../../helpers/specs.js';

const dir = await mkdtemp(join(tmpdir(), 'hearth-http-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

const SPEC = { ...SMALL_SPEC, hook: 'hook.ts' };
const X = SMALL_X;
const json = (v: unknown): RequestInit => ({
  method: 'POST',
  body: JSON.stringify(v),
  headers: { 'content-type': 'application/json' },
});
const reference = () =>
  pythonForwardMany(modelPath('small'), [[{ dtype: 'FP32', shape: [2, 4], data: Float32Array.from(X.flat()) }]])[0]!
    .outputs[0]!.data as Float32Array;

async function deploy(
  url: string,
  spec: object,
  model: string,
  hook?: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const r = await postFunction(url, { spec, artifacts: { model, ...(hook ? { hook } : {}) } }, headers);
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
}

describe('a node on the embedded default (files under the data dir)', () => {
  let node: HearthNode;
  let url: string;
  let model: string;
  let hook: string;
  const ref = reference();

  beforeAll(async () => {
    node = await testNode(join(dir, 'embedded'));
    url = node.httpUrl;
    model = await upload(url, new Uint8Array(await readFile(modelPath('small'))));
    hook = await upload(url, await hookBundle('echo', join(dir, 'bundles')));
  });
  afterAll(() => node?.close());

  it('uploads by hash: HEAD says whether the bytes are there; a wrong hash is refused', async () => {
    const head = await fetch(`${url}/api/v1/artifacts/${model}`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('x-artifact-size')).toBe(String((await readFile(modelPath('small'))).length));
    const wrong = await fetch(`${url}/api/v1/artifacts/${'0'.repeat(64)}`, { method: 'PUT', body: 'hello' });
    expect(wrong.status).toBe(400);
    expect(((await wrong.json()) as { code: string }).code).toBe('INVALID_INPUT');
    expect((await fetch(`${url}/api/v1/artifacts/${'0'.repeat(64)}`, { method: 'HEAD' })).status).toBe(404);
  });

  it('deploys a function with a hook and serves it by URL, as python3-torch computes it', async () => {
    const deployed = await deploy(url, SPEC, model, hook);
    expect(deployed).toMatchObject({
      status: 201,
      body: { name: 'small', version: 1, status: 'ready', url: '/fn/small' },
    });
    const r = await fetch(`${url}/fn/small`, json({ x: X }));
    expect(r.status).toBe(200);
    expect(r.headers.get('hearth-version')).toBe('1');
    const body = (await r.json()) as { y: number[][]; greeting: string };
    expect(body.greeting).toBe('hello');
    expect(maxAbsDiff(Float32Array.from(body.y.flat()), ref)).toBeLessThan(1e-6);
  });

  it('answers KServe v2 infer with JSON tensors, bypassing the hook', async () => {
    const r = await fetch(
      `${url}/v2/models/small/infer`,
      json({ id: 'r1', inputs: [{ name: 'x', shape: [2, 4], datatype: 'FP32', data: X.flat() }] }),
    );
    expect(r.status).toBe(200);
    const body = (await r.json()) as {
      model_name: string;
      model_version: string;
      id: string;
      outputs: { name: string; shape: number[]; datatype: string; data: number[] }[];
    };
    expect(body).toMatchObject({ model_name: 'small', model_version: '1', id: 'r1' });
    expect(body.outputs[0]).toMatchObject({ name: 'y', shape: [2, 3], datatype: 'FP32' });
    expect(maxAbsDiff(Float32Array.from(body.outputs[0]!.data), ref)).toBeLessThan(1e-6);
  });

  it('answers KServe v2 infer with the binary tensor data extension both ways', async () => {
    const header = new TextEncoder().encode(
      JSON.stringify({
        inputs: [{ name: 'x', shape: [2, 4], datatype: 'FP32', parameters: { binary_data_size: 32 } }],
        outputs: [{ name: 'y', parameters: { binary_data: true } }],
      }),
    );
    const body = new Uint8Array(header.length + 32);
    body.set(header);
    body.set(new Uint8Array(Float32Array.from(X.flat()).buffer), header.length);
    const r = await fetch(`${url}/v2/models/small/versions/1/infer`, {
      method: 'POST',
      body,
      headers: { 'inference-header-content-length': String(header.length), 'content-type': 'application/octet-stream' },
    });
    expect(r.status).toBe(200);
    const length = Number(r.headers.get('inference-header-content-length'));
    const raw = new Uint8Array(await r.arrayBuffer());
    const meta = JSON.parse(new TextDecoder().decode(raw.subarray(0, length))) as {
      outputs: { parameters: { binary_data_size: number } }[];
    };
    expect(meta.outputs[0]!.parameters.binary_data_size).toBe(24);
    const y = new Float32Array(raw.slice(length).buffer);
    expect(maxAbsDiff(y, ref)).toBeLessThan(1e-6);
  });

  it('gives model metadata and readiness, with and without a version', async () => {
    const meta = (await (await fetch(`${url}/v2/models/small`)).json()) as Record<string, unknown>;
    expect(meta).toMatchObject({
      name: 'small',
      platform: 'pytorch_libtorch',
      inputs: [{ name: 'x', datatype: 'FP32', shape: [-1, 4] }],
      outputs: [{ name: 'y', datatype: 'FP32', shape: [-1, 3] }],
    });
    expect((await fetch(`${url}/v2/models/small/ready`)).status).toBe(200);
    expect((await fetch(`${url}/v2/models/small/versions/1/ready`)).status).toBe(200);
    expect((await fetch(`${url}/v2/health/ready`)).status).toBe(200);
    expect(((await (await fetch(`${url}/v2`)).json()) as { extensions: string[] }).extensions).toContain(
      'binary_tensor_data',
    );
  });

  it('reports a version that fails to load, with the fix for a state_dict, and keeps serving the one before', async () => {
    // The commonest wrong file: torch.save(model.state_dict()).
    const junk = await upload(url, new Uint8Array(await readFile(modelPath('state_dict'))));
    const failed = await deploy(url, SPEC, junk, hook);
    expect(failed.status).toBe(422);
    expect(failed.body).toMatchObject({ version: 2, status: 'failed' });
    expect(String(failed.body.reason)).toMatch(
      /state_dict saved with torch\.save.*not TorchScript.*torch\.jit\.script\(model\)\.save/,
    );
    const r = await fetch(`${url}/fn/small`, json({ x: X }));
    expect(r.headers.get('hearth-version')).toBe('1');
    const described = (await (await fetch(`${url}/api/v1/functions/small`)).json()) as {
      versions: { version: number; status: string }[];
      traffic: Record<string, number>;
    };
    expect(described.versions.map((v) => v.status)).toEqual(['ready', 'failed']);
    expect(described.traffic).toEqual({ 1: 100 });
  });

  it('moves traffic to a new version once it is warm, and rolls back by a traffic change', async () => {
    const v3 = await deploy(url, SPEC, model, hook);
    expect(v3.body).toMatchObject({ version: 3, status: 'ready' });
    const held = async () =>
      (
        (await (await fetch(`${url}/api/v1/pools`)).json()) as {
          pools: { function: string; version: number; state: string }[];
        }
      ).pools
        .filter((p) => p.function === 'small')
        .map((p) => `${p.version}:${p.state}`)
        .sort();
    // v1 lost all its traffic to v3: its pool drained and went.
    expect(await held()).toEqual(['3:warm']);
    expect((await fetch(`${url}/fn/small`, json({ x: X }))).headers.get('hearth-version')).toBe('3');
    const back = await fetch(`${url}/api/v1/functions/small/traffic`, {
      method: 'PUT',
      body: JSON.stringify({ traffic: { 1: 100 } }),
      headers: { 'content-type': 'application/json' },
    });
    expect(await back.json()).toEqual({ name: 'small', traffic: { 1: 100 } });
    expect(await held()).toEqual([]);
    expect((await fetch(`${url}/fn/small`, json({ x: X }))).headers.get('hearth-version')).toBe('1');
    expect((await fetch(`${url}/fn/small/versions/3`, json({ x: X }))).headers.get('hearth-version')).toBe('3');
    const pools = (await (await fetch(`${url}/api/v1/pools`)).json()) as {
      pools: { function: string; version: number; state: string }[];
    };
    expect(
      pools.pools
        .filter((p) => p.function === 'small')
        .map((p) => `${p.version}:${p.state}`)
        .sort(),
    ).toEqual(['1:warm', '3:warm']);
  });

  it('answers a repeated Idempotency-Key with the first response, without running it again; the key with another body is 422', async () => {
    const before = (
      (await (await fetch(`${url}/api/v1/pools`)).json()) as {
        pools: { function: string; version: number; success: number }[];
      }
    ).pools.find((p) => p.function === 'small' && p.version === 1)!.success;
    const send = (x: number[][]) =>
      fetch(`${url}/fn/small/versions/1`, {
        ...json({ x }),
        headers: { 'content-type': 'application/json', 'idempotency-key': 'order-42' },
      });
    const [a, b] = await Promise.all([send(X), send(X)]);
    const c = await send([[9, 9, 9, 9]]);
    const bodies = await Promise.all([a, b, c].map((r) => r.json()));
    expect(bodies[1]).toEqual(bodies[0]);
    expect(c.status).toBe(422);
    expect(bodies[2]).toMatchObject({ code: 'IDEMPOTENCY_CONFLICT' });
    expect([a, b, c].filter((r) => r.headers.get('idempotent-replayed') === 'true')).toHaveLength(1);
    const after = (
      (await (await fetch(`${url}/api/v1/pools`)).json()) as {
        pools: { function: string; version: number; success: number }[];
      }
    ).pools.find((p) => p.function === 'small' && p.version === 1)!.success;
    expect(after - before).toBe(1);
  });

  it('maps errors to statuses with one body shape', async () => {
    const missing = await fetch(`${url}/fn/nope`, json({}));
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({
      error: "no function named 'nope' on this node (hearth ls lists them)",
      code: 'FUNCTION_NOT_FOUND',
      request_id: missing.headers.get('x-request-id'),
    });
    const noVersion = await fetch(`${url}/fn/small/versions/9`, json({ x: X }));
    expect(noVersion.status).toBe(404);
    expect(((await noVersion.json()) as { error: string }).error).toBe(
      "function 'small' has no version 9 (hearth versions small lists them)",
    );
    // KServe keeps Triton's own words, which its clients look for.
    const kserve = await fetch(`${url}/v2/models/nope/infer`, json({ inputs: [] }));
    expect(kserve.status).toBe(404);
    expect(((await kserve.json()) as { error: string }).error).toBe("Request for unknown model: 'nope' is not found");
    const bad = await fetch(
      `${url}/v2/models/small/infer`,
      json({ inputs: [{ name: 'x', shape: [1, 3], datatype: 'FP32', data: [1, 2, 3] }] }),
    );
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: string }).error).toMatch(
      /input "x" has shape \[1, 3\], expected \[batch, 4\]/,
    );
    const badSize = await fetch(
      `${url}/v2/models/small/infer`,
      json({ inputs: [{ name: 'x', shape: [1, 4], datatype: 'FP32', data: [1, 2, 3] }] }),
    );
    expect(badSize.status).toBe(400);
    const hookInput = await fetch(`${url}/fn/small`, {
      method: 'POST',
      body: 'not json',
      headers: { 'content-type': 'application/json' },
    });
    expect(hookInput.status).toBe(400);
    const badDeploy = await deploy(url, { ...SPEC, name: '../Bad_Name' }, model);
    expect(badDeploy.status).toBe(400);
    expect(String(badDeploy.body.error)).toMatch(/name: must be a model name as Triton takes it/);
  });

  it("serves Triton's repository extension", async () => {
    const index = (await (await fetch(`${url}/v2/repository/index`, { method: 'POST' })).json()) as {
      name: string;
      version: string;
      state: string;
    }[];
    expect(index.filter((m) => m.name === 'small').map((m) => `${m.version}:${m.state}`)).toEqual([
      '1:READY',
      '2:UNAVAILABLE',
      '3:READY',
    ]);
    expect((await fetch(`${url}/v2/repository/models/small/unload`, { method: 'POST' })).status).toBe(200);
    const after = (await (await fetch(`${url}/v2/repository/index`, { method: 'POST' })).json()) as {
      name: string;
      state: string;
    }[];
    expect(after.filter((m) => m.name === 'small' && m.state === 'READY')).toHaveLength(0);
    expect((await fetch(`${url}/v2/repository/models/small/load`, { method: 'POST' })).status).toBe(200);
  });

  it('keeps its deployments across a restart, cold-starting them on the first call', async () => {
    await node.close();
    node = await testNode(join(dir, 'embedded'));
    url = node.httpUrl;
    const r = await fetch(`${url}/fn/small`, json({ x: X }));
    expect(r.status).toBe(200);
    expect(r.headers.get('hearth-version')).toBe('1');
    expect(maxAbsDiff(Float32Array.from(((await r.json()) as { y: number[][] }).y.flat()), ref)).toBeLessThan(1e-6);
  });
});

describe('limits and keys', () => {
  let node: HearthNode;
  beforeAll(async () => {
    node = await testNode(join(dir, 'keys'), {
      HEARTH_API_KEYS: 'invoke-key-1234:invoke,admin-key-5678:admin',
      HEARTH_MAX_BODY_BYTES: '2048',
    });
  });
  afterAll(() => node?.close());

  it('needs a key on every route but health, and the admin scope to manage', async () => {
    const url = node.httpUrl;
    expect((await fetch(`${url}/v2/health/live`)).status).toBe(200);
    expect((await fetch(`${url}/api/v1/functions`)).status).toBe(401);
    expect((await fetch(`${url}/v2/models/x`)).status).toBe(401);
    expect(
      (await fetch(`${url}/api/v1/functions`, { headers: { authorization: 'Bearer invoke-key-1234' } })).status,
    ).toBe(403);
    expect(
      (await fetch(`${url}/api/v1/functions`, { headers: { authorization: 'Bearer admin-key-5678' } })).status,
    ).toBe(200);
    expect(
      (await fetch(`${url}/fn/x`, { method: 'POST', headers: { authorization: 'Bearer invoke-key-1234' } })).status,
    ).toBe(404);
  });

  it('refuses a body over the limit with 413', async () => {
    const r = await fetch(`${node.httpUrl}/fn/x`, {
      method: 'POST',
      body: new Uint8Array(4096),
      headers: { authorization: 'Bearer invoke-key-1234' },
    });
    expect(r.status).toBe(413);
    expect(((await r.json()) as { code: string }).code).toBe('PAYLOAD_TOO_LARGE');
  });

  it('refuses a chunked body (no Content-Length) once it passes the limit, on both hot routes', async () => {
    for (const path of ['/fn/x', '/v2/models/x/infer']) {
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          for (let i = 0; i < 4; i++) controller.enqueue(new Uint8Array(1024));
          controller.close();
        },
      });
      const r = await fetch(`${node.httpUrl}${path}`, {
        method: 'POST',
        body,
        duplex: 'half',
        headers: { authorization: 'Bearer invoke-key-1234' },
      } as RequestInit);
      expect(r.status).toBe(413);
      expect(((await r.json()) as { code: string }).code).toBe('PAYLOAD_TOO_LARGE');
    }
  });
});

describe('a node on Redis and S3', () => {
  let node: HearthNode;
  let s3: TestS3;
  const prefix = uniquePrefix();
  beforeAll(async () => {
    s3 = await startS3();
    node = await testNode(join(dir, 'cluster'), {
      REDIS_URL: 'redis://127.0.0.1:6379',
      HEARTH_REDIS_PREFIX: prefix,
      HEARTH_S3_BUCKET: s3.bucket,
      HEARTH_S3_ENDPOINT: s3.endpoint,
      HEARTH_S3_PREFIX: 'hearth/',
    });
  });
  afterAll(async () => {
    await node?.close();
    await s3?.close();
    await dropKeys(prefix);
  });

  it('deploys with artifacts in S3 and the registry in Redis, and serves the same answers', async () => {
    const url = node.httpUrl;
    const model = await upload(url, new Uint8Array(await readFile(modelPath('small'))));
    const hook = await upload(url, await hookBundle('echo', join(dir, 'bundles')));
    expect((await deploy(url, SPEC, model, hook)).body).toMatchObject({ version: 1, status: 'ready' });
    const r = await fetch(`${url}/fn/small`, json({ x: X }));
    expect(maxAbsDiff(Float32Array.from(((await r.json()) as { y: number[][] }).y.flat()), reference())).toBeLessThan(
      1e-6,
    );
    const redis = new Redis('redis://127.0.0.1:6379');
    expect(JSON.parse((await redis.get(`${prefix}fn:small`))!).versions).toHaveLength(1);
    redis.disconnect();
  });
});
