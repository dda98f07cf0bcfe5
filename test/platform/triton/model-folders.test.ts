/**
 * Triton model folders (test/fixtures/make_triton_repo.py) deployed unchanged through the CLI's
 * deploy path, then asked over HTTP JSON, HTTP binary and gRPC — each answer compared with
 * python3-torch running the same .pt with its arguments in forward()'s own order.
 */
import { copyFile, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

import * as grpc from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';

import { deployFolder, readSpec } from '../../../sdk/cli/deploy.js';
import type { Tensor } from '../../../sdk/tensor.js';
import { modelPath, TRITON_REPO } from '../../helpers/fixtures.js';
import { grpcCall } from '../../helpers/grpc.js';
import { maxAbsDiff, randomTensor } from '../../helpers/random.js';
import { pythonForward } from '../../helpers/reference.js';
import { nodeForFile } from '../../helpers/suite.js';

const suite = nodeForFile('triton-folders');

interface Case {
  folder: string;
  /** Inputs by config name, sent in the config's order. */
  inputs: Record<string, Tensor>;
  /** The same tensors in forward()'s order, for python3-torch. */
  forward: string[];
  /** Config output name → the model's output position. */
  outputs: Record<string, number>;
  /** Shapes the client sees, when reshape changes them. */
  shapes?: Record<string, number[]>;
  /** The model file, as make_triton_repo.py wrote it (default 1/model.pt). */
  file?: string;
  /** Shapes the model takes, by input, when reshape changes them (as the config says, written out here). */
  modelShapes?: Record<string, number[]>;
}

const f32 = (shape: number[], seed: number) => randomTensor('FP32', shape, seed);

const CASES: Case[] = [
  {
    folder: 'simple.shuffled_Args',
    inputs: { INPUT1: f32([2, 4], 1), INPUT0: f32([2, 4], 2) },
    forward: ['INPUT0', 'INPUT1'],
    outputs: { OUTPUT0: 0, OUTPUT1: 1 },
  },
  {
    folder: 'Index_Shuffled',
    inputs: { INPUT__1: f32([1, 3], 3), INPUT__0: f32([1, 3], 4) },
    forward: ['INPUT__0', 'INPUT__1'],
    outputs: { OUTPUT__1: 1, OUTPUT__0: 0 },
  },
  {
    folder: 'digit_outputs',
    inputs: { x__0: f32([2], 5), y__1: f32([2], 6) },
    forward: ['x__0', 'y__1'],
    outputs: { '1634__1': 1, '1633__0': 0 },
  },
  {
    folder: 'reshape_model',
    inputs: { INPUT__0: f32([3, 2, 2], 7) },
    forward: ['INPUT__0'],
    outputs: { OUTPUT__0: 0 },
    shapes: { OUTPUT__0: [3, 3, 1] },
    modelShapes: { INPUT__0: [3, 4] },
  },
  {
    folder: 'seed_layout',
    inputs: { INPUT__0: f32([2, 4], 8) },
    forward: ['INPUT__0'],
    outputs: { OUTPUT__0: 0 },
    file: '1/resnet.pt',
  },
  {
    folder: 'backend_parameters',
    inputs: { INPUT__0: f32([2, 3], 9) },
    forward: ['INPUT__0'],
    outputs: { OUTPUT__0: 0 },
  },
];

/**
 * python3-torch on the folder's model file, arguments in forward()'s order, shaped as the model
 * takes them — all written out in the case, not read back through Hearth's import.
 */
function reference(c: Case): Record<string, Tensor> {
  const args = c.forward.map((name) => {
    const t = c.inputs[name]!;
    const shape = c.modelShapes?.[name];
    return shape ? { ...t, shape } : t;
  });
  const ref = pythonForward(join(TRITON_REPO, c.folder, c.file ?? '1/model.pt'), args);
  return Object.fromEntries(Object.entries(c.outputs).map(([name, position]) => [name, ref.outputs[position]!]));
}

function bytes(t: Tensor): Buffer {
  return Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength);
}

describe('Triton model folders, deployed unchanged', () => {
  it.each(CASES)('$folder: deploys, and answers as python3-torch over HTTP JSON, HTTP binary and gRPC', async (c) => {
    const deployed = await deployFolder(suite.client, join(TRITON_REPO, c.folder));
    expect(deployed).toMatchObject({ status: 'ready' });
    const name = (await readSpec(join(TRITON_REPO, c.folder))).name;
    const expected = reference(c);
    const path = `${suite.node.httpUrl}/v2/models/${encodeURIComponent(name)}/infer`;

    // HTTP JSON
    const json = await fetch(path, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        inputs: Object.entries(c.inputs).map(([n, t]) => ({
          name: n,
          datatype: 'FP32',
          shape: t.shape,
          data: Array.from(t.data as Float32Array),
        })),
      }),
    });
    expect(json.status).toBe(200);
    const body = (await json.json()) as {
      model_name: string;
      outputs: { name: string; shape: number[]; data: number[] }[];
    };
    expect(body.model_name).toBe(name);
    expect(body.outputs.map((o) => o.name)).toEqual(Object.keys(c.outputs));
    for (const o of body.outputs) {
      const want = expected[o.name]!;
      expect(o.shape).toEqual(c.shapes?.[o.name] ?? want.shape);
      expect(maxAbsDiff(o.data, want.data as Float32Array)).toBeLessThan(1e-5);
    }

    // HTTP binary (the SDK's infer)
    const binary = await suite.client.infer(name, c.inputs);
    for (const [n, want] of Object.entries(expected))
      expect(maxAbsDiff(binary[n]!.data as Float32Array, want.data as Float32Array)).toBeLessThan(1e-5);

    // gRPC, raw contents
    const response = await grpcCall(suite.rpc, 'ModelInfer', {
      model_name: name,
      inputs: Object.entries(c.inputs).map(([n, t]) => ({ name: n, datatype: 'FP32', shape: t.shape })),
      raw_input_contents: Object.values(c.inputs).map(bytes),
    });
    const outputs = response.outputs as { name: string; shape: string[] }[];
    const raw = response.raw_output_contents as Buffer[];
    outputs.forEach((o, i) => {
      const want = expected[o.name]!;
      expect(o.shape.map(Number)).toEqual(c.shapes?.[o.name] ?? want.shape);
      const got = new Float32Array(new Uint8Array(raw[i]!).buffer);
      expect(maxAbsDiff(got, want.data as Float32Array)).toBeLessThan(1e-5);
    });
  });

  it('serves the version folder that version_policy picks', async () => {
    const deployed = await deployFolder(suite.client, join(TRITON_REPO, 'versioned_model'));
    expect(deployed.status).toBe('ready');
    const out = await suite.client.infer('versioned_model', {
      INPUT__0: { dtype: 'FP32', shape: [1, 2], data: Float32Array.from([1, 2]) },
    });
    expect(Array.from(out.OUTPUT__0!.data as Float32Array)).toEqual([3, 4]); // x + 2: version folder 2
  });

  it('answers classification requests as "score:index:label", top-k per row, over HTTP and gRPC', async () => {
    await deployFolder(suite.client, join(TRITON_REPO, 'classifier.v1'));
    const x = f32([2, 4], 11);
    const scores = pythonForward(join(TRITON_REPO, 'classifier.v1', '1', 'model.pt'), [x]).outputs[0]!
      .data as Float32Array;
    const labels = ['apple', 'banana', 'cherry', 'date', 'elderberry'];
    // Hand-computed top 3 of each row of 5, printed as std::to_string prints a float.
    const want = [0, 1].flatMap((r) => {
      const row = Array.from(scores.subarray(r * 5, r * 5 + 5));
      return row
        .map((v, i) => ({ v, i }))
        .sort((a, b) => b.v - a.v)
        .slice(0, 3)
        .map(({ v, i }) => `${v.toFixed(6)}:${i}:${labels[i]}`);
    });
    const r = await fetch(`${suite.node.httpUrl}/v2/models/classifier.v1/infer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        inputs: [{ name: 'INPUT__0', datatype: 'FP32', shape: [2, 4], data: Array.from(x.data) }],
        outputs: [{ name: 'OUTPUT__0', parameters: { classification: 3 } }],
      }),
    });
    const body = (await r.json()) as { outputs: { name: string; datatype: string; shape: number[]; data: string[] }[] };
    expect(body.outputs[0]).toEqual({ name: 'OUTPUT__0', datatype: 'BYTES', shape: [2, 3], data: want });

    const response = await grpcCall(suite.rpc, 'ModelInfer', {
      model_name: 'classifier.v1',
      inputs: [{ name: 'INPUT__0', datatype: 'FP32', shape: [2, 4] }],
      outputs: [{ name: 'OUTPUT__0', parameters: { classification: { int64_param: 3 } } }],
      raw_input_contents: [bytes(x)],
    });
    expect((response.outputs as { datatype: string }[])[0]!.datatype).toBe('BYTES');
    const raw = new Uint8Array((response.raw_output_contents as Buffer[])[0]!);
    const strings: string[] = [];
    for (let at = 0; at < raw.byteLength; ) {
      const n = new DataView(raw.buffer, raw.byteOffset + at, 4).getUint32(0, true);
      strings.push(Buffer.from(raw.subarray(at + 4, at + 4 + n)).toString());
      at += 4 + n;
    }
    expect(strings).toEqual(want);
  });

  it("says the unknown model in Triton's words, over HTTP and gRPC", async () => {
    const r = await fetch(`${suite.node.httpUrl}/v2/models/nope.model/infer`, {
      method: 'POST',
      body: '{"inputs": []}',
      headers: { 'content-type': 'application/json' },
    });
    expect(r.status).toBe(404);
    expect(((await r.json()) as { error: string }).error).toBe("Request for unknown model: 'nope.model' is not found");
    const error = await grpcCall(suite.rpc, 'ModelInfer', { model_name: 'nope.model', inputs: [] }).catch(
      (e: grpc.ServiceError) => e,
    );
    expect((error as grpc.ServiceError).code).toBe(grpc.status.NOT_FOUND);
    expect((error as grpc.ServiceError).details).toBe("Request for unknown model: 'nope.model' is not found");
  });
});

describe('model_warmup', () => {
  async function warmupFolder(name: string, dims: string): Promise<string> {
    const folder = join(suite.dir, name);
    await mkdir(join(folder, '1'), { recursive: true });
    await copyFile(join(TRITON_REPO, 'seed_layout', '1', 'resnet.pt'), join(folder, '1', 'model.pt'));
    await writeFile(
      join(folder, 'config.pbtxt'),
      `platform: "pytorch_libtorch"
      max_batch_size: 4
      input [ { name: "INPUT__0" data_type: TYPE_FP32 dims: [ 4 ] } ]
      output [ { name: "OUTPUT__0" data_type: TYPE_FP32 dims: [ 3 ] } ]
      model_warmup [ { name: "sample" batch_size: 2 count: 3 inputs { key: "INPUT__0" value: { data_type: TYPE_FP32 dims: [ ${dims} ] random_data: true } } } ]`,
    );
    return folder;
  }

  it("runs the config's samples at load: a sample the model cannot take fails the deploy, naming the warm-up", async () => {
    const bad = await deployFolder(suite.client, await warmupFolder('warm_bad', '5'));
    expect(bad.status).toBe('failed');
    expect(bad.reason).toMatch(/warm-up forward failed/);
    const good = await deployFolder(suite.client, await warmupFolder('warm_good', '4'));
    expect(good.status).toBe('ready');
    const pools = (await suite.client.describe('warm_good')).pools as { coldStart?: { warmup: number } }[];
    expect(pools[0]!.coldStart!.warmup).toBeGreaterThan(0);
  });
});

describe('a forward() that takes one Dict[str, Tensor]', () => {
  it('gets every input in the dict under its config name (hand-computed 2a - b), batched or not', async () => {
    expect((await deployFolder(suite.client, join(TRITON_REPO, 'dict_input'))).status).toBe('ready');
    const a = [1, 2, 3, 4, 5, 6];
    const b = [0.5, 0, -1, 2, 2, 2];
    const one = (rows: number, off: number) =>
      suite.client.infer('dict_input', {
        INPUT_B: { dtype: 'FP32', shape: [rows, 3], data: Float32Array.from(b.slice(off * 3, (off + rows) * 3)) },
        INPUT_A: { dtype: 'FP32', shape: [rows, 3], data: Float32Array.from(a.slice(off * 3, (off + rows) * 3)) },
      });
    const [both, first, second] = await Promise.all([one(2, 0), one(1, 0), one(1, 1)]);
    const want = a.map((x, i) => 2 * x - b[i]!);
    expect(Array.from(both.OUTPUT__0!.data as Float32Array)).toEqual(want);
    expect(Array.from(first.OUTPUT__0!.data as Float32Array)).toEqual(want.slice(0, 3));
    expect(Array.from(second.OUTPUT__0!.data as Float32Array)).toEqual(want.slice(3));
  });
});

describe("Triton's PyTorch tutorial config, as written", () => {
  // From Triton's tutorials (Quick_Deploy/PyTorch/config.pbtxt): no batching, reshape on both sides.
  const TUTORIAL = `name: "resnet50"
platform: "pytorch_libtorch"
max_batch_size : 0
input [
  {
    name: "input__0"
    data_type: TYPE_FP32
    dims: [ 3, 224, 224 ]
    reshape { shape: [ 1, 3, 224, 224 ] }
  }
]
output [
  {
    name: "output__0"
    data_type: TYPE_FP32
    dims: [ 1, 1000 ,1, 1]
    reshape { shape: [ 1, 1000 ] }
  }
]
`;

  it('deploys ResNet-50 unchanged and answers as python3-torch does', async () => {
    const folder = join(suite.dir, 'tutorial', 'resnet50');
    await mkdir(join(folder, '1'), { recursive: true });
    await writeFile(join(folder, 'config.pbtxt'), TUTORIAL);
    await copyFile(modelPath('resnet50'), join(folder, '1', 'model.pt'));
    expect((await deployFolder(suite.client, folder)).status).toBe('ready');
    const x = f32([3, 224, 224], 41);
    const ref = pythonForward(modelPath('resnet50'), [{ ...x, shape: [1, 3, 224, 224] }]).outputs[0]!;
    const out = await suite.client.infer('resnet50', { input__0: x });
    expect(out.output__0!.shape).toEqual([1, 1000, 1, 1]);
    expect(maxAbsDiff(out.output__0!.data as Float32Array, ref.data as Float32Array)).toBeLessThan(1e-3);
  });
});
