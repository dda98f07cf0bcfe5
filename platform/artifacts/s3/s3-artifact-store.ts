/**
 * Artifacts in S3 (any S3-compatible server): `<prefix>artifacts/sha256/<hash>`. Uploads stream
 * through a hash into a multipart upload and are deleted if the hash differs; downloads stream into
 * the node's local cache through a hash. Nothing is ever whole in memory.
 */

import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { PassThrough, Readable } from 'node:stream';

import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';

import { InvalidInputError, UnavailableError } from '../../../sdk/errors.js';
import type { ArtifactInfo, ArtifactStore, LocalArtifact } from '../artifact-store.js';
import { allowedS3Key, checkSha } from '../artifact-store.js';
import type { ArtifactCache } from '../cache.js';

export interface S3Options {
  bucket: string;
  prefix: string;
  region: string;
  endpoint?: string;
  /** Multipart part size (bytes); S3's minimum is 5 MiB. */
  partSize?: number;
}

function notFound(error: unknown): boolean {
  const e = error as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e.name === 'NotFound' || e.name === 'NoSuchKey' || e.$metadata?.httpStatusCode === 404;
}

export class S3ArtifactStore implements ArtifactStore {
  readonly kind = 's3';
  readonly client: S3Client;
  readonly #o: S3Options;
  readonly #cache: ArtifactCache;

  constructor(options: S3Options, cache: ArtifactCache, client?: S3Client) {
    this.#o = options;
    this.#cache = cache;
    // Credentials come from the AWS SDK's usual chain (environment, profile, instance role).
    this.client =
      client ??
      new S3Client({
        region: options.region,
        endpoint: options.endpoint,
        forcePathStyle: options.endpoint !== undefined,
      });
  }

  #key(sha256: string): string {
    checkSha(sha256);
    return `${this.#o.prefix}artifacts/sha256/${sha256}`;
  }

  async stat(sha256: string): Promise<ArtifactInfo | undefined> {
    try {
      const head = await this.client.send(new HeadObjectCommand({ Bucket: this.#o.bucket, Key: this.#key(sha256) }));
      return { sha256, size: head.ContentLength ?? 0 };
    } catch (error) {
      if (notFound(error)) return undefined;
      throw new UnavailableError(`S3 is not answering: ${(error as Error).message}`, { cause: error });
    }
  }

  async put(sha256: string, body: Readable | AsyncIterable<Uint8Array>): Promise<ArtifactInfo> {
    const key = this.#key(sha256);
    const hash = createHash('sha256');
    let size = 0;
    const through = new PassThrough();
    const source = body instanceof Readable ? body : Readable.from(body);
    source.on('data', (chunk: Buffer) => {
      hash.update(chunk);
      size += chunk.length;
    });
    source.on('error', (e) => through.destroy(e));
    source.pipe(through);
    const upload = new Upload({
      client: this.client,
      params: { Bucket: this.#o.bucket, Key: key, Body: through, ContentType: 'application/octet-stream' },
      partSize: this.#o.partSize ?? 8 * 2 ** 20,
      queueSize: 2,
    });
    await upload.done();
    const actual = hash.digest('hex');
    if (actual !== sha256) {
      await this.client.send(new DeleteObjectCommand({ Bucket: this.#o.bucket, Key: key })).catch(() => undefined);
      throw new InvalidInputError(`the bytes hash to ${actual}, not ${sha256}: refused`, { reason: 'sha256' });
    }
    return { sha256, size };
  }

  /** `<prefix>artifacts/claims/<sha256>/<tenant>`, an empty object (../claims.ts). */
  async claim(sha256: string, tenant: string): Promise<void> {
    const Key = `${this.#claims(sha256)}${tenant}`;
    await this.#unavailable(this.client.send(new PutObjectCommand({ Bucket: this.#o.bucket, Key, Body: '' })));
  }

  async claimants(sha256: string): Promise<string[]> {
    const Prefix = this.#claims(sha256);
    const listed = await this.#unavailable(
      this.client.send(new ListObjectsV2Command({ Bucket: this.#o.bucket, Prefix, MaxKeys: 1000 })),
    );
    return (listed.Contents ?? []).map((o) => (o.Key ?? '').slice(Prefix.length)).filter(Boolean);
  }

  #claims(sha256: string): string {
    checkSha(sha256);
    return `${this.#o.prefix}artifacts/claims/${sha256}/`;
  }

  async #unavailable<T>(sent: Promise<T>): Promise<T> {
    try {
      return await sent;
    } catch (error) {
      throw new UnavailableError(`S3 is not answering: ${(error as Error).message}`, { cause: error });
    }
  }

  async local(sha256: string): Promise<LocalArtifact> {
    const cached = await this.#cache.get(sha256);
    if (cached) return { sha256, size: cached.size, path: cached.path, source: 'cache' };
    let body: Readable;
    try {
      const object = await this.client.send(new GetObjectCommand({ Bucket: this.#o.bucket, Key: this.#key(sha256) }));
      body = object.Body as Readable;
    } catch (error) {
      if (notFound(error))
        throw new InvalidInputError(
          `artifact ${sha256} is not in s3://${this.#o.bucket}/${this.#o.prefix}: upload it first`,
          { reason: 'sha256' },
        );
      throw new UnavailableError(`S3 is not answering: ${(error as Error).message}`, { cause: error });
    }
    const { path, size } = await this.#cache.put(sha256, body);
    return { sha256, size, path, source: 'remote' };
  }

  async importS3(uri: string): Promise<ArtifactInfo> {
    const key = allowedS3Key(uri, this.#o.bucket, this.#o.prefix);
    let body: Readable;
    try {
      body = (await this.client.send(new GetObjectCommand({ Bucket: this.#o.bucket, Key: key }))).Body as Readable;
    } catch (error) {
      if (notFound(error)) throw new InvalidInputError(`${uri} does not exist`, { reason: 'uri' });
      throw new UnavailableError(`S3 is not answering: ${(error as Error).message}`, { cause: error });
    }
    // Into the cache first, to learn its hash; then into the store under that hash (if new).
    const { sha256, path, size } = await this.#cache.putUnknown(body);
    if (!(await this.stat(sha256))) await this.put(sha256, createReadStream(path));
    return { sha256, size };
  }
}
