import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';

import type { Registry } from '../../../platform/registry/index.js';
import { FsRegistry, pickVersion, RedisRegistry } from '../../../platform/registry/index.js';
import { FunctionNotFoundError, InvalidInputError, VersionNotFoundError } from '../../../sdk/errors.js';
import { parseSpec } from '../../../sdk/spec/index.js';
import { dropKeys, uniquePrefix } from '../../helpers/node.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const dir = await mkdtemp(join(tmpdir(), 'hearth-registry-'));
const prefix = uniquePrefix();
const redis = new Redis(REDIS_URL);
afterAll(async () => {
  await dropKeys(prefix, REDIS_URL);
  redis.disconnect();
  await rm(dir, { recursive: true, force: true });
});

const spec = (name: string) =>
  parseSpec({
    name,
    model: 'model.pt',
    inputs: [{ name: 'x', dtype: 'FP32', dims: [4] }],
    outputs: [{ name: 'y', dtype: 'FP32', dims: [3] }],
  });
const artifacts = { model: 'a'.repeat(64) };

describe.each([
  ['files', () => new FsRegistry(dir)],
  ['redis', () => new RedisRegistry(redis.duplicate(), prefix)],
] as [string, () => Registry][])('registry on %s', (_kind, make) => {
  const registry = make();
  afterAll(() => registry.close());

  it('numbers versions 1, 2, 3 and keeps them immutable, traffic untouched until a version is ready', async () => {
    const name = `fn-${randomUUID().slice(0, 8)}`;
    const v1 = await registry.createVersion(spec(name), artifacts);
    const v2 = await registry.createVersion(spec(name), { model: 'b'.repeat(64) });
    expect([v1.version, v2.version]).toEqual([1, 2]);
    expect(v2.status).toBe('pending');
    const record = (await registry.get(name))!;
    expect(record.versions.map((v) => v.artifacts.model[0])).toEqual(['a', 'b']);
    expect(record.traffic).toEqual({});
    expect((await registry.list()).map((r) => r.name)).toContain(name);
  });

  it('gives concurrent deploys distinct version numbers', async () => {
    const name = `fn-${randomUUID().slice(0, 8)}`;
    const versions = await Promise.all(Array.from({ length: 8 }, () => registry.createVersion(spec(name), artifacts)));
    expect(versions.map((v) => v.version).sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
  });

  it('splits traffic between ready versions only, and rolls back by a traffic change', async () => {
    const name = `fn-${randomUUID().slice(0, 8)}`;
    await registry.createVersion(spec(name), artifacts);
    await registry.createVersion(spec(name), artifacts);
    await registry.setStatus(name, 1, 'ready');
    await expect(registry.setTraffic(name, { 2: 100 })).rejects.toThrow(/pending: only ready versions take traffic/);
    await registry.setStatus(name, 2, 'ready');
    let record = await registry.setTraffic(name, { 1: 90, 2: 10 });
    expect(record.traffic).toEqual({ 1: 90, 2: 10 });
    expect(pickVersion(record, 0.5)).toBe(1);
    expect(pickVersion(record, 0.95)).toBe(2);
    record = await registry.setTraffic(name, { 1: 100, 2: 0 });
    expect(record.traffic).toEqual({ 1: 100 });
    await expect(registry.setTraffic(name, { 7: 1 })).rejects.toThrow(VersionNotFoundError);
    await expect(registry.setTraffic(name, { 1: -1 })).rejects.toThrow(InvalidInputError);
    await expect(registry.setTraffic(name, { 1: 0 })).rejects.toThrow(/more than 0/);
  });

  it('records a failed version with its reason', async () => {
    const name = `fn-${randomUUID().slice(0, 8)}`;
    await registry.createVersion(spec(name), artifacts);
    const record = await registry.setStatus(name, 1, 'failed', 'not a loadable TorchScript file');
    expect(record.versions[0]).toMatchObject({ status: 'failed', reason: 'not a loadable TorchScript file' });
  });

  it('deletes a function, and says so for an unknown one', async () => {
    const name = `fn-${randomUUID().slice(0, 8)}`;
    await registry.createVersion(spec(name), artifacts);
    expect(await registry.delete(name)).toBe(true);
    expect(await registry.get(name)).toBeUndefined();
    expect(await registry.delete(name)).toBe(false);
    await expect(registry.setTraffic(name, { 1: 1 })).rejects.toThrow(FunctionNotFoundError);
  });
});

describe('registry on files', () => {
  it('keeps deployments across a restart (a new instance over the same data dir)', async () => {
    const name = `fn-${randomUUID().slice(0, 8)}`;
    const before = new FsRegistry(dir);
    await before.createVersion(spec(name), artifacts);
    await before.setStatus(name, 1, 'ready');
    await before.setTraffic(name, { 1: 100 });
    await before.close();
    const after = new FsRegistry(dir);
    expect((await after.get(name))?.traffic).toEqual({ 1: 100 });
  });
});
