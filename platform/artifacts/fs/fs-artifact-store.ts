/** The embedded default: artifacts as files under the data dir, `artifacts/<aa>/<sha256>`. */
import { randomUUID } from 'node:crypto';
import { mkdir, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';

import { InvalidInputError } from '../../../sdk/errors.js';
import type { ArtifactInfo, ArtifactStore, LocalArtifact } from '../artifact-store.js';
import { checkSha, VerifiedFiles, writeHashed } from '../artifact-store.js';

/** Streams `body` to `path` through a sha256; on a mismatch nothing is left behind. */
export async function writeVerified(
  path: string,
  sha256: string,
  body: Readable | AsyncIterable<Uint8Array>,
): Promise<number> {
  const tmp = `${path}.${randomUUID()}.tmp`;
  await mkdir(join(path, '..'), { recursive: true });
  try {
    const { sha256: actual, size } = await writeHashed(tmp, body);
    if (actual !== sha256)
      throw new InvalidInputError(`the bytes hash to ${actual}, not ${sha256}: refused`, { reason: 'sha256' });
    await rename(tmp, path);
    return size;
  } finally {
    await rm(tmp, { force: true });
  }
}

export class FsArtifactStore implements ArtifactStore {
  readonly kind = 'fs';
  readonly #root: string;
  readonly #verified = new VerifiedFiles();

  constructor(dataDir: string) {
    this.#root = join(dataDir, 'artifacts');
  }

  #path(sha256: string): string {
    checkSha(sha256);
    return join(this.#root, sha256.slice(0, 2), sha256);
  }

  async stat(sha256: string): Promise<ArtifactInfo | undefined> {
    const s = await stat(this.#path(sha256)).catch(() => undefined);
    return s ? { sha256, size: s.size } : undefined;
  }

  async put(sha256: string, body: Readable | AsyncIterable<Uint8Array>): Promise<ArtifactInfo> {
    const size = await writeVerified(this.#path(sha256), sha256, body);
    return { sha256, size };
  }

  /** `artifacts/claims/<sha256>/<tenant>`, an empty file (../claims.ts). */
  async claim(sha256: string, tenant: string): Promise<void> {
    checkSha(sha256);
    const dir = join(this.#root, 'claims', sha256);
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, tenant), '');
  }

  async claimants(sha256: string): Promise<string[]> {
    checkSha(sha256);
    return readdir(join(this.#root, 'claims', sha256)).catch(() => []);
  }

  async local(sha256: string): Promise<LocalArtifact> {
    const path = this.#path(sha256);
    const actual = await this.#verified.hash(path);
    if (!actual)
      throw new InvalidInputError(`artifact ${sha256} is not in the store: upload it first`, { reason: 'sha256' });
    if (actual.sha256 !== sha256)
      throw new InvalidInputError(`artifact ${sha256} on disk hashes to ${actual.sha256}: refused`, {
        reason: 'integrity',
      });
    return { sha256, size: actual.size, path, source: 'store' };
  }

  async importS3(uri: string): Promise<ArtifactInfo> {
    throw new InvalidInputError(
      `"${uri}": this node has no S3 store configured (HEARTH_S3_BUCKET); upload the file instead`,
      { reason: 'uri' },
    );
  }
}
