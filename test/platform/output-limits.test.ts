/**
 * Outputs bounded before they are copied (issue 42): a model that returns one element expanded to
 * 10^8 (4 bytes of storage, 400 MB once made contiguous) is refused by its runner before the copy,
 * against the function's limits.maxResponseMb, on every lane — KServe JSON and binary, gRPC, the
 * function URL — and the node's memory does not grow by the output's size; JSON text past the
 * limit is refused before it is built; an output whose dtype or dims are not the spec's is an
 * error, not served. Outputs under the limit are served as python3-torch computes them.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { modelPath } from '../helpers/fixtures.js';
import type { InferenceClient } from '../helpers/grpc.js';
import { grpcCall, inferenceClient } from '../helpers/grpc.js';
import type { NodeProcess } from '../helpers/node.js';
import { postFunction, spawnNode, upload } from '../helpers/node.js';
import { pythonForward } from '../helpers/reference.js';

const ADMIN = 'outputs-admin-key-01';
const INVOKE = 'outputs-invoke-key-02';
const auth = (key = ADMIN) => ({ authorization: `Bearer ${key}` });
/** limits.maxResponseMb of the functions here: 8 MiB. */
const LIMIT = 8 * 2 ** 20;
const HUGE = 100_000_000;

const dir = await mkdtemp(join(tmpdir(), 'hearth-outputs-'));
let node: NodeProcess;
let grpc: InferenceClient;

async function deploy(spec: object, model: 'expands' | 'small'): Promise<void> {
  const id = await upload(node.url, new Uint8Array(await readFile(modelPath(model))), auth());
  const r = await postFunction(node.url, { spec, artifacts: { model: id } }, auth());
  expect(r.status, await r.clone().text()).toBe(201);
}

/** A KServe infer of `expands` asking for `n` elements, JSON or binary out. */
async function kserve(n: number, binary = false): Promise<Response> {
  return fetch(`${node.url}/v2/models/expands/infer`, {
    method: 'POST',
    body: JSON.stringify({
      inputs: [{ name: 'x', shape: [1], datatype: 'FP32', data: [n] }],
      ...(binary ? { parameters: { binary_data_output: true } } : {}),
    }),
    headers: { ...auth(INVOKE), 'content-type': 'application/json' },
  });
}

const functionUrl = (n: number) =>
  fetch(`${node.url}/fn/expands`, {
    method: 'POST',
    body: JSON.stringify({ inputs: { x: [n] } }),
    headers: { ...auth(INVOKE), 'content-type': 'application/json' },
  });

const grpcInfer = (n: number) =>
  grpcCall(
    grpc,
    'ModelInfer',
    {
      model_name: 'expands',
      inputs: [{ name: 'x', datatype: 'FP32', shape: [1] }],
      raw_input_contents: [Buffer.from(Float32Array.of(n).buffer)],
    },
    INVOKE,
  );

const rss = (pid: number) => readFile(`/proc/${pid}/statm`, 'latin1').then((s) => Number(s.split(' ')[1]) * 4096);
/** What python3-torch makes of the same file and input. */
const reference = (n: number) =>
  Array.from(
    pythonForward(modelPath('expands'), [{ dtype: 'FP32', shape: [1], data: Float32Array.of(n) }]).outputs[0]!
      .data as Float32Array,
  );

beforeAll(async () => {
  node = await spawnNode(join(dir, 'node'), { HEARTH_API_KEYS: `${ADMIN}:admin,${INVOKE}:invoke` });
  grpc = inferenceClient(node.grpc);
  const expands = {
    name: 'expands',
    model: 'model.pt',
    maxBatchSize: 0,
    instances: { device: 'cpu' },
    inputs: [{ name: 'x', dtype: 'FP32', dims: [1] }],
    outputs: [{ name: 'y', dtype: 'FP32', dims: [-1] }],
    limits: { maxResponseMb: 8 },
  };
  await deploy(expands, 'expands');
  const small = {
    model: 'model.pt',
    maxBatchSize: 8,
    instances: { device: 'cpu' },
    inputs: [{ name: 'x', dtype: 'FP32', dims: [4] }],
  };
  // `small` returns FP32 [N, 3]: served as UINT8 [-1], or as [5], it would be another function's answer.
  await deploy({ ...small, name: 'mistyped', outputs: [{ name: 'y', dtype: 'UINT8', dims: [-1] }] }, 'small');
  await deploy({ ...small, name: 'misshaped', outputs: [{ name: 'y', dtype: 'FP32', dims: [5] }] }, 'small');
  await deploy({ ...small, name: 'right', outputs: [{ name: 'y', dtype: 'FP32', dims: [3] }] }, 'small');
});
afterAll(async () => {
  grpc?.close();
  node?.child.kill('SIGKILL');
  await rm(dir, { recursive: true, force: true });
});

describe('an output past limits.maxResponseMb', () => {
  it('is refused on every lane before it is copied: 500, the node keeps its memory, and the next call is served', async () => {
    const before = await rss(node.child.pid!);
    for (const binary of [false, true]) {
      const r = await kserve(HUGE, binary);
      const body = (await r.json()) as { error: string; code: string };
      expect([binary, r.status, body.code]).toEqual([binary, 500, 'INFERENCE_FAILED']);
      expect(body.error).toMatch(
        /100000000 element\(s\) of FP32 \(400000000 bytes\).*8388608 bytes.*limits\.maxResponseMb/,
      );
    }
    const fn = await functionUrl(HUGE);
    const fnBody = (await fn.json()) as { error: string; code: string };
    expect([fn.status, fnBody.code]).toEqual([500, 'INFERENCE_FAILED']);
    expect(fnBody.error).toMatch(/limits\.maxResponseMb/);
    await expect(grpcInfer(HUGE)).rejects.toMatchObject({
      code: 13,
      details: expect.stringMatching(/limits\.maxResponseMb/),
    });
    // 400 MB each time, had it been copied out; the node grew by far less than one of them.
    expect(await rss(node.child.pid!)).toBeLessThan(before + 100 * 2 ** 20);
    const after = await kserve(1000);
    expect(after.status).toBe(200);
    const { outputs } = (await after.json()) as { outputs: { data: number[] }[] };
    expect(outputs[0]!.data).toEqual(reference(1000));
  });

  it('refuses JSON text past the limit before building it, and serves the same output as binary', async () => {
    // 1.5 M floats: 6 MB of bytes, under the 8 MiB limit; as JSON ("750000," each) 10.5 MB, over it.
    const n = 1_500_000;
    const json = await kserve(n);
    const jsonBody = (await json.json()) as { error: string; code: string };
    expect([json.status, jsonBody.code]).toEqual([500, 'INFERENCE_FAILED']);
    expect(jsonBody.error).toMatch(/JSON.*over its limit of 8388608 \(limits\.maxResponseMb\)/);
    const fn = await functionUrl(n);
    expect(fn.status).toBe(500);
    expect(((await fn.json()) as { error: string }).error).toMatch(/limits\.maxResponseMb/);

    const binary = await kserve(n, true);
    expect(binary.status).toBe(200);
    const headerLength = Number(binary.headers.get('inference-header-content-length'));
    const bytes = new Uint8Array(await binary.arrayBuffer());
    expect(bytes.byteLength - headerLength).toBe(n * 4);
    expect(bytes.byteLength).toBeLessThan(LIMIT);
    const data = new Float32Array(bytes.slice(headerLength).buffer);
    const want = reference(n);
    expect(data.length).toBe(want.length);
    expect(data.every((v, i) => v === want[i])).toBe(true);
  });

  it('serves an output under the limit on every lane as python3-torch computes it', async () => {
    const want = reference(1000);
    const json = await kserve(1000);
    expect(((await json.json()) as { outputs: { data: number[] }[] }).outputs[0]!.data).toEqual(want);
    const fn = await functionUrl(1000);
    expect(fn.status).toBe(200);
    expect(((await fn.json()) as { outputs: { y: number[] } }).outputs.y).toEqual(want);
    const g = await grpcInfer(1000);
    const raw = (g.raw_output_contents as Buffer[])[0]!;
    expect(Array.from(new Float32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength)))).toEqual(
      want,
    );
  });
});

describe("an output that is not the spec's", () => {
  const infer = (name: string) =>
    fetch(`${node.url}/v2/models/${name}/infer`, {
      method: 'POST',
      body: JSON.stringify({
        inputs: [{ name: 'x', shape: [2, 4], datatype: 'FP32', data: [1, 2, 3, 4, 5, 6, 7, 8] }],
      }),
      headers: { ...auth(INVOKE), 'content-type': 'application/json' },
    });

  it('is an error when its dtype differs (FP32 for a UINT8 output), as Triton refuses it', async () => {
    const r = await infer('mistyped');
    const body = (await r.json()) as { error: string; code: string };
    expect([r.status, body.code]).toEqual([500, 'INFERENCE_FAILED']);
    expect(body.error).toMatch(/output "y" is FP32, but the spec says UINT8/);
  });

  it('is an error when its dims differ', async () => {
    const r = await infer('misshaped');
    const body = (await r.json()) as { error: string; code: string };
    expect([r.status, body.code]).toEqual([500, 'INFERENCE_FAILED']);
    expect(body.error).toMatch(/output "y" has shape \[2, 3\], but the spec says \[batch, 5\]/);
  });

  it("is served when it is the spec's", async () => {
    const r = await infer('right');
    expect(r.status).toBe(200);
    const { outputs } = (await r.json()) as { outputs: { shape: number[]; datatype: string }[] };
    expect(outputs[0]).toMatchObject({ shape: [2, 3], datatype: 'FP32' });
  });
});
