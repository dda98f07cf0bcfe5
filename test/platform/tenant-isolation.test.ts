/**
 * Two teams on one node (issue 42's tenants): each key carries a tenant, and a tenant's deploy key
 * manages only its own functions, secrets and artifacts. Each attack below is one a deploy or invoke
 * key of team B tried on the node before tenants: take A's name, read or change A's function on
 * every route (management API, function URL, KServe over HTTP and gRPC, Triton's repository API),
 * bind A's secret by its name, deploy A's model by its sha256 without having its bytes, overwrite
 * A's artifact with other bytes. A function B may not see answers as one that does not exist.
 */
import { createHash } from 'node:crypto';
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { HearthNode } from '../../platform/node/index.js';
import { modelPath } from '../helpers/fixtures.js';
import { grpcCall, inferenceClient } from '../helpers/grpc.js';
import { deployFixture, hookBundle, postFunction, testNode, upload } from '../helpers/node.js';
import { maxAbsDiff } from '../helpers/random.js';
import { pythonForwardMany } from '../helpers/reference.js';
import { SMALL_SPEC, SMALL_X } from '../helpers/specs.js';

const ADMIN = 'ops-admin-key-0001';
const A_DEPLOY = 'team-a-deploy-0001';
const A_INVOKE = 'team-a-invoke-0001';
/** Team A's web app: may call a-fn only. */
const A_ONE = 'team-a-webapp-0001';
const B_DEPLOY = 'team-b-deploy-0001';
const B_INVOKE = 'team-b-invoke-0001';
const A_SHM = 'team-a-shm-000001';
const B_SHM = 'team-b-shm-000001';
/** The default tenant's (a node's keys before tenants). */
const DEFAULT_DEPLOY = 'default-deploy-0001';
const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

const [ref] = pythonForwardMany(modelPath('small'), [
  [{ dtype: 'FP32' as const, shape: [2, 4], data: Float32Array.from(SMALL_X.flat()) }],
]).map((r) => r.outputs[0]!.data as Float32Array);

const dir = await mkdtemp(join(tmpdir(), 'hearth-tenant-isolation-'));
let node: HearthNode;
const url = () => node.httpUrl;
const get = (path: string, key: string) => fetch(`${url()}${path}`, { headers: bearer(key) });
const send = (method: string, path: string, key: string, body?: unknown) =>
  fetch(`${url()}${path}`, {
    method,
    headers: { ...bearer(key), 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
/** A function URL's call: {"inputs": …} without a hook; {"x": …} to the functions with the `secret` hook. */
const callFn = (name: string, key: string) =>
  send('POST', `/fn/${name}`, key, HOOKED.has(name) ? { x: SMALL_X } : { inputs: { x: SMALL_X } });
const HOOKED = new Set(['a-fn', 'b-fn']);
const inferKserve = (name: string, key: string) =>
  send('POST', `/v2/models/${name}/infer`, key, {
    inputs: [{ name: 'x', datatype: 'FP32', shape: [2, 4], data: SMALL_X.flat() }],
  });
const small = async () => new Uint8Array(await readFile(modelPath('small')));

beforeAll(async () => {
  const keys = join(dir, 'keys.yaml');
  await writeFile(
    keys,
    [
      'keys:',
      `  - { key: ${ADMIN}, scope: admin }`,
      `  - { key: ${A_DEPLOY}, scope: deploy, tenant: team-a }`,
      `  - { key: ${A_INVOKE}, scope: invoke, tenant: team-a }`,
      `  - { key: ${A_ONE}, scope: invoke, tenant: team-a, functions: [a-fn] }`,
      `  - { key: ${B_DEPLOY}, scope: deploy, tenant: team-b }`,
      `  - { key: ${B_INVOKE}, scope: invoke, tenant: team-b }`,
      `  - { key: ${A_SHM}, scope: shm, tenant: team-a }`,
      `  - { key: ${B_SHM}, scope: shm, tenant: team-b }`,
      `  - { key: ${DEFAULT_DEPLOY}, scope: deploy }`,
    ].join('\n'),
  );
  node = await testNode(join(dir, 'node'), { HEARTH_API_KEYS_FILE: keys });
  // Team A: a-fn (with A's secret) and a-two.
  expect((await send('PUT', '/api/v1/secrets/API_TOKEN', A_DEPLOY, { value: 'team-a-token' })).status).toBe(200);
  const spec = { ...SMALL_SPEC, name: 'a-fn', hook: 'hook.ts', secrets: ['API_TOKEN'] };
  expect((await deployFixture(url(), spec, { model: 'small', hook: 'secret' }, bearer(A_DEPLOY))).status).toBe(201);
  const two = { ...SMALL_SPEC, name: 'a-two' };
  expect((await deployFixture(url(), two, { model: 'small' }, bearer(A_DEPLOY))).status).toBe(201);
}, 180_000);
afterAll(async () => {
  await node?.close();
  await rm(dir, { recursive: true, force: true });
});

/** The small model uploaded and deployed as NAME with KEY. */
async function deploySmall(name: string, key: string): Promise<Response> {
  const model = await upload(url(), await small(), bearer(key));
  return postFunction(url(), { spec: { ...SMALL_SPEC, name }, artifacts: { model } }, bearer(key));
}

/** A function's description, as KEY is told it. */
async function describedAs(name: string, key: string): Promise<{ tenant: string; versions: unknown[] }> {
  return (await (await get(`/api/v1/functions/${name}`, key)).json()) as { tenant: string; versions: unknown[] };
}

describe('tenants on one node', () => {
  it("refuses B a deploy under A's name (409), and leaves A's function as it was", async () => {
    const r = await deploySmall('a-fn', B_DEPLOY);
    expect(r.status).toBe(409);
    expect(((await r.json()) as { error: string }).error).toMatch(/a-fn is taken by another tenant's function/);
    const described = await describedAs('a-fn', A_DEPLOY);
    expect(described).toMatchObject({ tenant: 'team-a' });
    expect(described.versions).toHaveLength(1);
  });

  it("answers B on every management route for A's function as for a name nobody holds", async () => {
    const routes: [string, string, unknown?][] = [
      ['GET', '/api/v1/functions/NAME'],
      ['GET', '/api/v1/functions/NAME/logs'],
      ['GET', '/api/v1/functions/NAME/series'],
      ['PUT', '/api/v1/functions/NAME/traffic', { traffic: { '1': 100 } }],
      ['POST', '/api/v1/functions/NAME/rollback'],
      ['PATCH', '/api/v1/functions/NAME/scaling', { maxInstances: 1 }],
      ['DELETE', '/api/v1/functions/NAME'],
    ];
    for (const [method, path, body] of routes) {
      const theirs = await send(method, path.replace('NAME', 'a-fn'), B_DEPLOY, body);
      const nobodys = await send(method, path.replace('NAME', 'z-fn'), B_DEPLOY, body);
      expect([method, path, theirs.status]).toEqual([method, path, 404]);
      expect((await theirs.text()).replaceAll('a-fn', 'z-fn')).toBe(await nobodys.text());
    }
    const listed = (await (await get('/api/v1/functions', B_DEPLOY)).json()) as { functions: unknown[] };
    expect(listed.functions).toEqual([]);
    const catalog = (await (await get('/api/v1/catalog', B_INVOKE)).json()) as { functions: unknown[]; tenant: string };
    expect(catalog).toMatchObject({ functions: [], tenant: 'team-b' });
    expect((await (await get('/api/v1/pools', B_DEPLOY)).json()) as object).toEqual({ pools: [] });
    // A's function still serves A, whole.
    expect((await callFn('a-two', A_INVOKE)).status).toBe(200);
  });

  it("keeps A's function from B's invoke key on the function URL, KServe over HTTP and gRPC, and Triton's repository API", async () => {
    for (const key of [B_INVOKE, B_DEPLOY]) {
      const fn = await callFn('a-two', key);
      expect(fn.status).toBe(404);
      expect(((await fn.json()) as { error: string }).error).toBe(
        "no function named 'a-two' on this node (hearth ls lists them)",
      );
      const kserve = await inferKserve('a-two', key);
      expect(kserve.status).toBe(404);
      expect(((await kserve.json()) as { error: string }).error).toBe(
        "Request for unknown model: 'a-two' is not found",
      );
      expect((await get('/v2/models/a-two', key)).status).toBe(404);
      expect((await get('/v2/models/a-two/config', key)).status).toBe(404);
      expect((await get('/v2/models/a-two/ready', key)).status).toBe(503);
      expect((await get('/v2/models/a-two/stats', key)).status).toBe(404);
      const stats = (await (await get('/v2/models/stats', key)).json()) as { model_stats: unknown[] };
      expect(stats.model_stats).toEqual([]);
    }
    expect(await (await send('POST', '/v2/repository/index', B_DEPLOY, {})).json()).toEqual([]);
    for (const path of ['/v2/repository/models/NAME/unload', '/v2/repository/models/NAME/load']) {
      const theirs = await send('POST', path.replace('NAME', 'a-two'), B_DEPLOY, {});
      const nobodys = await send('POST', path.replace('NAME', 'z-two'), B_DEPLOY, {});
      expect(theirs.status).toBe(nobodys.status);
      expect((await theirs.text()).replaceAll('a-two', 'z-two')).toBe(await nobodys.text());
    }

    const rpc = inferenceClient(node.grpcAddress);
    try {
      const infer = {
        model_name: 'a-two',
        inputs: [{ name: 'x', datatype: 'FP32', shape: [2, 4], contents: { fp32_contents: SMALL_X.flat() } }],
      };
      const refused = await grpcCall(rpc, 'ModelInfer', infer, B_INVOKE).catch(
        (e: { code: number; details: string }) => e,
      );
      expect(refused).toMatchObject({ code: 5, details: "Request for unknown model: 'a-two' is not found" });
      const meta = await grpcCall(rpc, 'ModelMetadata', { name: 'a-two' }, B_INVOKE).catch((e: { code: number }) => e);
      expect(meta).toMatchObject({ code: 5 });
      const ready = (await grpcCall(rpc, 'ModelReady', { name: 'a-two' }, B_INVOKE)) as { ready: boolean };
      expect(ready.ready).toBe(false);
      const index = (await grpcCall(rpc, 'RepositoryIndex', {}, B_DEPLOY)) as { models: unknown[] };
      expect(index.models).toEqual([]);
      // A's own key reaches it on the same routes.
      const answered = (await grpcCall(rpc, 'ModelInfer', infer, A_INVOKE)) as { outputs: { name: string }[] };
      expect(answered.outputs[0]!.name).toBe('y');
    } finally {
      rpc.close();
    }
    const kserve = (await (await inferKserve('a-two', A_INVOKE)).json()) as { outputs: { data: number[] }[] };
    expect(maxAbsDiff(Float32Array.from(kserve.outputs[0]!.data), ref!)).toBeLessThan(1e-5);
  });

  it('limits an invoke key that names functions to those, and keeps invoke keys from deploying', async () => {
    const one = await callFn('a-fn', A_ONE);
    expect(one.status).toBe(200);
    expect(((await one.json()) as { token: string }).token).toBe('team-a-token');
    expect((await callFn('a-two', A_ONE)).status).toBe(404);
    const catalog = (await (await get('/api/v1/catalog', A_ONE)).json()) as { functions: { name: string }[] };
    expect(catalog.functions.map((f) => f.name)).toEqual(['a-fn']);
    const deploy = await send('POST', '/api/v1/functions', A_INVOKE, { spec: SMALL_SPEC, artifacts: {} });
    expect(deploy.status).toBe(403);
    expect(((await deploy.json()) as { error: string }).error).toMatch(/scope invoke.*needs scope deploy or admin/);
    // The node's own views stay an admin's.
    expect((await get('/api/v1/nodes', A_DEPLOY)).status).toBe(403);
    expect((await send('POST', '/api/v1/artifacts/import', A_DEPLOY, { uri: 's3://x/y' })).status).toBe(403);
    expect((await send('POST', '/v2/systemsharedmemory/region/r/register', A_DEPLOY, {})).status).toBe(403);
  });

  it("binds a spec's secrets from its own tenant only: B's API_TOKEN is B's, and A's is never listed to B", async () => {
    const spec = { ...SMALL_SPEC, name: 'b-fn', hook: 'hook.ts', secrets: ['API_TOKEN'] };
    // B has no API_TOKEN of its own: A's, of the same name, is not B's to bind.
    const missing = await deployFixture(url(), spec, { model: 'small', hook: 'secret' }, bearer(B_DEPLOY));
    expect(missing.status).toBe(422);
    expect(((await missing.json()) as { reason: string }).reason).toMatch(
      /secret\(s\) API_TOKEN that this tenant \(team-b\) does not have/,
    );
    expect(await (await get('/api/v1/secrets', B_DEPLOY)).json()).toEqual({ secrets: [] });
    expect((await send('PUT', '/api/v1/secrets/API_TOKEN', B_DEPLOY, { value: 'team-b-token' })).status).toBe(200);
    expect((await send('GET', '/api/v1/secrets?tenant=team-a', B_DEPLOY)).status).toBe(400);
    const again = await deployFixture(url(), spec, { model: 'small', hook: 'secret' }, bearer(B_DEPLOY));
    expect(again.status).toBe(201);
    const b = (await (await callFn('b-fn', B_INVOKE)).json()) as { token: string; y: number[][] };
    expect(b.token).toBe('team-b-token');
    expect(maxAbsDiff(Float32Array.from(b.y.flat()), ref!)).toBeLessThan(1e-5);
    const a = (await (await callFn('a-fn', A_INVOKE)).json()) as { token: string };
    expect(a.token).toBe('team-a-token');
    // B deleting its API_TOKEN leaves A's.
    expect(await (await send('DELETE', '/api/v1/secrets/API_TOKEN', B_DEPLOY)).json()).toEqual({
      name: 'API_TOKEN',
      deleted: true,
    });
    const names = (await (await get('/api/v1/secrets', A_DEPLOY)).json()) as { secrets: { name: string }[] };
    expect(names.secrets.map((s) => s.name)).toEqual(['API_TOKEN']);
    const admin = (await (await get('/api/v1/secrets?tenant=team-a', ADMIN)).json()) as { secrets: unknown[] };
    expect(admin.secrets).toHaveLength(1);
  });

  it('deploys an artifact only for a tenant that sent its bytes, and never overwrites a stored one', async () => {
    // A model only A has uploaded: its sha256 is no use to B.
    const bytes = await hookBundle('echo', join(dir, 'bundles'));
    const sha = createHash('sha256').update(bytes).digest('hex');
    expect((await upload(url(), bytes, bearer(A_DEPLOY))) === sha).toBe(true);
    expect(
      (await fetch(`${url()}/api/v1/artifacts/${sha}`, { method: 'HEAD', headers: bearer(B_DEPLOY) })).status,
    ).toBe(404);
    const model = await upload(url(), await small(), bearer(B_DEPLOY));
    const spec = { ...SMALL_SPEC, name: 'b-hooked', hook: 'hook.ts' };
    const refused = await postFunction(url(), { spec, artifacts: { model, hook: sha } }, bearer(B_DEPLOY));
    expect(refused.status).toBe(404);
    expect(((await refused.json()) as { error: string }).error).toBe(`the hook artifact ${sha} has not been uploaded`);
    // Other bytes under A's sha256: refused, and A's artifact is untouched.
    const forged = await fetch(`${url()}/api/v1/artifacts/${sha}`, {
      method: 'PUT',
      headers: bearer(B_DEPLOY),
      body: new Uint8Array([1, 2, 3]),
    });
    expect(forged.status).toBe(400);
    const stored = (await (await get(`/api/v1/artifacts/${sha}`, A_DEPLOY)).json()) as { size: number };
    expect(stored.size).toBe(bytes.byteLength);
    // With the bytes, B may use it (stored once, not again; answered as a first upload, so B does not
    // learn that A had it).
    const sent = await fetch(`${url()}/api/v1/artifacts/${sha}`, {
      method: 'PUT',
      headers: bearer(B_DEPLOY),
      body: bytes,
    });
    expect(sent.status).toBe(201);
    expect(await sent.json()).toMatchObject({ created: true, size: bytes.byteLength });
    const echo = { ...spec, name: 'b-echo' };
    expect((await postFunction(url(), { spec: echo, artifacts: { model, hook: sha } }, bearer(B_DEPLOY))).status).toBe(
      201,
    );
  });

  it("lets an admin see and manage every tenant's functions, and keeps a function's tenant when it redeploys it", async () => {
    const listed = (await (await get('/api/v1/functions', ADMIN)).json()) as { functions: { name: string }[] };
    expect(listed.functions.map((f) => f.name).sort()).toEqual(['a-fn', 'a-two', 'b-echo', 'b-fn']);
    const r = await deploySmall('a-two', ADMIN);
    expect(r.status).toBe(201);
    const described = await describedAs('a-two', A_DEPLOY);
    expect(described.tenant).toBe('team-a');
    expect(described.versions).toHaveLength(2);
    expect((await callFn('a-two', A_INVOKE)).status).toBe(200);
    expect((await callFn('a-two', B_INVOKE)).status).toBe(404);
  });

  it("maps a tenant's shared memory segments for its own keys only", async () => {
    const key = `/team-a.seg-${process.pid}`;
    await writeFile(`/dev/shm${key}`, new Uint8Array(64));
    try {
      const register = (who: string, region: string) =>
        send('POST', `/v2/systemsharedmemory/region/${region}/register`, who, { key, byte_size: 48 });
      const refused = await register(B_SHM, 'steal');
      expect(refused.status).toBe(403);
      expect(((await refused.json()) as { error: string }).error).toMatch(/segments are named "\/team-b\.…"/);
      expect((await register(A_SHM, 'mine')).status).toBe(200);
      expect((await send('POST', '/v2/systemsharedmemory/region/mine/unregister', A_SHM)).status).toBe(200);
    } finally {
      await rm(`/dev/shm${key}`, { force: true });
    }
  });

  it("keeps an artifact stored before tenants the default tenant's when another tenant sends its bytes", async () => {
    const bytes = new TextEncoder().encode(`stored before tenants ${process.pid}`);
    const sha = createHash('sha256').update(bytes).digest('hex');
    const path = join(dir, 'node', 'artifacts', sha.slice(0, 2), sha);
    await mkdir(join(path, '..'), { recursive: true });
    await writeFile(join(dir, 'legacy'), bytes);
    await copyFile(join(dir, 'legacy'), path);
    const head = (key: string) => fetch(`${url()}/api/v1/artifacts/${sha}`, { method: 'HEAD', headers: bearer(key) });
    expect((await head(DEFAULT_DEPLOY)).status).toBe(200);
    expect((await head(B_DEPLOY)).status).toBe(404);
    const sent = await fetch(`${url()}/api/v1/artifacts/${sha}`, {
      method: 'PUT',
      headers: bearer(B_DEPLOY),
      body: bytes,
    });
    expect(sent.status).toBe(201);
    expect((await head(B_DEPLOY)).status).toBe(200);
    expect((await head(DEFAULT_DEPLOY)).status).toBe(200);
    expect((await head(A_DEPLOY)).status).toBe(404);
  });
});
