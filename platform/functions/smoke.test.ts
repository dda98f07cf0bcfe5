/**
 * The smoke request from a spec: its JSON example, or its example file's bytes from an artifact made
 * for the function (never another function's), read whole or only its head, within the limit.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { exampleArtifact, MAX_EXAMPLE_BYTES } from '../../sdk/spec/index.js';
import type { FunctionVersion } from '../registry/index.js';
import { EXAMPLE_HEAD_BYTES, exampleBytes, smokeRequest } from './smoke.js';
import { specOf } from './test-fakes.js';

const dir = await mkdtemp(join(tmpdir(), 'hearth-smoke-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

const image = new Uint8Array(1000).map((_, i) => i % 251);
/** An artifact store holding one example file per sha (its size as stored, or as given). */
async function artifactsWith(files: Record<string, { bytes: Uint8Array; size?: number }>) {
  const paths: Record<string, { path: string; size: number }> = {};
  for (const [sha, { bytes, size }] of Object.entries(files)) {
    const path = join(dir, sha);
    await writeFile(path, bytes);
    paths[sha] = { path, size: size ?? bytes.length };
  }
  return { local: async (sha: string) => ({ ...paths[sha]!, sha256: sha, source: 'cache' as const }) };
}
const version = (spec: FunctionVersion['spec'], example?: string): FunctionVersion => ({
  version: 1,
  spec,
  artifacts: { model: 'm', ...(example ? { example } : {}) },
  createdAt: '',
  status: 'pending',
});

describe('the smoke request', () => {
  it("is the spec's JSON example, or nothing without an example", async () => {
    const artifacts = await artifactsWith({});
    const request = await smokeRequest(artifacts, version(specOf('f', { example: { x: [1, 2, 3, 4] } })));
    expect(request?.contentType).toBe('application/json');
    expect(new TextDecoder().decode(request?.body)).toBe('{"x":[1,2,3,4]}');
    expect(await smokeRequest(artifacts, version(specOf('f')))).toBeUndefined();
  });

  it("is the example file's bytes, typed by its extension", async () => {
    const artifacts = await artifactsWith({ cat: { bytes: exampleArtifact('f', image) } });
    const request = await smokeRequest(artifacts, version(specOf('f', { exampleFile: 'cat.png' }), 'cat'));
    expect(request).toEqual({ body: Buffer.from(image), contentType: 'image/png' });
  });
});

describe('exampleBytes', () => {
  it('reads only the head when asked (the deploy checks the first line)', async () => {
    const artifacts = await artifactsWith({ cat: { bytes: exampleArtifact('f', image) } });
    const head = await exampleBytes(artifacts, specOf('f', { exampleFile: 'cat.png' }), 'cat', EXAMPLE_HEAD_BYTES);
    expect(head).toEqual(Buffer.from(image.subarray(0, EXAMPLE_HEAD_BYTES - 'hearth-example:f\n'.length)));
  });

  it("refuses another function's artifact, and a file over the limit", async () => {
    const artifacts = await artifactsWith({
      theirs: { bytes: exampleArtifact('g', image) },
      huge: { bytes: exampleArtifact('f', image), size: MAX_EXAMPLE_BYTES + EXAMPLE_HEAD_BYTES + 1 },
    });
    const spec = specOf('f', { exampleFile: 'cat.png' });
    await expect(exampleBytes(artifacts, spec, 'theirs')).rejects.toMatchObject({
      code: 'INVALID_INPUT',
      message:
        "artifacts.example theirs is not an example file made for f (hearth deploy uploads the spec's exampleFile as one)",
    });
    await expect(exampleBytes(artifacts, spec, 'huge')).rejects.toThrow(
      `exampleFile cat.png is ${MAX_EXAMPLE_BYTES + EXAMPLE_HEAD_BYTES + 1} bytes; a smoke request is at most ${MAX_EXAMPLE_BYTES}`,
    );
  });
});
