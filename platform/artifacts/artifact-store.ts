/**
 * The artifact store port: model files and hook bundles, content-addressed by sha256.
 *
 * Every write hashes the bytes as they stream and refuses a mismatch; every artifact handed to the
 * runtime is verified against its hash first, since a TorchScript file is executable code.
 */
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

import { InvalidInputError } from '../../sdk/errors.js';

export const SHA256 = /^[0-9a-f]{64}$/;

export interface ArtifactInfo {
  sha256: string;
  size: number;
}

export interface LocalArtifact extends ArtifactInfo {
  path: string;
  /** Where it came from: the store itself on disk, the local cache, or fetched just now. */
  source: 'store' | 'cache' | 'remote';
}

export interface ArtifactStore {
  readonly kind: 'fs' | 's3';
  /** Size if present (HEAD before upload, so an unchanged model is not sent again). */
  stat(sha256: string): Promise<ArtifactInfo | undefined>;
  /** Streams bytes in, hashing them; refuses them (InvalidInputError) if the hash differs. */
  put(sha256: string, body: Readable | AsyncIterable<Uint8Array>): Promise<ArtifactInfo>;
  /** A local file with the verified artifact, fetched into the cache if need be. */
  local(sha256: string): Promise<LocalArtifact>;
  /** Brings an object of the configured bucket and prefix in as an artifact (S3 only). */
  importS3(uri: string): Promise<ArtifactInfo>;
}

export function checkSha(sha256: string): void {
  if (!SHA256.test(sha256)) throw new InvalidInputError(`"${sha256}" is not a sha256 (64 lowercase hex digits)`, { reason: 'sha256' });
}

/** Streams `body` into the file `path`, hashing it on the way; never whole in memory. */
export async function writeHashed(path: string, body: Readable | AsyncIterable<Uint8Array>): Promise<{ sha256: string; size: number }> {
  const hash = createHash('sha256');
  let size = 0;
  await pipeline(
    body,
    async function* (source: AsyncIterable<Uint8Array>) {
      for await (const chunk of source) {
        hash.update(chunk);
        size += chunk.byteLength;
        yield chunk;
      }
    },
    createWriteStream(path),
  );
  return { sha256: hash.digest('hex'), size };
}

/** sha256 of a file, streamed (never whole in memory). */
export async function hashFile(path: string): Promise<{ sha256: string; size: number }> {
  const hash = createHash('sha256');
  let size = 0;
  for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 })) {
    hash.update(chunk as Buffer);
    size += (chunk as Buffer).length;
  }
  return { sha256: hash.digest('hex'), size };
}

/**
 * `s3://bucket/key` → key, only inside the configured bucket and prefix; anything else, and any
 * `..`, is refused before any I/O.
 */
export function allowedS3Key(uri: string, bucket: string, prefix: string): string {
  const m = /^s3:\/\/([^/]+)\/(.+)$/.exec(uri);
  if (!m) throw new InvalidInputError(`"${uri}" is not an s3://bucket/key URI; Hearth fetches nothing else (upload the file instead)`, { reason: 'uri' });
  const [, b, key] = m as unknown as [string, string, string];
  if (b !== bucket) throw new InvalidInputError(`s3://${b}/… is outside the configured bucket ${bucket}`, { reason: 'uri' });
  if (key.split('/').some((seg) => seg === '..' || seg === '.') || key.includes('\\') || /%2e|%2f/i.test(key)) {
    throw new InvalidInputError(`"${uri}" has a relative path segment`, { reason: 'uri' });
  }
  if (!key.startsWith(prefix)) throw new InvalidInputError(`"${uri}" is outside the configured prefix "${prefix}"`, { reason: 'uri' });
  return key;
}
