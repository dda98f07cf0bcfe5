import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';

import { HeadObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ArtifactCache, allowedS3Key, FsArtifactStore, S3ArtifactStore } from '../../../platform/artifacts/index.js';
import { InvalidInputError } from '../../../sdk/errors.js';
import type { TestS3 } from '../../helpers/s3.js';
import { startS3 } from '../../helpers/s3.js';

const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');
/** Streams in small chunks, as an HTTP upload would arrive. */
const stream = (b: Uint8Array) =>
  Readable.from(
    (function* () {
      for (let i = 0; i < b.length; i += 65536) yield b.subarray(i, i + 65536);
    })(),
  );

let dir: string;
let s3: TestS3;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'hearth-artifacts-'));
  s3 = await startS3();
});
afterAll(async () => {
  await s3.close();
  await rm(dir, { recursive: true, force: true });
});

describe('filesystem artifact store', () => {
  it('stores by hash, streams, and refuses bytes whose hash differs (leaving nothing)', async () => {
    const store = new FsArtifactStore(join(dir, 'fs'));
    const bytes = randomBytes(300_000);
    expect(await store.stat(sha(bytes))).toBeUndefined();
    expect(await store.put(sha(bytes), stream(bytes))).toEqual({ sha256: sha(bytes), size: 300_000 });
    expect(await store.stat(sha(bytes))).toEqual({ sha256: sha(bytes), size: 300_000 });
    const local = await store.local(sha(bytes));
    expect(local.source).toBe('store');
    expect(Buffer.compare(await readFile(local.path), bytes)).toBe(0);

    const other = randomBytes(1000);
    await expect(store.put(sha(bytes).replace(/^./, '0'), stream(other))).rejects.toThrow(/hash to .*refused/);
    await expect(store.put('not-a-hash', stream(other))).rejects.toThrow(InvalidInputError);
  });

  it('refuses a stored file that was changed on disk', async () => {
    const store = new FsArtifactStore(join(dir, 'fs2'));
    const bytes = randomBytes(1000);
    const { path } = await store.local(sha(bytes)).catch(async () => {
      await store.put(sha(bytes), stream(bytes));
      return store.local(sha(bytes));
    });
    await writeFile(path, randomBytes(1000));
    await expect(store.local(sha(bytes))).rejects.toThrow(/hashes to .*refused/);
  });
});

describe('S3 artifact store (s3rver on loopback)', () => {
  const make = (name: string, budget = 1 << 30, refused: string[] = []) =>
    new S3ArtifactStore(
      { bucket: s3.bucket, prefix: `${name}/`, region: 'us-east-1', endpoint: s3.endpoint, partSize: 5 * 2 ** 20 },
      new ArtifactCache(join(dir, name, 'cache'), budget, (h) => refused.push(h)),
      s3.client,
    );

  it('uploads a large artifact in parts, fetches it into the cache, then serves it from the cache', async () => {
    const commands: string[] = [];
    s3.client.middlewareStack.add(
      (next, context) => (args) => {
        commands.push(context.commandName as string);
        return next(args);
      },
      { step: 'initialize', name: 'countCommands' },
    );
    const store = make('big');
    const bytes = randomBytes(12 * 2 ** 20);
    const h = sha(bytes);
    expect(await store.stat(h)).toBeUndefined();
    await store.put(h, stream(bytes));
    const head = await s3.client.send(new HeadObjectCommand({ Bucket: s3.bucket, Key: `big/artifacts/sha256/${h}` }));
    expect(head.ContentLength).toBe(bytes.length);
    s3.client.middlewareStack.remove('countCommands');
    expect(commands.filter((c) => c === 'UploadPartCommand')).toHaveLength(3); // three 5 MiB parts
    expect(commands).toContain('CompleteMultipartUploadCommand');
    const first = await store.local(h);
    expect(first.source).toBe('remote');
    expect(Buffer.compare(await readFile(first.path), bytes)).toBe(0);
    expect((await store.local(h)).source).toBe('cache');
  });

  it('deletes an upload whose bytes do not match their hash', async () => {
    const store = make('bad');
    const bytes = randomBytes(1000);
    const wrong = sha(randomBytes(10));
    await expect(store.put(wrong, stream(bytes))).rejects.toThrow(/refused/);
    expect(await store.stat(wrong)).toBeUndefined();
  });

  it('refuses and refetches a cached file that was tampered with, reporting it', async () => {
    const refused: string[] = [];
    const store = make('tamper', 1 << 30, refused);
    const bytes = randomBytes(5000);
    await store.put(sha(bytes), stream(bytes));
    const { path } = await store.local(sha(bytes));
    await writeFile(path, randomBytes(5000));
    const again = await store.local(sha(bytes));
    expect(refused).toEqual([sha(bytes)]);
    expect(again.source).toBe('remote');
    expect(Buffer.compare(await readFile(again.path), bytes)).toBe(0);
  });

  it('evicts least recently used cache files past the size budget', async () => {
    const store = make('lru', 25_000);
    const blobs = [randomBytes(10_000), randomBytes(10_000), randomBytes(10_000)];
    for (const b of blobs) await store.put(sha(b), stream(b));
    await store.local(sha(blobs[0]!));
    await new Promise((r) => setTimeout(r, 20));
    await store.local(sha(blobs[1]!));
    await new Promise((r) => setTimeout(r, 20));
    await store.local(sha(blobs[0]!)); // 0 used again: 1 is now the least recent
    await new Promise((r) => setTimeout(r, 20));
    await store.local(sha(blobs[2]!)); // over budget: 1 goes
    expect((await store.local(sha(blobs[0]!))).source).toBe('cache');
    expect((await store.local(sha(blobs[1]!))).source).toBe('remote');
  });

  it('imports an object of its own bucket and prefix, and refuses any other URI before any I/O', async () => {
    const store = make('imp');
    const bytes = randomBytes(4000);
    await s3.client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: 'imp/uploads/model.pt', Body: bytes }));
    expect(await store.importS3(`s3://${s3.bucket}/imp/uploads/model.pt`)).toEqual({ sha256: sha(bytes), size: 4000 });
    expect(await store.stat(sha(bytes))).toEqual({ sha256: sha(bytes), size: 4000 });
    await expect(store.importS3(`s3://${s3.bucket}/imp/missing.pt`)).rejects.toThrow(/does not exist/);
  });

  it.each([
    ['https://example.com/model.pt', /not an s3:\/\/bucket\/key URI/],
    ['s3://other-bucket/imp/model.pt', /outside the configured bucket/],
    ['s3://B/other/model.pt', /outside the configured prefix/],
    ['s3://B/imp/../secrets/model.pt', /relative path segment/],
    ['s3://B/imp/%2e%2e/model.pt', /relative path segment/],
    ['file:///etc/passwd', /not an s3:\/\/bucket\/key URI/],
  ])('refuses %s', (uri, message) => {
    expect(() => allowedS3Key(uri, 'B', 'imp/')).toThrow(message);
  });
});
