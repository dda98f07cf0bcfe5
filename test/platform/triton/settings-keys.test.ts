/**
 * Who may read and change Triton's trace and logging settings on a node with API keys, over HTTP
 * and gRPC. As the repository extension: a deploy key's, on its tenant's models only (another
 * tenant's model is unknown, in the same words as one that does not exist); the node's own
 * settings (global trace settings, logging) are read by a deploy key and changed by an admin.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

import * as grpc from '@grpc/grpc-js';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';

import { deployFolder } from '../../../sdk/cli/deploy.js';
import { Hearth } from '../../../sdk/client.js';
import { TRITON_REPO } from '../../helpers/fixtures.js';
import { grpcCall } from '../../helpers/grpc.js';
import { nodeForFile } from '../../helpers/suite.js';
import { waitFor } from '../../helpers/wait.js';
import { SIMPLE, simpleRequest } from './requests.js';

const KEYS = {
  admin: 'admin-key-0001',
  deployA: 'deploy-a-key-0001',
  deployB: 'deploy-b-key-0001',
  invokeA: 'invoke-a-key-0001',
  invokeB: 'invoke-b-key-0001',
};
const suite = nodeForFile('settings-keys', {
  HEARTH_API_KEYS: `${KEYS.admin}:admin,${KEYS.deployA}:deploy@team-a,${KEYS.deployB}:deploy@team-b,${KEYS.invokeA}:invoke@team-a,${KEYS.invokeB}:invoke@team-b`,
});

beforeAll(async () => {
  const teamA = new Hearth({ url: suite.node.httpUrl, apiKey: KEYS.deployA });
  expect((await deployFolder(teamA, join(TRITON_REPO, SIMPLE))).status).toBe('ready');
});

async function call(
  key: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: Record<string, string> }> {
  const r = await fetch(`${suite.node.httpUrl}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    // A string is sent as it is (a JSON text whose keys JSON.stringify would not write, as `__proto__`).
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  return { status: r.status, body: (await r.json()) as Record<string, string> };
}

const rpcCode = (method: string, request: object, key: string) =>
  grpcCall(suite.rpc, method, request, key).then(
    () => grpc.status.OK,
    (e: grpc.ServiceError) => e.code,
  );

describe('trace and logging settings with API keys', () => {
  it("lets a deploy key read the node's settings and change its own models', and only an admin change the node's", async () => {
    const model = `/v2/models/${SIMPLE}/trace/setting`;
    expect((await call(KEYS.invokeA, '/v2/trace/setting')).status).toBe(403);
    expect((await call(KEYS.invokeA, '/v2/logging')).status).toBe(403);
    expect((await call(KEYS.deployA, '/v2/trace/setting')).status).toBe(200);
    expect((await call(KEYS.deployA, '/v2/logging')).status).toBe(200);

    const global = await call(KEYS.deployA, '/v2/trace/setting', { trace_rate: '5' });
    expect(global.status).toBe(403);
    expect(global.body.error).toContain("may not change the node's trace settings (needs scope admin)");
    expect((await call(KEYS.deployA, '/v2/logging', { log_info: false })).status).toBe(403);
    expect(await rpcCode('TraceSetting', { settings: { trace_rate: { value: ['5'] } } }, KEYS.deployA)).toBe(
      grpc.status.PERMISSION_DENIED,
    );
    expect(await rpcCode('LogSettings', { settings: { log_info: { bool_param: false } } }, KEYS.deployA)).toBe(
      grpc.status.PERMISSION_DENIED,
    );
    expect((await call(KEYS.deployA, '/v2/trace/setting')).body.trace_rate).toBe('1000');

    const own = await call(KEYS.deployA, model, { trace_rate: '5' });
    expect(own.status).toBe(200);
    expect(own.body.trace_rate).toBe('5');
    expect(
      await rpcCode('TraceSetting', { model_name: SIMPLE, settings: { trace_rate: { value: ['6'] } } }, KEYS.deployA),
    ).toBe(grpc.status.OK);

    // Another tenant's model is as unknown as one that does not exist.
    for (const name of [SIMPLE, 'no-such-model']) {
      const other = await call(KEYS.deployB, `/v2/models/${name}/trace/setting`, { trace_rate: '1' });
      expect(other.status).toBe(400);
      expect(other.body.error).toBe(`Request for unknown model : ${name}`);
      expect(await rpcCode('TraceSetting', { model_name: name }, KEYS.deployB)).toBe(grpc.status.INVALID_ARGUMENT);
    }
    expect((await call(KEYS.admin, model)).body.trace_rate).toBe('6');

    expect((await call(KEYS.admin, '/v2/trace/setting', { trace_rate: '9' })).body.trace_rate).toBe('9');
    expect((await call(KEYS.admin, '/v2/logging', { log_verbose_level: 0 })).status).toBe(200);
    expect(await rpcCode('LogSettings', { settings: { log_error: { bool_param: true } } }, KEYS.admin)).toBe(
      grpc.status.OK,
    );
  });
});

/** The trace file's records (none before the first is written). */
const traceRecords = async () =>
  JSON.parse(await readFile(join(suite.dir, 'node', 'traces', 'trace.json'), 'utf8').catch(() => '[]')) as Record<
    string,
    unknown
  >[];

/** A ModelInfer request for `model` (the simple model's inputs). */
const inferRequest = (model: string) => ({
  model_name: model,
  inputs: simpleRequest(1).inputs.map(({ name, datatype, shape, data }) => ({
    name,
    datatype,
    shape: shape.map(String),
    contents: { fp32_contents: data },
  })),
});

/** A ModelStreamInfer stream of `key`'s, one request for `model` on it: its response's error_message. */
function streamOnce(key: string, model: string): Promise<string> {
  const meta = new grpc.Metadata();
  meta.set('authorization', `Bearer ${key}`);
  const stream = (
    suite.rpc as unknown as {
      ModelStreamInfer(m: grpc.Metadata): grpc.ClientDuplexStream<object, { error_message: string }>;
    }
  ).ModelStreamInfer(meta);
  const answered = new Promise<string>((resolve, reject) => {
    stream.once('data', (r) => resolve(r.error_message));
    stream.once('error', reject);
  });
  stream.write(inferRequest(model));
  stream.end();
  return answered;
}

/** `key`'s infer calls for `model` (HTTP, ModelInfer, ModelStreamInfer), each refused as not found; `count` read after each. */
async function unseenCalls(key: string, model: string, count: () => Promise<string>): Promise<string[]> {
  const counts: string[] = [];
  const http = await call(key, `/v2/models/${encodeURIComponent(model)}/infer`, simpleRequest(1));
  expect(http.status).toBe(404);
  counts.push(await count());
  expect(await rpcCode('ModelInfer', inferRequest(model), key)).toBe(grpc.status.NOT_FOUND);
  counts.push(await count());
  expect(await streamOnce(key, model)).toContain('not found');
  counts.push(await count());
  return counts;
}

/**
 * Team A's own traced call (`id`), and the trace file once its trace is in: every trace before it
 * is in by then (written as they end, in order).
 */
async function afterOwnCall(id: string): Promise<Record<string, unknown>[]> {
  const own = await call(KEYS.invokeA, `/v2/models/${SIMPLE}/infer`, { ...simpleRequest(2), id });
  expect(own.status).toBe(200);
  return waitFor("team A's trace", traceRecords, (r) => r.some((x) => x.request_id === id));
}

const heads = (records: Record<string, unknown>[]) => records.filter((r) => 'model_name' in r);

describe('traces and tenants', () => {
  const model = `/v2/models/${SIMPLE}/trace/setting`;
  const sampled = (count: string) => ({ trace_level: ['TIMESTAMPS'], trace_rate: '1', trace_count: count });
  const modelCount = async () => (await call(KEYS.deployA, model)).body.trace_count!;
  const globalCount = async () => (await call(KEYS.admin, '/v2/trace/setting')).body.trace_count!;

  afterEach(async () => {
    const clear = { trace_level: null, trace_rate: null, trace_count: null, log_frequency: null };
    expect((await call(KEYS.deployA, model, clear)).status).toBe(200);
    expect((await call(KEYS.admin, '/v2/trace/setting', clear)).status).toBe(200);
  });

  it("leaves a model's trace_count and the trace file alone when another tenant calls it (HTTP, gRPC, stream)", async () => {
    expect((await call(KEYS.deployA, model, sampled('5'))).body.trace_count).toBe('5');
    const counts = await unseenCalls(KEYS.invokeB, SIMPLE, modelCount);
    const traced = heads(await afterOwnCall('own-1')).map((r) => [r.model_name, r.request_id]);
    expect({ counts, traced }).toEqual({ counts: ['5', '5', '5'], traced: [[SIMPLE, 'own-1']] });
    expect(await modelCount()).toBe('4');
  });

  it('traces no request for a name that names no function, under global tracing', async () => {
    expect((await call(KEYS.admin, '/v2/trace/setting', sampled('1000'))).status).toBe(200);
    const counts = [];
    for (const name of ['no-such-model', 'evil"name\n../../etc/passwd', 'x'.repeat(4000)])
      counts.push(...(await unseenCalls(KEYS.invokeB, name, globalCount)));
    const others = heads(await afterOwnCall('own-2')).filter((r) => r.model_name !== SIMPLE);
    expect({ counts, others }).toEqual({ counts: Array(9).fill('1000'), others: [] });
    expect(await globalCount()).toBe('999');
  });

  it("tells no caller which names carry another tenant's settings: the global count moves for neither", async () => {
    expect((await call(KEYS.admin, '/v2/trace/setting', sampled('1000'))).status).toBe(200);
    expect((await call(KEYS.deployA, model, sampled('5'))).status).toBe(200);
    const counts = [];
    for (const name of [SIMPLE, 'no-such-model']) {
      await call(KEYS.invokeB, `/v2/models/${name}/infer`, simpleRequest(1));
      counts.push(await globalCount());
    }
    expect(counts).toEqual(['1000', '1000']);
  });

  it('refuses inherited property names as unknown settings, over HTTP and gRPC, for traces and logging', async () => {
    const before = (await call(KEYS.deployA, model)).body;
    const named = (name: string, value: string) => JSON.parse(`{${JSON.stringify(name)}:${value}}`) as object;
    for (const name of ['__proto__', 'constructor', 'toString', 'hasOwnProperty']) {
      const trace = await call(KEYS.deployA, model, `{${JSON.stringify(name)}:["9"]}`);
      const log = await call(KEYS.admin, '/v2/logging', `{${JSON.stringify(name)}:true}`);
      const traceRpc = { model_name: SIMPLE, settings: named(name, '{"value":["9"]}') };
      const logRpc = { settings: named(name, '{"bool_param":true}') };
      expect({
        trace: [trace.status, trace.body.error],
        log: [log.status, log.body.error],
        traceRpc: await rpcCode('TraceSetting', traceRpc, KEYS.deployA),
        logRpc: await rpcCode('LogSettings', logRpc, KEYS.admin),
      }).toEqual({
        trace: [400, expect.stringContaining(`unknown trace setting '${name}'`)],
        log: [400, expect.stringContaining(`unknown log setting '${name}'`)],
        traceRpc: grpc.status.INVALID_ARGUMENT,
        logRpc: grpc.status.INVALID_ARGUMENT,
      });
    }
    expect((await call(KEYS.deployA, model)).body).toEqual(before);
  });
});
