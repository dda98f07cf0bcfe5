// The management API's HTTP contract, socket-free: requests go to the hono app with app.request(),
// over the embedded registry, artifact store and job queue in a temporary folder. What they load
// (models, hooks) is tested end to end under test/platform/http.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { FunctionListSchema } from '../../sdk/api/index.js';
import { createArtifactStore } from '../artifacts/index.js';
import { loadConfig } from '../config/index.js';
import { FunctionService } from '../functions/index.js';
import type { JobQueue } from '../jobs/index.js';
import { createJobQueue } from '../jobs/index.js';
import { Kserve, SharedMemoryRegions } from '../kserve/index.js';
import { createRegistry } from '../registry/index.js';
import { createApp } from './app.js';

const ADMIN = { authorization: 'Bearer admin-key-5678' };
const INVOKE = { authorization: 'Bearer invoke-key-1234' };
const SHA = 'a'.repeat(64);

let dir: string;
let service: FunctionService;
let jobs: JobQueue;
let app: ReturnType<typeof createApp>;
let ready = true;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'hearth-app-'));
  const config = loadConfig({ HEARTH_DATA_DIR: dir, HEARTH_API_KEYS: 'invoke-key-1234:invoke,admin-key-5678:admin' });
  const registry = createRegistry(config);
  const artifacts = createArtifactStore(config, () => undefined);
  service = new FunctionService({ registry, artifacts, dataDir: dir });
  jobs = createJobQueue(config, 'test-node', (name, version, request) => service.invoke(name, version, request));
  app = createApp({
    service,
    jobs,
    artifacts,
    apiKeys: config.apiKeys,
    maxBodyBytes: 1024,
    ready: () => ready,
    kserve: new Kserve({
      functions: service,
      artifacts,
      ready: () => ready,
      version: 'test',
      sharedMemory: new SharedMemoryRegions(),
      cudaAvailable: () => false,
    }),
  });
});
afterAll(async () => {
  await jobs.close();
  await service.close();
  await rm(dir, { recursive: true, force: true });
});

/** A JSON request to the app, as the admin unless other headers are given. */
function send(method: string, path: string, body?: unknown, headers: Record<string, string> = ADMIN) {
  return app.request(path, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
}

async function errorOf(r: Response): Promise<{ status: number; code: string; error: string }> {
  const body = (await r.json()) as { code: string; error: string };
  return { status: r.status, ...body };
}

describe('the HTTP app (socket-free)', () => {
  it('answers health without a key, and ready follows the node', async () => {
    expect((await app.request('/v2/health/live')).status).toBe(200);
    expect(await (await app.request('/v2/health/ready')).json()).toEqual({ ready: true });
    ready = false;
    expect((await app.request('/v2/health/ready')).status).toBe(503);
    ready = true;
  });

  it('asks for a key, and an admin key for the management API', async () => {
    expect(await errorOf(await app.request('/api/v1/functions'))).toMatchObject({
      status: 401,
      code: 'UNAUTHENTICATED',
    });
    expect(await errorOf(await send('GET', '/api/v1/functions', undefined, INVOKE))).toMatchObject({
      status: 403,
      code: 'PERMISSION_DENIED',
    });
    const list = await send('GET', '/api/v1/functions');
    expect(list.status).toBe(200);
    expect(FunctionListSchema.parse(await list.json()).functions).toEqual([]);
  });

  it("checks a deploy body against the SDK's schema and names the field at fault", async () => {
    expect(await errorOf(await send('POST', '/api/v1/functions', { spec: { name: 'f' } }))).toMatchObject({
      status: 400,
      code: 'INVALID_INPUT',
      error: expect.stringContaining('artifacts'),
    });
    const badSha = await errorOf(
      await send('POST', '/api/v1/functions', { spec: { name: 'f' }, artifacts: { model: 'not-a-sha' } }),
    );
    expect(badSha).toMatchObject({ status: 400, code: 'INVALID_INPUT', error: expect.stringContaining('model') });
    // The body passes, the spec inside it does not (parseSpec's message).
    const badSpec = await errorOf(
      await send('POST', '/api/v1/functions', { spec: { name: 'f', maxBatchSize: -1 }, artifacts: { model: SHA } }),
    );
    expect(badSpec).toMatchObject({
      status: 400,
      code: 'INVALID_INPUT',
      error: expect.stringContaining('maxBatchSize'),
    });
  });

  it('refuses a body that is not JSON, or not labelled JSON, as the caller’s mistake', async () => {
    expect(await errorOf(await send('POST', '/api/v1/functions', '{"spec":'))).toMatchObject({
      status: 400,
      code: 'INVALID_INPUT',
    });
    const plain = await errorOf(
      await send(
        'POST',
        '/api/v1/functions',
        { spec: { name: 'f' }, artifacts: { model: SHA } },
        {
          ...ADMIN,
          'content-type': 'text/plain',
        },
      ),
    );
    expect(plain).toMatchObject({ status: 400, code: 'INVALID_INPUT', error: expect.stringContaining('Content-Type') });
  });

  it('refuses a deploy body over the size limit with 413', async () => {
    const r = await send('POST', '/api/v1/functions', { spec: { name: 'f', padding: 'x'.repeat(2048) } });
    expect(await errorOf(r)).toMatchObject({ status: 413, code: 'PAYLOAD_TOO_LARGE' });
  });

  it('checks traffic weights, and a split for a function that does not exist is 404', async () => {
    expect(await errorOf(await send('PUT', '/api/v1/functions/f/traffic', { traffic: { 1: 'all' } }))).toMatchObject({
      status: 400,
      code: 'INVALID_INPUT',
      error: expect.stringContaining('weight must be a number'),
    });
    expect(await errorOf(await send('PUT', '/api/v1/functions/nope/traffic', { traffic: { 1: 100 } }))).toMatchObject({
      status: 404,
      code: 'FUNCTION_NOT_FOUND',
    });
  });

  it('answers 404 for unknown functions, jobs and routes', async () => {
    expect(await errorOf(await send('GET', '/api/v1/functions/nope'))).toMatchObject({
      status: 404,
      code: 'FUNCTION_NOT_FOUND',
    });
    expect(await errorOf(await send('GET', '/api/v1/jobs/no-such-job'))).toMatchObject({
      status: 404,
      code: 'JOB_NOT_FOUND',
    });
    expect(await errorOf(await send('GET', '/api/v2/nothing'))).toMatchObject({ status: 404, code: 'NOT_FOUND' });
  });

  it('refuses an artifact whose name is not a sha256', async () => {
    const r = await app.request('/api/v1/artifacts/not-a-sha', { method: 'PUT', headers: ADMIN, body: 'x' });
    expect(await errorOf(r)).toMatchObject({ status: 400, code: 'INVALID_INPUT' });
  });
});
