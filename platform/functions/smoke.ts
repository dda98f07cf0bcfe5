/**
 * A new version's smoke request: the spec's example — its JSON, or the bytes of its exampleFile,
 * uploaded with the version as an example artifact made for this function — which a deploy sends
 * through pre → forward → post before any traffic may move to the version.
 */
import { open, readFile } from 'node:fs/promises';

import { InvalidInputError } from '../../sdk/errors.js';
import type { FunctionSpec } from '../../sdk/spec/function-spec.js';
import { exampleFileType, exampleFromArtifact, MAX_EXAMPLE_BYTES } from '../../sdk/spec/index.js';
import type { ArtifactStore } from '../artifacts/index.js';
import type { FunctionVersion } from '../registry/index.js';

/** More than the line an example artifact starts with (`hearth-example:NAME`, a name of at most 128). */
export const EXAMPLE_HEAD_BYTES = 256;
/** How long a new version has to answer its smoke request (a cold hook isolate, a first forward). */
export const SMOKE_TIMEOUT_MS = 60_000;

type Artifacts = Pick<ArtifactStore, 'local'>;

/** A file's first `bytes` (all of it without). */
async function readHead(path: string, bytes?: number): Promise<Uint8Array> {
  if (bytes === undefined) return readFile(path);
  const handle = await open(path, 'r');
  try {
    const { buffer, bytesRead } = await handle.read(Buffer.alloc(bytes), 0, bytes, 0);
    return buffer.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

/**
 * The bytes of a spec's example file from its artifact: one made for this function, within the
 * limit. `head` reads only that much (the deploy's check; the smoke request reads it whole).
 */
export async function exampleBytes(
  artifacts: Artifacts,
  spec: FunctionSpec,
  sha: string,
  head?: number,
): Promise<Uint8Array> {
  const file = await artifacts.local(sha);
  if (file.size > MAX_EXAMPLE_BYTES + EXAMPLE_HEAD_BYTES)
    throw new InvalidInputError(
      `exampleFile ${spec.exampleFile} is ${file.size} bytes; a smoke request is at most ${MAX_EXAMPLE_BYTES}`,
      { reason: 'exampleFile' },
    );
  const bytes = exampleFromArtifact(spec.name, await readHead(file.path, head));
  if (!bytes)
    throw new InvalidInputError(
      `artifacts.example ${sha} is not an example file made for ${spec.name} (hearth deploy uploads the spec's exampleFile as one)`,
      { reason: 'exampleFile' },
    );
  return bytes;
}

/** The spec's example as a request: its JSON, or the bytes of its exampleFile (uploaded with the version). */
export async function smokeRequest(
  artifacts: Artifacts,
  v: FunctionVersion,
): Promise<{ body: Uint8Array; contentType: string } | undefined> {
  if (v.spec.example !== undefined)
    return { body: new TextEncoder().encode(JSON.stringify(v.spec.example)), contentType: 'application/json' };
  if (v.spec.exampleFile === undefined || v.artifacts.example === undefined) return undefined;
  const body = await exampleBytes(artifacts, v.spec, v.artifacts.example);
  return { body, contentType: exampleFileType(v.spec) };
}
