/**
 * One caller cannot reach another's data (issue 11's tenant part): idempotency keys and jobs belong
 * to the API key that made them; the same key with a different request is 422; an invoke key reads
 * and lists only its own jobs (an admin key reads and lists all); names that could reach a path are unknown models.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { HearthNode } from '../../platform/node/index.js';
import { modelPath } from '../helpers/fixtures.js';
import { grpcCall, inferenceClient } from '../helpers/grpc.js';
import { deployFixture, testNode } from '../helpers/node.js';
import { maxAbsDiff } from '../helpers/random.js';
import { pythonForwardMany } from '../helpers/reference.js';
import { SMALL_SPEC } from '../helpers/specs.js';
import { waitFor } from '../helpers/wait.js';

const A = 'tenant-a-key-0001';
const B = 'tenant-b-key-0002';
const ADMIN = 'admin-key-00000003';
const SPEC = SMALL_SPEC;
const XA = [[1, 2, 3, 4]];
const XB = [[-4, 0.5, 2, 8]];
const [refA, refB] = pythonForwardMany(
  modelPath('small'),
  [XA, XB].map((x) => [{ dtype: 'FP32' as const, shape: [1, 4], data: Float32Array.from(x.flat()) }]),
).map((r) => r.outputs[0]!.data as Float32Array);

const dir = await mkdtemp(join(tmpdir(), 'hearth-tenants-'));
let node: HearthNode;

const call = (key: string, x: number[][], headers: Record<string, string> = {}) =>
  fetch(`${node.httpUrl}/fn/small`, {
    method: 'POST',
    body: JSON.stringify({ inputs: { x } }),
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
  });
const output = async (r: Response) =>
  Float32Array.from(((await r.json()) as { outputs: { y: number[][] } }).outputs.y.flat());

beforeAll(async () => {
  node = await testNode(join(dir, 'node'), { HEARTH_API_KEYS: `${A}:invoke,${B}:invoke,${ADMIN}:admin` });
  const r = await deployFixture(node.httpUrl, SPEC, { model: 'small' }, { authorization: `Bearer ${ADMIN}` });
  expect(r.status).toBe(201);
});
afterAll(async () => {
  await node?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('tenants', () => {
  it('keeps synchronous idempotency keys per caller, and refuses a key reused for another request with 422', async () => {
    const first = await call(A, XA, { 'idempotency-key': 'k-1' });
    expect(maxAbsDiff(await output(first), refA!)).toBeLessThan(1e-5);
    // B's request with the same key is B's own: B gets its own answer, not A's.
    const other = await call(B, XB, { 'idempotency-key': 'k-1' });
    expect(other.headers.get('idempotent-replayed')).toBeNull();
    expect(maxAbsDiff(await output(other), refB!)).toBeLessThan(1e-5);
    const replay = await call(A, XA, { 'idempotency-key': 'k-1' });
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    const conflict = await call(A, XB, { 'idempotency-key': 'k-1' });
    expect(conflict.status).toBe(422);
    expect(((await conflict.json()) as { code: string }).code).toBe('IDEMPOTENCY_CONFLICT');
  });

  it('keeps jobs and their idempotency keys per caller: another invoke key sees no job, an admin key sees all', async () => {
    const submit = (key: string, x: number[][]) =>
      call(key, x, { prefer: 'respond-async', 'idempotency-key': 'job-1' });
    const a = (await (await submit(A, XA)).json()) as { id: string };
    const b = (await (await submit(B, XB)).json()) as { id: string };
    expect(b.id).not.toBe(a.id);
    expect((await submit(A, XB)).status).toBe(422);
    const again = await submit(A, XA);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(((await again.json()) as { id: string }).id).toBe(a.id);
    const read = (key: string, id: string, path = '') =>
      fetch(`${node.httpUrl}/api/v1/jobs/${id}${path}`, { headers: { authorization: `Bearer ${key}` } });
    await waitFor(
      "A's job",
      async () => ((await (await read(A, a.id)).json()) as { status: string }).status,
      (s) => s === 'succeeded',
    );
    expect((await read(B, a.id)).status).toBe(404);
    expect((await read(B, a.id, '/result')).status).toBe(404);
    expect((await read(ADMIN, a.id)).status).toBe(200);
    const result = await read(A, a.id, '/result');
    expect(maxAbsDiff(await output(result), refA!)).toBeLessThan(1e-5);
    // The listing too: each invoke key lists its own jobs only; the admin key lists both.
    const list = async (key: string) =>
      (
        (await (
          await fetch(`${node.httpUrl}/api/v1/jobs`, { headers: { authorization: `Bearer ${key}` } })
        ).json()) as { jobs: { id: string }[] }
      ).jobs.map((j) => j.id);
    expect(await list(A)).toEqual([a.id]);
    expect(await list(B)).toEqual([b.id]);
    expect((await list(ADMIN)).sort()).toEqual([a.id, b.id].sort());
  });

  it("shows any key the catalog (the functions' inputs and outputs, its own scope) and no internals", async () => {
    const catalog = async (key?: string) =>
      fetch(`${node.httpUrl}/api/v1/catalog`, key ? { headers: { authorization: `Bearer ${key}` } } : {});
    expect((await catalog()).status).toBe(401);
    const asA = await catalog(A);
    expect(asA.status).toBe(200);
    const text = await asA.text();
    const body = JSON.parse(text) as {
      scope: string;
      functions: { name: string; versions: { inputs: { name: string; dims: number[] }[]; hook: boolean }[] }[];
    };
    expect(body.scope).toBe('invoke');
    const small = body.functions.find((f) => f.name === 'small')!;
    expect(small.versions[0]!.inputs).toEqual(SPEC.inputs.map((i) => ({ name: i.name, dtype: i.dtype, dims: i.dims })));
    expect(small.versions[0]!.hook).toBe(false);
    // Nothing an invoke key may not see: no artifact digests, scaling or secrets.
    expect(text).not.toMatch(/artifacts|[0-9a-f]{64}|scaling|secrets/);
    expect(((await (await catalog(ADMIN)).json()) as { scope: string }).scope).toBe('admin');
    // The management listing itself stays admin-only.
    expect(
      (await fetch(`${node.httpUrl}/api/v1/functions`, { headers: { authorization: `Bearer ${A}` } })).status,
    ).toBe(403);
  });

  it('reads and deletes no file through a traversal name (a record-shaped file sits beside the registry)', async () => {
    const secret = join(dir, 'node', 'secret.json');
    await writeFile(secret, JSON.stringify({ name: 'secret', createdAt: '', versions: [], traffic: {} }));
    const headers = { authorization: `Bearer ${ADMIN}` };
    expect((await fetch(`${node.httpUrl}/api/v1/functions/..%2Fsecret`, { headers })).status).toBe(404);
    expect((await fetch(`${node.httpUrl}/api/v1/functions/..%2Fsecret`, { method: 'DELETE', headers })).status).toBe(
      404,
    );
    expect((await fetch(`${node.httpUrl}/fn/..%2Fsecret`, { method: 'POST', headers, body: '{}' })).status).toBe(404);
    expect(await readFile(secret, 'utf8')).toContain('"secret"');
  });

  it.each([
    '..%2F..%2Fetc%2Fpasswd',
    '..',
    '.hidden',
    'a%2Fb',
    '%2E%2E',
  ])('answers the name %s as an unknown model on every route, reading no file', async (name) => {
    const headers = { authorization: `Bearer ${ADMIN}` };
    for (const [method, path] of [
      ['POST', `/fn/${name}`],
      ['POST', `/v2/models/${name}/infer`],
      ['GET', `/v2/models/${name}`],
      ['GET', `/v2/models/${name}/config`],
      ['GET', `/api/v1/functions/${name}`],
      ['DELETE', `/api/v1/functions/${name}`],
    ] as const) {
      const r = await fetch(`${node.httpUrl}${path}`, {
        method,
        headers,
        ...(method === 'POST' ? { body: '{"inputs": []}' } : {}),
      });
      expect([404], `${method} ${path}`).toContain(r.status);
    }
    const rpc = inferenceClient(node.grpcAddress);
    try {
      const error = await grpcCall(rpc, 'ModelMetadata', { name: decodeURIComponent(name) }, ADMIN).catch(
        (e: grpc.ServiceError) => e,
      );
      expect((error as grpc.ServiceError).code).toBe(grpc.status.NOT_FOUND);
    } finally {
      rpc.close();
    }
  });
});
