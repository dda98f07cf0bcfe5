/**
 * The SDK client against a real node: KServe v2 infer with typed tensors over the binary
 * extension (python3-torch's output), and error bodies back as the typed error classes.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { HearthNode } from '../../platform/node/index.js';
import {
  FunctionNotFoundError,
  Hearth,
  InvalidInputError,
  UnauthenticatedError,
  UnavailableError,
  VersionNotFoundError,
} from '../../sdk/index.js';
import { modelPath } from '../helpers/fixtures.js';
import { sha256, testNode } from '../helpers/node.js';
import { maxAbsDiff } from '../helpers/random.js';
import { pythonForward } from '../helpers/reference.js';
import { SMALL_SPEC } from '../helpers/specs.js';

const dir = await mkdtemp(join(tmpdir(), 'hearth-client-'));
afterAll(() => rm(dir, { recursive: true, force: true }));
const SPEC = SMALL_SPEC;

describe('the Hearth client', () => {
  let node: HearthNode;
  let client: Hearth;
  beforeAll(async () => {
    node = await testNode(join(dir, 'node'), { HEARTH_API_KEYS: 'admin-key-123456:admin' });
    client = new Hearth({ url: node.httpUrl, apiKey: 'admin-key-123456' });
    const bytes = new Uint8Array(await readFile(modelPath('small')));
    const sha = sha256(bytes);
    expect(await client.artifact(sha)).toBeUndefined();
    expect(await client.uploadArtifact(sha, bytes)).toMatchObject({ sha256: sha, created: true });
    expect(await client.artifact(sha)).toEqual({ sha256: sha, size: bytes.byteLength });
    expect(await client.deploy(SPEC, { model: sha })).toMatchObject({ name: 'small', version: 1, status: 'ready' });
  });
  afterAll(() => node?.close());

  it('runs KServe infer with typed tensors, as python3-torch computes them', async () => {
    const x = { dtype: 'FP32' as const, shape: [3, 4], data: Float32Array.from({ length: 12 }, (_, i) => Math.sin(i)) };
    const out = await client.infer('small', { x });
    expect(out.y).toMatchObject({ name: 'y', dtype: 'FP32', shape: [3, 3] });
    const reference = pythonForward(modelPath('small'), [x]).outputs[0]!.data as Float32Array;
    expect(maxAbsDiff(out.y!.data as Float32Array, reference)).toBeLessThan(1e-6);
  });

  it('raises the typed error each error body names', async () => {
    await expect(client.infer('nope', {})).rejects.toBeInstanceOf(FunctionNotFoundError);
    await expect(
      client.infer('small', { x: { dtype: 'FP32', shape: [1, 5], data: new Float32Array(5) } }),
    ).rejects.toBeInstanceOf(InvalidInputError);
    await expect(client.invoke('small', {}, { version: 9 })).rejects.toBeInstanceOf(VersionNotFoundError);
    await expect(new Hearth({ url: node.httpUrl, apiKey: 'wrong-key-0000000' }).list()).rejects.toBeInstanceOf(
      UnauthenticatedError,
    );
    await expect(new Hearth({ url: 'http://127.0.0.1:1' }).list()).rejects.toBeInstanceOf(UnavailableError);
  });
});
