/**
 * The node's local disk cache of artifacts pulled from a remote store: files named by sha256, each
 * verified against its hash when fetched and again before it is handed out (re-hashed only if the
 * file changed since: VerifiedFiles), evicted least recently
 * used first when the cache grows past its size budget.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, readdir, rename, rm, stat, utimes } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';

import { VerifiedFiles, writeHashed } from './artifact-store.js';
import { writeVerified } from './fs/fs-artifact-store.js';

export class ArtifactCache {
  readonly #dir: string;
  readonly #maxBytes: number;
  readonly #onRefused: (sha256: string, actual: string) => void;
  readonly #verified = new VerifiedFiles();

  constructor(dir: string, maxBytes: number, onRefused: (sha256: string, actual: string) => void = () => {}) {
    this.#dir = dir;
    this.#maxBytes = maxBytes;
    this.#onRefused = onRefused;
  }

  path(sha256: string): string {
    return join(this.#dir, sha256);
  }

  /** The cached file if present and intact (a corrupt one is removed and reported). */
  async get(sha256: string): Promise<{ path: string; size: number } | undefined> {
    const path = this.path(sha256);
    const actual = await this.#verified.hash(path);
    if (!actual) return undefined;
    if (actual.sha256 !== sha256) {
      this.#onRefused(sha256, actual.sha256);
      await rm(path, { force: true });
      return undefined;
    }
    const now = new Date();
    await utimes(path, now, now).catch(() => undefined); // recently used
    await this.#verified.remember(path, actual);
    return { path, size: actual.size };
  }

  async put(sha256: string, body: Readable | AsyncIterable<Uint8Array>): Promise<{ path: string; size: number }> {
    const path = this.path(sha256);
    const size = await writeVerified(path, sha256, body);
    await this.#verified.remember(path, { sha256, size });
    await this.evict(sha256);
    return { path, size };
  }

  /** Streams bytes whose hash is not known yet into the cache, under the hash they turn out to have. */
  async putUnknown(
    body: Readable | AsyncIterable<Uint8Array>,
  ): Promise<{ sha256: string; path: string; size: number }> {
    await mkdir(this.#dir, { recursive: true });
    const tmp = join(this.#dir, `incoming-${randomUUID()}.tmp`);
    try {
      const { sha256, size } = await writeHashed(tmp, body);
      await rename(tmp, this.path(sha256));
      await this.#verified.remember(this.path(sha256), { sha256, size });
      await this.evict(sha256);
      return { sha256, path: this.path(sha256), size };
    } finally {
      await rm(tmp, { force: true });
    }
  }

  /** Removes least recently used files until the cache fits its budget (never `keep`). */
  async evict(keep?: string): Promise<string[]> {
    const names = (await readdir(this.#dir).catch(() => [] as string[])).filter((n) => /^[0-9a-f]{64}$/.test(n));
    const files = await Promise.all(
      names.map(async (name) => ({ name, s: await stat(join(this.#dir, name)).catch(() => undefined) })),
    );
    const live = files
      .filter((f) => f.s)
      .map((f) => ({ name: f.name, size: f.s!.size, used: f.s!.mtimeMs }))
      .sort((a, b) => a.used - b.used);
    let total = live.reduce((n, f) => n + f.size, 0);
    const evicted: string[] = [];
    for (const f of live) {
      if (total <= this.#maxBytes) break;
      if (f.name === keep) continue;
      await rm(join(this.#dir, f.name), { force: true });
      total -= f.size;
      evicted.push(f.name);
    }
    return evicted;
  }
}
