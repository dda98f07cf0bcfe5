/**
 * Every example function under functions/ is made as its README says (python3 export.py), deployed
 * with the CLI (`hearth deploy <folder>`, the Triton folder unchanged) and answers as the same model
 * run by python3-torch does: tabular-mlp (JSON rows), triton-resnet (KServe v2 tensors),
 * text-sentiment (the hook's tokenizer) and image-classifier (photo-like JPEG, PNG and WebP files,
 * against PIL + torchvision.transforms and the model in python3-torch).
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { HearthNode } from '../../platform/node/index.js';
import { Hearth } from '../../sdk/index.js';
import { HEARTH_CLI, PYTHON, REPO_ROOT } from '../helpers/fixtures.js';
import { floats, makeTestImages, torchvision } from '../helpers/images.js';
import { testNode } from '../helpers/node.js';
import { maxAbsDiff } from '../helpers/random.js';
import { pythonForward } from '../helpers/reference.js';

const run = promisify(execFile);
const FUNCTIONS = join(REPO_ROOT, 'functions');
const dir = await mkdtemp(join(tmpdir(), 'hearth-examples-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

async function make(name: string): Promise<void> {
  await run(PYTHON, ['export.py'], { cwd: join(FUNCTIONS, name) });
}

describe('example functions', () => {
  let node: HearthNode;
  let client: Hearth;
  beforeAll(async () => {
    // The README's machine (24 GiB) and the node's default budget: the four functions' default
    // 8 GiB limits pass its 22 GiB allocatable together; what they use does not.
    node = await testNode(join(dir, 'node'), { HEARTH_NODE_MEMORY_MB: '24576' });
    client = new Hearth({ url: node.httpUrl });
  });
  afterAll(() => node?.close());

  const deploy = async (name: string): Promise<void> => {
    await make(name);
    const { stdout } = await run(HEARTH_CLI, ['--url', node.httpUrl, '--json', 'deploy', join(FUNCTIONS, name)]);
    expect(JSON.parse(stdout)).toMatchObject({ name, status: 'ready' });
  };

  it("tabular-mlp: JSON rows in, the MLP's scores out", async () => {
    await deploy('tabular-mlp');
    const rows = [
      Array.from({ length: 1024 }, (_, i) => Math.sin(i) / 10),
      Array.from({ length: 1024 }, (_, i) => Math.cos(i) / 10),
    ];
    const answer = (await client.invoke('tabular-mlp', { rows })).json<{ scores: number[][] }>();
    const reference = pythonForward(join(FUNCTIONS, 'tabular-mlp', 'model.pt'), [
      { dtype: 'FP32', shape: [2, 1024], data: Float32Array.from(rows.flat()) },
    ]).outputs[0]!.data as Float32Array;
    expect(maxAbsDiff(Float32Array.from(answer.scores.flat()), reference)).toBeLessThan(1e-4);
    // A wrong body is the caller's mistake (400), said by the SDK's helper (inputFromJson, checked
    // against the spec) with the field's path; a hook whose own tensors break the spec is the hook's
    // (500: test/runtime/hooks/hook-pool.test.ts, the wrong-dtype hook).
    const bad = async (body: unknown) => {
      const r = await fetch(`${node.httpUrl}/fn/tabular-mlp`, {
        method: 'POST',
        body: JSON.stringify(body),
        headers: { 'content-type': 'application/json' },
      });
      return { status: r.status, ...((await r.json()) as { error: string; code: string }) };
    };
    expect(await bad({ rows: [[1, 'two', 3]] })).toMatchObject({
      status: 400,
      code: 'INVALID_INPUT',
      error: expect.stringMatching(/rows\[0\]\[1\] must be a number/),
    });
    expect(await bad({ rows: [[1, 2], [3]] })).toMatchObject({ status: 400, error: expect.stringMatching(/ragged/) });
    expect(await bad({ rows: [[1, 2, 3]] })).toMatchObject({
      status: 400,
      code: 'INVALID_INPUT',
      error: 'rows has shape [1, 3], but x takes [batch, 1024] (rows of 1024 numbers)',
    });
  });

  it('triton-resnet: the Triton folder deploys unchanged and answers KServe v2 tensors', async () => {
    await deploy('triton-resnet');
    const x = {
      dtype: 'FP32' as const,
      shape: [1, 3, 224, 224],
      data: Float32Array.from({ length: 3 * 224 * 224 }, (_, i) => Math.sin(i / 100)),
    };
    const out = await client.infer('triton-resnet', { INPUT__0: x });
    expect(out.OUTPUT__0!.shape).toEqual([1, 1000]);
    const reference = pythonForward(join(FUNCTIONS, 'triton-resnet', '1', 'model.pt'), [x]).outputs[0]!
      .data as Float32Array;
    expect(maxAbsDiff(out.OUTPUT__0!.data as Float32Array, reference)).toBeLessThan(1e-3);
  });

  it('text-sentiment: the hook tokenizes, the model scores, any length', async () => {
    await deploy('text-sentiment');
    const vocab = JSON.parse(await readFile(join(FUNCTIONS, 'text-sentiment', 'vocab.json'), 'utf8')) as {
      words: string[];
    };
    for (const [text, label] of [
      ['A wonderful film, I loved it', 'positive'],
      ['terrible and boring, the worst service', 'negative'],
    ] as const) {
      const answer = (await client.invoke('text-sentiment', { text })).json<{
        label: string;
        probs: { negative: number; positive: number };
        tokens: number;
      }>();
      expect(answer.label).toBe(label);
      const ids = BigInt64Array.from(
        text
          .toLowerCase()
          .match(/[a-z']+/g)!
          .map((w) => BigInt(Math.max(0, vocab.words.indexOf(w)))),
      );
      const reference = pythonForward(join(FUNCTIONS, 'text-sentiment', 'model.pt'), [
        { dtype: 'INT64', shape: [ids.length], data: ids },
      ]).outputs[0]!.data as Float32Array;
      expect(Math.abs(answer.probs.negative - reference[0]!)).toBeLessThan(1e-6);
      expect(Math.abs(answer.probs.positive - reference[1]!)).toBeLessThan(1e-6);
      expect(answer.tokens).toBe(ids.length);
    }
    const empty = await fetch(`${node.httpUrl}/fn/text-sentiment`, {
      method: 'POST',
      body: '{"text": ""}',
      headers: { 'content-type': 'application/json' },
    });
    expect(empty.status).toBe(400);
  });

  it('image-classifier: an image in, the top-5 labels with the scores PIL + torchvision + python3-torch give', async () => {
    await deploy('image-classifier');
    const images = join(dir, 'images');
    makeTestImages(images);
    const files = ['photo.jpg', 'tall.jpg', 'photo.png', 'photo.webp'];
    // The Python user's preprocessing, then the same model.pt in python3-torch.
    const recipe = [
      { op: 'resize', size: 256 },
      { op: 'centerCrop', size: 224 },
      { op: 'toTensor' },
      { op: 'normalize', mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225] },
    ] as const;
    const inputs = torchvision(
      images,
      files.map((file) => ({ file, steps: recipe })),
    );
    const labels = JSON.parse(await readFile(join(FUNCTIONS, 'image-classifier', 'labels.json'), 'utf8')) as string[];
    type Top5 = { top5: { index: number; label?: string; score: number }[] };
    /** An answer against python3-torch's top 5 for the same file. */
    const matches = ({ top5 }: Top5, expected: { index: number; score: number }[], file: string) => {
      expect(
        top5.map((t) => t.index),
        file,
      ).toEqual(expected.map((e) => e.index));
      for (const [j, t] of top5.entries()) {
        expect(Math.abs(t.score - expected[j]!.score)).toBeLessThan(1e-4);
        expect(t.label).toBe(labels[t.index]);
      }
    };
    const references: { index: number; score: number }[][] = [];
    for (const [i, file] of files.entries()) {
      const body = new Uint8Array(await readFile(join(images, file)));
      const type = `image/${file.endsWith('.jpg') ? 'jpeg' : file.split('.').pop()}`;
      const response = await client.invoke('image-classifier', body, { contentType: type });
      expect(response.json<Top5>().top5).toHaveLength(5);
      const logits = pythonForward(join(FUNCTIONS, 'image-classifier', 'model.pt'), [
        { dtype: 'FP32', shape: [1, 3, 224, 224], data: floats(inputs[i]!) },
      ]).outputs[0]!.data as Float32Array;
      const max = Math.max(...logits);
      const exp = Array.from(logits, (l) => Math.exp(l - max));
      const sum = exp.reduce((a, c) => a + c, 0);
      const expected = exp
        .map((e, j) => ({ index: j, score: e / sum }))
        .sort((a, c) => c.score - a.score)
        .slice(0, 5);
      matches(response.json<Top5>(), expected, file);
      references.push(expected);
    }
    // At once, so the runner's hook threads run them too (a lone request runs on the runner's own
    // thread): each the answer python3-torch gives (to batched arithmetic's last digits).
    const photoJpg = new Uint8Array(await readFile(join(images, files[0]!)));
    const together = await Promise.all(
      Array.from({ length: 12 }, () => client.invoke('image-classifier', photoJpg, { contentType: 'image/jpeg' })),
    );
    for (const r of together) matches(r.json<Top5>(), references[0]!, `${files[0]} together`);
    const notAnImage = await fetch(`${node.httpUrl}/fn/image-classifier`, {
      method: 'POST',
      body: 'hello',
      headers: { 'content-type': 'text/plain' },
    });
    expect(notAnImage.status).toBe(400);
    expect(((await notAnImage.json()) as { error: string }).error).toMatch(/not a JPEG, PNG or WebP image/);
    const truncated = await fetch(`${node.httpUrl}/fn/image-classifier`, {
      method: 'POST',
      body: photoJpg.subarray(0, photoJpg.length >> 1),
      headers: { 'content-type': 'image/jpeg' },
    });
    expect(truncated.status).toBe(400);
    expect(((await truncated.json()) as { error: string }).error).toMatch(/the JPEG does not decode/);
  });

  it("runs the README's SDK snippet as written, against the functions deployed above", async () => {
    const readme = await readFile(join(REPO_ROOT, 'README.md'), 'utf8');
    const block = /From TypeScript, the same through the SDK's client:\n\n```ts\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(block).toBeDefined();
    // Only where it runs changes: @hearth/sdk is the package's entry in this checkout, and this node's URL.
    const script = block!
      .replace("'@hearth/sdk'", `'${join(REPO_ROOT, 'sdk', 'package.js')}'`)
      .replace("'http://127.0.0.1:8000'", `'${node.httpUrl}'`);
    const file = join(dir, 'readme-snippet.mts');
    await writeFile(file, script);
    const { stdout } = await run(process.execPath, ['--import', 'tsx', file], { cwd: REPO_ROOT });
    const lines = stdout.trim().split('\n');
    expect(lines.at(-2)).toBe('[ 1, 1000 ]');
    expect(lines.at(-1)).toBe('succeeded');
  });
});
