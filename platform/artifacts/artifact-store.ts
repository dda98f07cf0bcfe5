/**
 * The artifact store port: model files and hook bundles, content-addressed by sha256.
 *
 * Every write hashes the bytes as they stream and refuses a mismatch; every artifact handed to the
 * runtime is verified against its hash first, since a TorchScript file is executable code.
 */
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { createReadStream, createWriteStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { Readable } from 'node:stream';

import { InvalidInputError } from '../../sdk/errors.js';
import type { ArtifactClaims } from './claims.js';

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

export interface ArtifactStore extends ArtifactClaims {
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
  if (!SHA256.test(sha256))
    throw new InvalidInputError(`"${sha256}" is not a sha256 (64 lowercase hex digits)`, { reason: 'sha256' });
}

/**
 * Streams `body` into the file `path`, hashing it on the way; never whole in memory. A plain loop
 * with back-pressure: through pipeline() and an async generator, the same 100 MB fetch took about
 * a third longer (bench:coldstart).
 */
export async function writeHashed(
  path: string,
  body: Readable | AsyncIterable<Uint8Array>,
): Promise<{ sha256: string; size: number }> {
  const hash = createHash('sha256');
  let size = 0;
  const file = createWriteStream(path, { highWaterMark: 1 << 20 });
  const failed = new Promise<never>((_, reject) => file.once('error', reject));
  failed.catch(() => undefined);
  try {
    for await (const chunk of body) {
      hash.update(chunk);
      size += chunk.byteLength;
      if (!file.write(chunk)) await Promise.race([once(file, 'drain'), failed]);
    }
    file.end();
    await Promise.race([once(file, 'finish'), failed]);
  } catch (error) {
    file.destroy();
    throw error;
  }
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
 * Files whose bytes this process has hashed, remembered by what a write changes: inode, size and
 * mtime. A cold start from the cache then re-hashes 100 MB only if the file changed since it was
 * verified — measured, the re-hash was a fifth of a ResNet-50 cold start (bench:coldstart). Not
 * ctime: it also moves when a runner process's hard link to the file is made or removed, and every
 * cold start re-hashed. Setting an mtime back after a write takes the node's own user; runners run
 * as another, and the cached files are not theirs to write.
 */
export class VerifiedFiles {
  readonly #seen = new Map<string, { id: string; result: { sha256: string; size: number } }>();

  async #identity(path: string): Promise<string | undefined> {
    const s = await stat(path, { bigint: true }).catch(() => undefined);
    return s && `${s.ino}:${s.size}:${s.mtimeNs}`;
  }

  /** The file's sha256 and size (undefined if it is missing), hashed only if it changed. */
  async hash(path: string): Promise<{ sha256: string; size: number } | undefined> {
    const id = await this.#identity(path);
    if (!id) return undefined;
    const known = this.#seen.get(path);
    if (known?.id === id) return known.result;
    const result = await hashFile(path).catch(() => undefined);
    // Remembered only if nothing touched the file while it was read.
    if (result && (await this.#identity(path)) === id) this.#seen.set(path, { id, result });
    return result;
  }

  /** Remembers a file this process has just written (or touched) and knows the hash of. */
  async remember(path: string, result: { sha256: string; size: number }): Promise<void> {
    const id = await this.#identity(path);
    if (id) this.#seen.set(path, { id, result });
    else this.#seen.delete(path);
  }
}

/**
 * `s3://bucket/key` → key, only inside the configured bucket and prefix; anything else, and any
 * `..`, is refused before any I/O.
 */
export function allowedS3Key(uri: string, bucket: string, prefix: string): string {
  const m = /^s3:\/\/([^/]+)\/(.+)$/.exec(uri);
  if (!m)
    throw new InvalidInputError(
      `"${uri}" is not an s3://bucket/key URI; Hearth fetches nothing else (upload the file instead)`,
      { reason: 'uri' },
    );
  const [, b, key] = m as unknown as [string, string, string];
  if (b !== bucket)
    throw new InvalidInputError(`s3://${b}/… is outside the configured bucket ${bucket}`, { reason: 'uri' });
  if (key.split('/').some((seg) => seg === '..' || seg === '.') || key.includes('\\') || /%2e|%2f/i.test(key)) {
    throw new InvalidInputError(`"${uri}" has a relative path segment`, { reason: 'uri' });
  }
  if (!key.startsWith(prefix))
    throw new InvalidInputError(`"${uri}" is outside the configured prefix "${prefix}"`, { reason: 'uri' });
  return key;
}
