/**
 * Triton's repository extension as its clients use it, over HTTP and gRPC: unload and load, a load
 * with a configuration override, a load from `file:` contents, and the words Triton's clients look
 * for in its refusals (the other extensions: ./protocol.test.ts).
 * Expected values come from the protocol text and from hand-counted requests, not from Hearth.
 */
import { join } from 'node:path';

import * as grpc from '@grpc/grpc-js';
import { beforeAll, describe, expect, it } from 'vitest';

import { deployFolder } from '../../../sdk/cli/deploy.js';
import { TRITON_REPO } from '../../helpers/fixtures.js';
import { grpcCall } from '../../helpers/grpc.js';
import { maxAbsDiff, randomTensor } from '../../helpers/random.js';
import { pythonForward } from '../../helpers/reference.js';
import { nodeForFile } from '../../helpers/suite.js';
import { jsonPoster, SIMPLE, simpleRequest } from './requests.js';

const suite = nodeForFile('triton-repository');
const postJson = jsonPoster(suite);

beforeAll(async () => {
  expect((await deployFolder(suite.client, join(TRITON_REPO, 'simple.shuffled_Args'))).status).toBe('ready');
  expect((await deployFolder(suite.client, join(TRITON_REPO, 'classifier.v1'))).status).toBe('ready');
});

describe('the repository extension', () => {
  it('makes an unloaded model unready until it is loaded again or a request cold-starts it', async () => {
    expect((await fetch(`${suite.node.httpUrl}/v2/models/classifier.v1/ready`)).status).toBe(200);
    expect(
      (await fetch(`${suite.node.httpUrl}/v2/repository/models/classifier.v1/unload`, { method: 'POST' })).status,
    ).toBe(200);
    expect((await fetch(`${suite.node.httpUrl}/v2/models/classifier.v1/ready`)).status).toBe(503);
    expect((await grpcCall(suite.rpc, 'ModelReady', { name: 'classifier.v1' })).ready).toBe(false);
    const index = (await (await fetch(`${suite.node.httpUrl}/v2/repository/index`, { method: 'POST' })).json()) as {
      name: string;
      state: string;
    }[];
    expect(index.find((m) => m.name === 'classifier.v1')?.state).toBe('UNLOADED');
    expect(
      (await fetch(`${suite.node.httpUrl}/v2/repository/models/classifier.v1/load`, { method: 'POST' })).status,
    ).toBe(200);
    expect((await fetch(`${suite.node.httpUrl}/v2/models/classifier.v1/ready`)).status).toBe(200);
    // Unloaded again, a request cold-starts it (a function at zero instances) and it is ready after.
    expect(
      (await fetch(`${suite.node.httpUrl}/v2/repository/models/classifier.v1/unload`, { method: 'POST' })).status,
    ).toBe(200);
    expect((await fetch(`${suite.node.httpUrl}/v2/models/classifier.v1/ready`)).status).toBe(503);
    expect(
      (
        await postJson('/v2/models/classifier.v1/infer', {
          inputs: [{ name: 'INPUT__0', datatype: 'FP32', shape: [1, 4], data: [1, 2, 3, 4] }],
        })
      ).status,
    ).toBe(200);
    expect((await fetch(`${suite.node.httpUrl}/v2/models/classifier.v1/ready`)).status).toBe(200);
  });

  it("loads with a configuration override as Triton's model-control example does: a malformed one fails to load, one field changes only that field", async () => {
    // reshape_model's own copy under another name, so the other tests keep theirs.
    const { cp, readFile, writeFile } = await import('node:fs/promises');
    const folder = join(suite.dir, 'override_model');
    await cp(join(TRITON_REPO, 'reshape_model'), folder, { recursive: true });
    const pbtxt = await readFile(join(folder, 'config.pbtxt'), 'utf8');
    await writeFile(join(folder, 'config.pbtxt'), pbtxt.replace('"reshape_model"', '"override_model"'));
    expect((await deployFolder(suite.client, folder)).status).toBe('ready');
    const config = async () =>
      (await (await fetch(`${suite.node.httpUrl}/v2/models/override_model/config`)).json()) as Record<string, unknown>;

    // The example's malformed override (not JSON), then its well-formed one (an int64 as a string).
    const malformed = await postJson('/v2/repository/models/override_model/load', {
      parameters: { config: '"parameters": {"config": {{"max_batch_size": "16"}}}' },
    });
    expect(malformed.status).toBe(400);
    const said = ((await malformed.json()) as { error: string }).error;
    expect(said).toContain('failed to load');
    expect(said).toMatch(/parameters.config is not valid JSON/);
    const error = await grpcCall(suite.rpc, 'RepositoryModelLoad', {
      model_name: 'override_model',
      parameters: { config: { string_param: 'nope{' } },
    }).catch((e: grpc.ServiceError) => e);
    expect((error as grpc.ServiceError).code).toBe(grpc.status.INVALID_ARGUMENT);
    expect((error as grpc.ServiceError).details).toContain("failed to load 'override_model'");
    expect((await config()).max_batch_size).toBe(8);

    const loaded = await postJson('/v2/repository/models/override_model/load', {
      parameters: { config: '{"max_batch_size":"16"}' },
    });
    expect(loaded.status).toBe(200);
    const updated = await config();
    expect(updated.max_batch_size).toBe(16);
    // Only that field: the inputs, outputs and reshapes are the folder's.
    expect(updated.input).toMatchObject([{ name: 'INPUT__0', dims: [2, 2], reshape: { shape: [4] } }]);
    expect(updated.output).toMatchObject([{ name: 'OUTPUT__0', dims: [3, 1], reshape: { shape: [3] } }]);
    // A batch of 12 rows, past the old limit of 8, is served, and is what python3-torch computes.
    const x = randomTensor('FP32', [12, 2, 2], 41);
    const r = await postJson('/v2/models/override_model/infer', {
      inputs: [{ name: 'INPUT__0', datatype: 'FP32', shape: [12, 2, 2], data: Array.from(x.data) }],
    });
    expect(r.status).toBe(200);
    const out = ((await r.json()) as { outputs: { shape: number[]; data: number[] }[] }).outputs[0]!;
    const ref = pythonForward(join(folder, '1', 'model.pt'), [{ ...x, shape: [12, 4] }]).outputs[0]!;
    expect(out.shape).toEqual([12, 3, 1]);
    expect(maxAbsDiff(out.data, ref.data as Float32Array)).toBeLessThan(1e-5);

    // What a client reads back from the config, edited, loads as it is (gRPC this time).
    const edited = { ...updated, max_batch_size: 4 };
    await grpcCall(suite.rpc, 'RepositoryModelLoad', {
      model_name: 'override_model',
      parameters: { config: { string_param: JSON.stringify(edited) } },
    });
    expect((await config()).max_batch_size).toBe(4);
    const over = await postJson('/v2/models/override_model/infer', {
      inputs: [{ name: 'INPUT__0', datatype: 'FP32', shape: [5, 2, 2], data: Array.from(x.data.subarray(0, 20)) }],
    });
    expect(over.status).toBe(400);

    // A configuration that Hearth cannot honour is refused with Triton's words first, and changes nothing.
    const refused = await postJson('/v2/repository/models/override_model/load', {
      parameters: {
        config: '{"input": [{"name": "INPUT__0", "data_type": "TYPE_FP32", "dims": [4], "is_shape_tensor": true}]}',
      },
    });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: string }).error).toMatch(
      /^failed to load 'override_model', .*shape tensors are not supported/,
    );
    expect((await config()).max_batch_size).toBe(4);
  });

  it('loads a model from file: contents and its configuration (HTTP base64, gRPC bytes), and refuses file: without one', async () => {
    const { readFile } = await import('node:fs/promises');
    const file = await readFile(join(TRITON_REPO, 'simple.shuffled_Args', '1', 'model.pt'));
    const modelConfig = (name: string) =>
      JSON.stringify({
        name,
        platform: 'pytorch_libtorch',
        max_batch_size: 8,
        input: [
          { name: 'INPUT1', data_type: 'TYPE_FP32', dims: [4] },
          { name: 'INPUT0', data_type: 'TYPE_FP32', dims: [4] },
        ],
        output: [
          { name: 'OUTPUT0', data_type: 'TYPE_FP32', dims: ['4'] },
          { name: 'OUTPUT1', dataType: 'TYPE_FP32', dims: [4] },
        ],
      });
    const http = await postJson('/v2/repository/models/from_files_http/load', {
      parameters: { config: modelConfig('from_files_http'), 'file:1/model.pt': file.toString('base64') },
    });
    expect(http.status).toBe(200);
    await grpcCall(suite.rpc, 'RepositoryModelLoad', {
      model_name: 'from_files_grpc',
      parameters: {
        config: { string_param: modelConfig('from_files_grpc') },
        'file:1/model.pt': { bytes_param: file },
      },
    });
    const body = simpleRequest(43, 2);
    // forward(INPUT0, INPUT1): the request lists INPUT1 first, the model binds by name.
    const byName = (name: string) => body.inputs.find((i) => i.name === name)!;
    const ref = pythonForward(
      join(TRITON_REPO, 'simple.shuffled_Args', '1', 'model.pt'),
      ['INPUT0', 'INPUT1'].map((n) => ({
        dtype: 'FP32' as const,
        shape: byName(n).shape,
        data: Float32Array.from(byName(n).data),
      })),
    );
    for (const name of ['from_files_http', 'from_files_grpc']) {
      expect((await fetch(`${suite.node.httpUrl}/v2/models/${name}/ready`)).status).toBe(200);
      const r = await postJson(`/v2/models/${name}/infer`, body);
      expect(r.status).toBe(200);
      const outs = ((await r.json()) as { outputs: { name: string; data: number[] }[] }).outputs;
      expect(outs.map((o) => o.name)).toEqual(['OUTPUT0', 'OUTPUT1']);
      for (const [i, o] of outs.entries()) {
        expect(maxAbsDiff(o.data, ref.outputs[i]!.data as Float32Array)).toBeLessThan(1e-6);
      }
    }

    const noConfig = await postJson('/v2/repository/models/from_files_none/load', {
      parameters: { 'file:1/model.pt': file.toString('base64') },
    });
    expect(noConfig.status).toBe(400);
    expect(((await noConfig.json()) as { error: string }).error).toMatch(
      /^failed to load 'from_files_none', .*parameters.config/,
    );
    expect((await fetch(`${suite.node.httpUrl}/v2/models/from_files_none/ready`)).status).not.toBe(200);
  });

  it("answers the words Triton's clients look for: an unknown model's load, a bad version string, contents beside raw contents", async () => {
    const unknown = await fetch(`${suite.node.httpUrl}/v2/repository/models/wrong_model_name/load`, { method: 'POST' });
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: string }).error).toMatch(
      /^failed to load 'wrong_model_name', failed to poll from model repository/,
    );
    const version = await postJson(`/v2/models/${SIMPLE}/versions/x/infer`, simpleRequest(1));
    expect(version.status).toBe(400);
    expect(((await version.json()) as { error: string }).error).toMatch(
      /^failed to get model version from specified version string 'x'/,
    );
    const x = randomTensor('FP32', [1, 4], 3);
    const both = await grpcCall(suite.rpc, 'ModelInfer', {
      model_name: SIMPLE,
      inputs: ['INPUT1', 'INPUT0'].map((name) => ({
        name,
        datatype: 'FP32',
        shape: [1, 4],
        contents: { fp32_contents: Array.from(x.data) },
      })),
      raw_input_contents: [Buffer.from(x.data.buffer), Buffer.from(x.data.buffer)],
    }).catch((e: grpc.ServiceError) => e);
    expect((both as grpc.ServiceError).code).toBe(grpc.status.INVALID_ARGUMENT);
    expect((both as grpc.ServiceError).details).toBe(
      `contents field must not be specified when using raw_input_contents for 'INPUT1' for model '${SIMPLE}'`,
    );
  });
});
