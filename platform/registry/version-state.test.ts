/**
 * A version's state as typed fields: what a status change, a traffic change and a canary's decision
 * write, and a record of the release before them (its state only in the reason's text) read back
 * by both backends as if written today, its reason untouched.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import type { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';

import type { Canary } from '../../sdk/api/index.js';
import { parseSpec } from '../../sdk/spec/index.js';
import { FsRegistry } from './fs/fs-registry.js';
import { RedisRegistry } from './redis/redis-registry.js';
import type { FunctionRecord, FunctionVersion } from './registry.js';
import { applyCanary, applyStatus, applyTraffic, shownVersion } from './registry.js';
import { readRecord, upgradeRecord } from './stored-record.js';

const spec = parseSpec({
  name: 'gpu-wait',
  model: 'model.pt',
  inputs: [{ name: 'x', dtype: 'FP32', dims: [4] }],
  outputs: [{ name: 'y', dtype: 'FP32', dims: [3] }],
});
const version = (n: number, o: Partial<FunctionVersion> = {}): FunctionVersion => ({
  version: n,
  spec,
  artifacts: { model: 'a'.repeat(64) },
  createdAt: '2026-12-01T00:00:00.000Z',
  status: 'ready',
  ...o,
});
const WAITING = 'waiting for a node with a GPU (instances.device cuda; this node has none)';
/** A record as the release before the typed fields wrote it: v2 waits for a GPU, keeping the split. */
const legacy: FunctionRecord = {
  name: 'gpu-wait',
  createdAt: '2026-12-01T00:00:00.000Z',
  versions: [version(1), version(2, { status: 'pending', reason: `${WAITING}; traffic stays where it is` })],
  traffic: { 1: 100 },
};

describe('a version state written as typed fields', () => {
  it('records the state a status change gives and clears it at the next change', () => {
    const waiting = applyStatus(legacy, 2, 'pending', WAITING, { waitsFor: 'gpu', keepTraffic: true });
    expect(waiting.versions[1]).toMatchObject({
      status: 'pending',
      reason: WAITING,
      waitsFor: 'gpu',
      keepTraffic: true,
    });
    const ready = applyStatus(waiting, 2, 'ready');
    expect(ready.versions[1]!.status).toBe('ready');
    expect(ready.versions[1]).not.toHaveProperty('waitsFor');
    expect(ready.versions[1]).not.toHaveProperty('keepTraffic');
    expect(ready.versions[1]!.reason).toBeUndefined();
  });

  it('marks the version a canary rolled back, and why, and unmarks it once it takes traffic again', () => {
    const canary = {
      version: 2,
      state: 'rolled-back',
      reason: "v2's p90 9 ms against 3 ms on v1 is over 1.5×",
    } as Canary;
    const record = { ...legacy, versions: [version(1), version(2)] };
    const rolledBack = applyCanary(record, canary);
    expect(rolledBack.canary).toBe(canary);
    expect(rolledBack.versions.map((v) => v.rolledBackBy)).toEqual([undefined, 'canary']);
    const why = "its canary rolled it back: v2's p90 9 ms against 3 ms on v1 is over 1.5×";
    expect(rolledBack.versions[1]).toMatchObject({ status: 'ready', reason: why });
    // The API shows it rolled back; the registry keeps it ready, so a split may give it traffic again.
    expect(rolledBack.versions.map((v) => shownVersion(v).status)).toEqual(['ready', 'rolled-back']);
    expect(applyCanary(record, { ...canary, state: 'promoted' }).versions[1]).not.toHaveProperty('rolledBackBy');
    expect(applyTraffic(rolledBack, { 1: 100 }).versions[1]!.rolledBackBy).toBe('canary');
    const again = applyTraffic(rolledBack, { 1: 50, 2: 50 }).versions[1]!;
    expect(again).not.toHaveProperty('rolledBackBy');
    expect(again).not.toHaveProperty('reason');
    expect(shownVersion(again).status).toBe('ready');
  });
});

describe('a record of the release before the typed fields', () => {
  it('reads with the state its reason said, and the reason as it was', () => {
    const read = upgradeRecord(legacy);
    expect(read.versions[1]).toMatchObject({
      status: 'pending',
      reason: `${WAITING}; traffic stays where it is`,
      waitsFor: 'gpu',
      keepTraffic: true,
    });
    const moving = readRecord(
      JSON.stringify({ ...legacy, versions: [version(1, { status: 'pending', reason: WAITING })] }),
    );
    expect(moving.versions[0]!.waitsFor).toBe('gpu');
    expect(moving.versions[0]).not.toHaveProperty('keepTraffic');
  });

  it('leaves alone the versions whose reason says nothing of a GPU, or that are no longer pending', () => {
    const record = {
      ...legacy,
      versions: [version(1, { status: 'failed', reason: WAITING }), version(2, { status: 'pending' })],
    };
    expect(upgradeRecord(record)).toBe(record);
  });

  describe.each([
    ['files', () => filesWith(legacy)],
    ['redis', () => redisWith(legacy)],
  ])('on %s', (_kind, make) => {
    it('is read as waiting for a GPU, and written back with the typed state', async () => {
      const registry = await make();
      expect((await registry.get('gpu-wait'))!.versions[1]).toMatchObject({ waitsFor: 'gpu', keepTraffic: true });
      expect((await registry.list())[0]!.versions[1]!.waitsFor).toBe('gpu');
      // Any write starts from the upgraded record: the other version's change keeps v2's state.
      const after = await registry.setStatus('gpu-wait', 1, 'ready');
      expect(after.versions[1]).toMatchObject({ reason: `${WAITING}; traffic stays where it is`, waitsFor: 'gpu' });
      await registry.close();
    });
  });
});

const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

async function filesWith(record: FunctionRecord): Promise<FsRegistry> {
  const dir = await mkdtemp(join(tmpdir(), 'hearth-version-state-'));
  dirs.push(dir);
  await mkdir(join(dir, 'registry'));
  await writeFile(join(dir, 'registry', `${record.name}.json`), JSON.stringify(record));
  return new FsRegistry(dir);
}

/** The few Redis commands the registry sends, over a map (no server). */
async function redisWith(record: FunctionRecord): Promise<RedisRegistry> {
  const values = new Map([[`p:fn:${record.name}`, JSON.stringify(record)]]);
  const names = new Set([record.name]);
  const fake = {
    get: async (key: string) => values.get(key) ?? null,
    mget: async (keys: string[]) => keys.map((k) => values.get(k) ?? null),
    smembers: async () => [...names],
    watch: async () => 'OK',
    unwatch: async () => 'OK',
    multi: () => {
      const chain = {
        set: (key: string, value: string) => {
          values.set(key, value);
          return chain;
        },
        sadd: (_key: string, name: string) => {
          names.add(name);
          return chain;
        },
        exec: async () => [],
      };
      return chain;
    },
    disconnect: () => undefined,
  };
  return new RedisRegistry(fake as unknown as Redis, 'p:');
}
