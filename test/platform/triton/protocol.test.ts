/**
 * Triton's protocol extensions as its clients use them, over HTTP and gRPC: model configuration,
 * statistics, compression, server metadata, a GPU config on a CPU node, ModelStreamInfer and CUDA
 * shared memory (the repository extension: ./repository.test.ts).
 * Expected values come from the protocol text and from hand-counted requests, not from Hearth.
 */
import { join } from 'node:path';
import { deflateSync, gunzipSync, gzipSync } from 'node:zlib';

import * as grpc from '@grpc/grpc-js';
import { beforeAll, describe, expect, it } from 'vitest';

import { deployFolder } from '../../../sdk/cli/deploy.js';
import { TRITON_REPO } from '../../helpers/fixtures.js';
import { grpcCall, inferStream } from '../../helpers/grpc.js';
import { maxAbsDiff, randomTensor } from '../../helpers/random.js';
import { pythonForward } from '../../helpers/reference.js';
import { nodeForFile } from '../../helpers/suite.js';
import { jsonPoster, SIMPLE, simpleRequest } from './requests.js';

const suite = nodeForFile('triton-protocol');
const postJson = jsonPoster(suite);

beforeAll(async () => {
  expect((await deployFolder(suite.client, join(TRITON_REPO, 'simple.shuffled_Args'))).status).toBe('ready');
  expect((await deployFolder(suite.client, join(TRITON_REPO, 'reshape_model'))).status).toBe('ready');
  expect((await deployFolder(suite.client, join(TRITON_REPO, 'classifier.v1'))).status).toBe('ready');
});

describe('model configuration', () => {
  it('answers the config as Triton fills it, over HTTP and gRPC', async () => {
    const r = await fetch(`${suite.node.httpUrl}/v2/models/reshape_model/config`);
    expect(r.status).toBe(200);
    const config = (await r.json()) as Record<string, unknown>;
    expect(config).toMatchObject({
      name: 'reshape_model',
      platform: 'pytorch_libtorch',
      backend: 'pytorch',
      max_batch_size: 8,
      version_policy: { latest: { num_versions: 1 } },
      input: [
        { name: 'INPUT__0', data_type: 'TYPE_FP32', dims: [2, 2], reshape: { shape: [4] }, format: 'FORMAT_NONE' },
      ],
      output: [
        { name: 'OUTPUT__0', data_type: 'TYPE_FP32', dims: [3, 1], reshape: { shape: [3] }, label_filename: '' },
      ],
      instance_group: [{ name: 'reshape_model_0', kind: 'KIND_CPU', count: 1 }],
      default_model_filename: 'model.pt',
      dynamic_batching: { max_queue_delay_microseconds: 0 },
    });
    const byGrpc = (await grpcCall(suite.rpc, 'ModelConfig', { name: 'classifier.v1' })).config as Record<
      string,
      unknown
    >;
    expect(byGrpc).toMatchObject({
      name: 'classifier.v1',
      platform: 'pytorch_libtorch',
      backend: 'pytorch',
      max_batch_size: 4,
    });
    expect((byGrpc.output as { label_filename: string; data_type: string; dims: string[] }[])[0]).toMatchObject({
      label_filename: 'labels.txt',
      data_type: 'TYPE_FP32',
      dims: ['5'],
    });
    expect((byGrpc.instance_group as { kind: string }[])[0]!.kind).toBe('KIND_CPU');
  });

  it("answers 404 with Triton's message for an unknown model's config", async () => {
    const r = await fetch(`${suite.node.httpUrl}/v2/models/nope/config`);
    expect(r.status).toBe(404);
    expect(((await r.json()) as { error: string }).error).toBe("Request for unknown model: 'nope' is not found");
  });
});

describe('statistics', () => {
  it('counts successes, failures, inferences and executions per version, over HTTP and gRPC', async () => {
    const before = (await (await fetch(`${suite.node.httpUrl}/v2/models/${SIMPLE}/stats`)).json()) as {
      model_stats: { inference_count: number; inference_stats: { success: { count: number } } }[];
    };
    const successBefore = before.model_stats[0]!.inference_stats.success.count;
    const inferencesBefore = before.model_stats[0]!.inference_count;
    // 3 requests of 1, 2 and 3 rows, one at a time (each its own batch), then one that fails.
    for (const rows of [1, 2, 3])
      expect((await postJson(`/v2/models/${SIMPLE}/infer`, simpleRequest(rows * 10, rows))).status).toBe(200);
    const bad = await postJson(`/v2/models/${SIMPLE}/infer`, {
      inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 4], data: [1, 2, 3, 4] }],
    });
    expect(bad.status).toBe(400);
    const r = await fetch(`${suite.node.httpUrl}/v2/models/${SIMPLE}/versions/1/stats`);
    const stats = ((await r.json()) as { model_stats: Record<string, unknown>[] }).model_stats;
    expect(stats).toHaveLength(1);
    const s = stats[0] as {
      name: string;
      version: string;
      last_inference: number;
      inference_count: number;
      execution_count: number;
      inference_stats: Record<string, { count: number; ns: number }>;
      batch_stats: { batch_size: number; compute_infer: { count: number; ns: number } }[];
    };
    expect(s.name).toBe(SIMPLE);
    expect(s.version).toBe('1');
    expect(s.inference_stats.success!.count).toBe(successBefore + 3);
    expect(s.inference_count).toBe(inferencesBefore + 6);
    expect(s.inference_stats.fail!.count).toBeGreaterThanOrEqual(1);
    expect(s.inference_stats.success!.ns).toBeGreaterThan(0);
    expect(s.inference_stats.compute_infer!.ns).toBeGreaterThan(0);
    expect(s.last_inference).toBeGreaterThan(Date.now() - 60_000);
    for (const size of [2, 3])
      expect(s.batch_stats.find((b) => b.batch_size === size)?.compute_infer.count).toBeGreaterThanOrEqual(1);

    const byGrpc = (await grpcCall(suite.rpc, 'ModelStatistics', { name: SIMPLE })).model_stats as {
      name: string;
      inference_count: string;
      inference_stats: { success: { count: string } };
    }[];
    expect(byGrpc[0]!.name).toBe(SIMPLE);
    expect(Number(byGrpc[0]!.inference_count)).toBe(s.inference_count);
    expect(Number(byGrpc[0]!.inference_stats.success.count)).toBe(s.inference_stats.success!.count);
    const all = (await (await fetch(`${suite.node.httpUrl}/v2/models/stats`)).json()) as {
      model_stats: { name: string }[];
    };
    expect(all.model_stats.map((m) => m.name).sort()).toEqual(['classifier.v1', 'reshape_model', SIMPLE].sort());
  });
});

describe('compression', () => {
  it.each([
    'gzip',
    'deflate',
  ])('takes a %s request body, binary tensors included, and answers compressed when asked', async (coding) => {
    const x = randomTensor('FP32', [2, 2, 2], 5);
    const header = Buffer.from(
      JSON.stringify({
        inputs: [{ name: 'INPUT__0', datatype: 'FP32', shape: [2, 2, 2], parameters: { binary_data_size: 32 } }],
      }),
    );
    const plain = Buffer.concat([header, Buffer.from(x.data.buffer)]);
    const body = coding === 'gzip' ? gzipSync(plain) : deflateSync(plain);
    const r = await fetch(`${suite.node.httpUrl}/v2/models/reshape_model/infer`, {
      method: 'POST',
      headers: {
        'content-type': 'application/octet-stream',
        'content-encoding': coding,
        'inference-header-content-length': String(header.byteLength),
        'accept-encoding': 'gzip',
      },
      body,
    });
    expect(r.status).toBe(200);
    // fetch inflates the body itself; the header says it was sent compressed.
    expect(r.headers.get('content-encoding')).toBe('gzip');
    const out = (await r.json()) as { outputs: { shape: number[]; data: number[] }[] };
    const ref = pythonForward(join(TRITON_REPO, 'reshape_model', '1', 'model.pt'), [{ ...x, shape: [2, 4] }])
      .outputs[0]!;
    expect(out.outputs[0]!.shape).toEqual([2, 3, 1]);
    expect(maxAbsDiff(out.outputs[0]!.data, ref.data as Float32Array)).toBeLessThan(1e-5);
  });

  it('refuses a corrupt gzip body with 400, and one that inflates past the body limit with 413', async () => {
    const corrupt = await fetch(`${suite.node.httpUrl}/v2/models/reshape_model/infer`, {
      method: 'POST',
      headers: { 'content-encoding': 'gzip' },
      body: Buffer.from('not gzip at all'),
    });
    expect(corrupt.status).toBe(400);
    const bomb = gzipSync(Buffer.alloc(64 * 1024 * 1024 + 1));
    const big = await fetch(`${suite.node.httpUrl}/v2/models/reshape_model/infer`, {
      method: 'POST',
      headers: { 'content-encoding': 'gzip' },
      body: bomb,
    });
    expect(big.status).toBe(413);
    const raw = Buffer.from(
      await (
        await fetch(`${suite.node.httpUrl}/v2/models/reshape_model/infer`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            inputs: [{ name: 'INPUT__0', datatype: 'FP32', shape: [1, 2, 2], data: [1, 2, 3, 4] }],
          }),
        })
      ).arrayBuffer(),
    );
    expect(() => gunzipSync(raw)).toThrow(); // no Accept-Encoding: not compressed
  });
});

describe('server metadata', () => {
  it('lists exactly the extensions implemented, over HTTP and gRPC', async () => {
    const expected = [
      'binary_tensor_data',
      'classification',
      'logging',
      'model_configuration',
      'model_repository',
      'statistics',
      'system_shared_memory',
      'trace',
    ];
    const meta = (await (await fetch(`${suite.node.httpUrl}/v2`)).json()) as { extensions: string[] };
    expect([...meta.extensions].sort()).toEqual(expected);
    expect([...((await grpcCall(suite.rpc, 'ServerMetadata', {})).extensions as string[])].sort()).toEqual(expected);
  });
});

describe('a GPU config on a node without a GPU', () => {
  it('is refused at deploy with the fix, and --device cpu runs it on the CPU', async () => {
    const gpu = join(suite.dir, 'gpu_model');
    const { mkdir, writeFile, copyFile } = await import('node:fs/promises');
    await mkdir(join(gpu, '1'), { recursive: true });
    await copyFile(join(TRITON_REPO, 'seed_layout', '1', 'resnet.pt'), join(gpu, '1', 'model.pt'));
    await writeFile(
      join(gpu, 'config.pbtxt'),
      'platform: "pytorch_libtorch"\nmax_batch_size: 4\ninput [ { name: "INPUT__0" data_type: TYPE_FP32 dims: [ 4 ] } ]\noutput [ { name: "OUTPUT__0" data_type: TYPE_FP32 dims: [ 3 ] } ]\ninstance_group [ { kind: KIND_GPU count: 1 } ]\n',
    );
    await expect(deployFolder(suite.client, gpu)).rejects.toThrow(
      /has no CUDA device; run it on the CPU with `hearth deploy --device cpu`/,
    );
    const deployed = await deployFolder(suite.client, gpu, { device: 'cpu' });
    expect(deployed.status).toBe('ready');
    expect(deployed.notes.join('\n')).toMatch(/instances.device cuda → cpu \(--device\)/);
  });
});

describe('gRPC ModelStreamInfer', () => {
  it('answers each request of a stream with its id, errors as error_message, and keeps the stream open after one', async () => {
    const { stream, responses, done } = inferStream(suite.rpc);
    const x = (seed: number) => randomTensor('FP32', [1, 2, 2], seed);
    const sent = [x(21), x(22), x(23)];
    sent.forEach((t, i) => {
      stream.write({
        model_name: 'reshape_model',
        id: `r${i}`,
        inputs: [{ name: 'INPUT__0', datatype: 'FP32', shape: [1, 2, 2] }],
        raw_input_contents: [Buffer.from(t.data.buffer)],
      });
    });
    stream.write({ model_name: 'no_such_model', id: 'bad', inputs: [] });
    stream.end();
    await done;
    expect(responses).toHaveLength(4);
    const byId = new Map(responses.map((r) => [(r.infer_response as { id: string }).id, r]));
    expect(byId.get('bad')!.error_message as string).toBe("Request for unknown model: 'no_such_model' is not found");
    const refs = sent.map(
      (t) =>
        pythonForward(join(TRITON_REPO, 'reshape_model', '1', 'model.pt'), [{ ...t, shape: [1, 4] }]).outputs[0]!
          .data as Float32Array,
    );
    sent.forEach((_, i) => {
      const r = byId.get(`r${i}`)!;
      expect(r.error_message).toBe('');
      const raw = (r.infer_response as { raw_output_contents: Buffer[] }).raw_output_contents[0]!;
      expect(maxAbsDiff(new Float32Array(new Uint8Array(raw).buffer), refs[i]!)).toBeLessThan(1e-5);
    });
  });
});

describe('CUDA shared memory on a node without a GPU', () => {
  it('lists no regions and refuses a register with why, over HTTP and gRPC', async () => {
    expect(await (await fetch(`${suite.node.httpUrl}/v2/cudasharedmemory/status`)).json()).toEqual([]);
    const r = await postJson('/v2/cudasharedmemory/region/r0/register', {
      raw_handle: { b64: 'AAAA' },
      device_id: 0,
      byte_size: 16,
    });
    expect(r.status).toBe(400);
    expect(((await r.json()) as { error: string }).error).toMatch(/CUDA shared memory is not supported on this node/);
    const error = await grpcCall(suite.rpc, 'CudaSharedMemoryRegister', {
      name: 'r0',
      raw_handle: Buffer.alloc(4),
      device_id: 0,
      byte_size: 16,
    }).catch((e: grpc.ServiceError) => e);
    expect((error as grpc.ServiceError).code).toBe(grpc.status.UNIMPLEMENTED);
  });
});
