/**
 * Hostile repository loads (issue 42), over HTTP and gRPC: a `parameters.config` nested thousands
 * deep is the caller's bad input (400 / INVALID_ARGUMENT), not a stack overflow (500); `file:`
 * contents past HEARTH_MAX_BODY_BYTES (1 MiB here) are refused with 413 before they are decoded
 * or buffered, and the node goes on answering; a `file:` name that cannot be laid out answers
 * Triton's INTERNAL / 500 (its own examples check that code).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { HearthNode } from '../../../platform/node/index.js';
import { grpcCall, inferenceClient } from '../../helpers/grpc.js';
import { testNode } from '../../helpers/node.js';

const MAX_BODY = 2 ** 20;
const dir = await mkdtemp(join(tmpdir(), 'hearth-load-bounds-'));
let node: HearthNode;
let rpc: ReturnType<typeof inferenceClient>;

beforeAll(async () => {
  node = await testNode(join(dir, 'node'), { HEARTH_MAX_BODY_BYTES: String(MAX_BODY) });
  rpc = inferenceClient(node.grpcAddress);
});
afterAll(async () => {
  rpc?.close();
  await node?.close();
  await rm(dir, { recursive: true, force: true });
});

const load = async (name: string, parameters: Record<string, unknown>) => {
  const r = await fetch(`${node.httpUrl}/v2/repository/models/${name}/load`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ parameters }),
  });
  const text = await r.text();
  return { status: r.status, error: (JSON.parse(text) as { error?: string }).error };
};

const live = async () => (await fetch(`${node.httpUrl}/v2/health/live`)).status;

const CONFIG = JSON.stringify({ name: 'big', platform: 'pytorch_libtorch', max_batch_size: 1 });

describe('repository load bounds', () => {
  it('refuses a configuration nested 5,000 deep with 400 / INVALID_ARGUMENT', async () => {
    const deep = `{"name":"deep","parameters":{"k":{"string_value":${'['.repeat(5000)}1${']'.repeat(5000)}}}}`;
    const http = await load('deep', { config: deep });
    expect(http.status, http.error).toBe(400);
    expect(http.error).toMatch(/nests deeper than 32 levels/);
    const nested = `{"name":"deep","a":${'{"b":'.repeat(5000)}1${'}'.repeat(5000)}}`;
    expect((await load('deep', { config: nested })).status).toBe(400);
    const error = await grpcCall(rpc, 'RepositoryModelLoad', {
      model_name: 'deep',
      parameters: { config: { string_param: deep } },
    }).catch((e: grpc.ServiceError) => e);
    expect((error as grpc.ServiceError).code).toBe(grpc.status.INVALID_ARGUMENT);
    expect((error as grpc.ServiceError).details).toMatch(/nests deeper than 32 levels/);
    expect(await live()).toBe(200);
  });

  it("answers a file: name past NAME_MAX as Triton's examples check: 500 / INTERNAL, failed to poll", async () => {
    // Triton's qa/L0_http/http_test.py test_load_oversized_file_parameter, as it sends it.
    const long = `file:${'A'.repeat(256)}`;
    const http = await load('simple', { [long]: 'YQ==', config: '{}' });
    expect(http.status, http.error).toBe(500);
    expect(http.error).toMatch(/^failed to load 'simple', failed to poll from model repository/);
    // Triton's simple_grpc_model_control.py: load_model(config="{}", files={long_path: b"a"}).
    const error = (await grpcCall(rpc, 'RepositoryModelLoad', {
      model_name: 'simple',
      parameters: { config: { string_param: '{}' }, [long]: { bytes_param: Buffer.from('a') } },
    }).catch((e: grpc.ServiceError) => e)) as grpc.ServiceError;
    expect(error.code).toBe(grpc.status.INTERNAL);
    expect(error.details).toContain('failed to poll from model repository');
    // A long file name under a version folder too, and a name that is no version's file.
    expect((await load('simple', { [`file:1/${'b'.repeat(300)}`]: 'YQ==', config: '{}' })).status).toBe(500);
    expect((await load('simple', { 'file:model.pt': 'YQ==', config: '{}' })).status).toBe(500);
    expect(await live()).toBe(200);
  });

  it('refuses file: contents past HEARTH_MAX_BODY_BYTES with 413, counted before decoding', async () => {
    // 1.25 MiB decoded: the body (1.67 MiB of base64) passes the load's body limit, the count does not.
    const over = Buffer.alloc(MAX_BODY + MAX_BODY / 4, 7).toString('base64');
    const counted = await load('big', { config: CONFIG, 'file:1/model.pt': over });
    expect(counted.status, counted.error).toBe(413);
    expect(counted.error).toMatch(/file: contents are at most 1048576 bytes together \(HEARTH_MAX_BODY_BYTES\)/);
    // Two files under the bound each, over it together.
    const half = Buffer.alloc(MAX_BODY * 0.6, 7).toString('base64');
    expect((await load('big', { config: CONFIG, 'file:1/model.pt': half, 'file:1/extra.bin': half })).status).toBe(413);
    // A body far past it (4 MiB of base64) is refused before it is read.
    const huge = await load('big', { config: CONFIG, 'file:1/model.pt': 'A'.repeat(4 * MAX_BODY) });
    expect(huge.status).toBe(413);
    // Over gRPC a message carries at most HEARTH_MAX_BODY_BYTES: past that RESOURCE_EXHAUSTED.
    const error = await grpcCall(rpc, 'RepositoryModelLoad', {
      model_name: 'big',
      parameters: { config: { string_param: CONFIG }, 'file:1/model.pt': { bytes_param: Buffer.alloc(2 * MAX_BODY) } },
    }).catch((e: grpc.ServiceError) => e);
    expect((error as grpc.ServiceError).code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(await live()).toBe(200);
  });
});
