/** Artifacts: the bytes a version is made of (model, hook bundle, example), stored under their sha256. */
import type { ArtifactInfo } from '../api/index.js';
import { ArtifactInfoSchema, ArtifactStoredSchema } from '../api/index.js';
import type { CallInit, Transport } from './transport.js';
import { check } from './transport.js';

/** The artifact's size if the node has it (HEAD), else undefined. */
export async function artifact(node: Transport, sha256: string): Promise<ArtifactInfo | undefined> {
  const r = await node.send(`/api/v1/artifacts/${sha256}`, { method: 'HEAD' });
  if (r.status === 404) return undefined;
  await check(r);
  return { sha256, size: Number(r.headers.get('x-artifact-size')) };
}

/** Uploads bytes under their sha256 (streamed when given a stream). */
export function uploadArtifact(
  node: Transport,
  sha256: string,
  body: Uint8Array | ReadableStream<Uint8Array>,
  size?: number,
): Promise<ArtifactInfo & { created: boolean }> {
  const headers: Record<string, string> = { 'content-type': 'application/octet-stream' };
  if (size !== undefined) headers['content-length'] = String(size);
  return node.json(ArtifactStoredSchema, `/api/v1/artifacts/${sha256}`, {
    method: 'PUT',
    body,
    headers,
    duplex: 'half',
  } as CallInit);
}

/** Brings an object of the node's S3 bucket and prefix in as an artifact (`s3://bucket/prefix/key`). */
export function importArtifact(node: Transport, uri: string): Promise<ArtifactInfo> {
  return node.post(ArtifactInfoSchema, '/api/v1/artifacts/import', { uri });
}
