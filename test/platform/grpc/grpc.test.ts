import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { HearthNode } from '../../../platform/node/index.js';
import { modelPath } from '../../helpers/fixtures.js';
import type { InferenceClient } from '../../helpers/grpc.js';
import { grpcCall, inferenceClient } from '../../helpers/grpc.js';
import { deployFixture, testNode } from '../../helpers/node.js';
import { maxAbsDiff } from '../../helpers/random.js';
import { pythonForwardMany } from '../../helpers/reference.js';
import { SMALL_SPEC } from '../../helpers/specs.js';

type Client = InferenceClient;
const client = inferenceClient;
const call = grpcCall;

const dir = await mkdtemp(join(tmpdir(), 'hearth-grpc-'));
let node: HearthNode;
let c: Client;
const X = [1, 2, 3, 4, 0.5, -1, 2, 0];
const ref = pythonForwardMany(modelPath('small'), [[{ dtype: 'FP32', shape: [2, 4], data: Float32Array.from(X) }]])[0]!
  .outputs[0]!.data as Float32Array;

beforeAll(async () => {
  node = await testNode(join(dir, 'node'));
  // The small model under pytorch_backend's INPUT__0 / OUTPUT__0 names.
  const spec = {
    ...SMALL_SPEC,
    inputs: [{ name: 'INPUT__0', dtype: 'FP32', dims: [4] }],
    outputs: [{ name: 'OUTPUT__0', dtype: 'FP32', dims: [3] }],
  };
  const r = await deployFixture(node.httpUrl, spec, { model: 'small' });
  expect(r.status).toBe(201);
  c = client(node.grpcAddress);
});
afterAll(async () => {
  c?.close();
  await node?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('inference.GRPCInferenceService', () => {
  it('answers health and server metadata', async () => {
    expect(await call(c, 'ServerLive', {})).toEqual({ live: true });
    expect(await call(c, 'ServerReady', {})).toEqual({ ready: true });
    expect(await call(c, 'ServerMetadata', {})).toMatchObject({
      name: 'hearth',
      extensions: expect.arrayContaining(['model_repository', 'model_configuration', 'statistics']),
    });
  });

  it('answers model metadata and readiness', async () => {
    const meta = await call(c, 'ModelMetadata', { name: 'small' });
    expect(meta).toMatchObject({
      name: 'small',
      versions: ['1'],
      platform: 'pytorch_libtorch',
      inputs: [{ name: 'INPUT__0', datatype: 'FP32', shape: ['-1', '4'] }],
    });
    expect(await call(c, 'ModelReady', { name: 'small', version: '1' })).toEqual({ ready: true });
    expect(await call(c, 'ModelReady', { name: 'nothing' })).toEqual({ ready: false });
  });

  it('infers with raw_input_contents and returns raw_output_contents, as python3-torch computes', async () => {
    const response = await call(c, 'ModelInfer', {
      model_name: 'small',
      id: 'abc',
      inputs: [{ name: 'INPUT__0', datatype: 'FP32', shape: [2, 4] }],
      raw_input_contents: [Buffer.from(Float32Array.from(X).buffer)],
    });
    expect(response).toMatchObject({
      model_name: 'small',
      model_version: '1',
      id: 'abc',
      outputs: [{ name: 'OUTPUT__0', datatype: 'FP32', shape: ['2', '3'] }],
    });
    const raw = (response.raw_output_contents as Buffer[])[0]!;
    expect(
      maxAbsDiff(new Float32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength)), ref),
    ).toBeLessThan(1e-6);
  });

  it('infers with typed contents too', async () => {
    const response = await call(c, 'ModelInfer', {
      model_name: 'small',
      model_version: '1',
      inputs: [{ name: 'INPUT__0', datatype: 'FP32', shape: [2, 4], contents: { fp32_contents: X } }],
    });
    const raw = (response.raw_output_contents as Buffer[])[0]!;
    expect(
      maxAbsDiff(new Float32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength)), ref),
    ).toBeLessThan(1e-6);
  });

  it('maps errors to status codes', async () => {
    await expect(call(c, 'ModelInfer', { model_name: 'nope', inputs: [] })).rejects.toMatchObject({
      code: grpc.status.NOT_FOUND,
    });
    await expect(
      call(c, 'ModelInfer', {
        model_name: 'small',
        inputs: [{ name: 'INPUT__0', datatype: 'FP32', shape: [2, 4] }],
        raw_input_contents: [Buffer.alloc(12)],
      }),
    ).rejects.toMatchObject({
      code: grpc.status.INVALID_ARGUMENT,
      details: expect.stringMatching(/12 bytes but shape \[2, 4\] × FP32 needs 32/),
    });
    await expect(
      call(c, 'ModelInfer', {
        model_name: 'small',
        inputs: [{ name: 'INPUT__0', datatype: 'FP64', shape: [1, 4] }],
        raw_input_contents: [Buffer.alloc(32)],
      }),
    ).rejects.toMatchObject({ code: grpc.status.INVALID_ARGUMENT });
    await expect(call(c, 'ModelInfer', { model_name: 'small', model_version: '7', inputs: [] })).rejects.toMatchObject({
      code: grpc.status.NOT_FOUND,
    });
  });

  it('serves the repository extension', async () => {
    const index = await call(c, 'RepositoryIndex', {});
    expect(index.models).toEqual([{ name: 'small', version: '1', state: 'READY', reason: '' }]);
    await call(c, 'RepositoryModelUnload', { model_name: 'small' });
    expect(((await call(c, 'RepositoryIndex', {})).models as { state: string }[])[0]!.state).toBe('UNLOADED');
    await call(c, 'RepositoryModelLoad', { model_name: 'small' });
    expect(((await call(c, 'RepositoryIndex', {})).models as { state: string }[])[0]!.state).toBe('READY');
  });
});

describe('gRPC with API keys', () => {
  it('refuses calls without a key, and management with an invoke key', async () => {
    const keyed = await testNode(join(dir, 'keyed'), {
      HEARTH_API_KEYS: 'invoke-key-1234:invoke,admin-key-5678:admin',
    });
    const k = client(keyed.grpcAddress);
    try {
      expect(await call(k, 'ServerLive', {})).toEqual({ live: true });
      await expect(call(k, 'ServerMetadata', {})).rejects.toMatchObject({ code: grpc.status.UNAUTHENTICATED });
      await expect(call(k, 'RepositoryIndex', {}, 'invoke-key-1234')).rejects.toMatchObject({
        code: grpc.status.PERMISSION_DENIED,
      });
      expect(await call(k, 'RepositoryIndex', {}, 'admin-key-5678')).toEqual({ models: [] });
      // Refused on its headers, its message never read: bytes no protobuf decodes are not
      // "Error deserializing request" (INTERNAL) without a key, as they were when decoded first.
      const garbage = new grpc.Client(keyed.grpcAddress, grpc.credentials.createInsecure());
      const raw = (key?: string) =>
        new Promise<grpc.ServiceError>((resolve) => {
          const md = new grpc.Metadata();
          if (key) md.set('authorization', `Bearer ${key}`);
          garbage.makeUnaryRequest(
            '/inference.GRPCInferenceService/ModelInfer',
            (b: Buffer) => b,
            (b: Buffer) => b,
            Buffer.from([0xff, 0xff, 0xff, 0xff, 0x0f, 0x0a]),
            md,
            (error) => resolve(error!),
          );
        });
      expect(await raw()).toMatchObject({
        code: grpc.status.UNAUTHENTICATED,
        details: expect.stringMatching(/send an API key/),
      });
      expect(await raw('invoke-key-1234')).toMatchObject({ code: grpc.status.INTERNAL });
      garbage.close();
    } finally {
      k.close();
      await keyed.close();
    }
  });
});
