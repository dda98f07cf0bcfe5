/**
 * Memory a stream of distinct requests cannot grow: 100,000 names that do not exist, idempotency
 * keys and job ids leave the record cache, the idempotency cache and the in-memory job records at
 * their caps (the real classes, the embedded registry on files).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it, vi } from 'vitest';

import { loadConfig } from '../../platform/config/index.js';
import { FunctionLogs, RecordCache } from '../../platform/functions/index.js';
import { IdempotencyCache } from '../../platform/http/hot/idempotency.js';
import { DEFAULT_JOB_OPTIONS, FsJobQueue } from '../../platform/jobs/index.js';
import { createRegistry } from '../../platform/registry/index.js';
import { waitFor } from '../helpers/wait.js';

const dir = await mkdtemp(join(tmpdir(), 'hearth-bounds-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

const N = 100_000;

describe('memory bounds under 100,000 distinct requests', () => {
  it('keeps no record of a function that does not exist', async () => {
    const records = new RecordCache(createRegistry(loadConfig({ HEARTH_DATA_DIR: dir })));
    for (let i = 0; i < N; i += 1000)
      await Promise.all(
        Array.from({ length: 1000 }, (_, j) => records.get(`missing-${i + j}`).catch((e: Error) => e.message)),
      );
    await new Promise((r) => setTimeout(r, 10));
    expect(records.size).toBe(0);
  });

  it('caps the idempotency cache by bytes', async () => {
    const cache = new IdempotencyCache(60_000, 1 << 20);
    const body = new Uint8Array(1000);
    for (let i = 0; i < N; i++)
      await cache.run(`key-${i}`, 'h', async () => ({ body, contentType: 'application/octet-stream', version: 1 }))
        .value;
    const { entries, bytes } = cache.held;
    expect(bytes).toBeLessThanOrEqual(1 << 20);
    // Each entry weighs its 1,000-byte response: about a thousand fit, never 100,000.
    expect(entries).toBeGreaterThan(500);
    expect(entries).toBeLessThan(1100);
  });

  it('caps finished job records by bytes, and forgets them after their time to live', async () => {
    const result = new Uint8Array(2000);
    const queue = new FsJobQueue(async () => ({ body: result, contentType: 'application/octet-stream', version: 1 }), {
      ...DEFAULT_JOB_OPTIONS,
      resultTtlS: 1,
      maxRecordBytes: 4 << 20,
    });
    for (let i = 0; i < N; i += 1000) {
      await Promise.all(
        Array.from({ length: 1000 }, () => queue.submit({ function: 'f', body: new Uint8Array(8), contentType: 'x' })),
      );
      await new Promise((r) => setImmediate(r));
    }
    await queue.close();
    expect(queue.held.bytes).toBeLessThanOrEqual(4 << 20);
    expect(queue.held.records).toBeLessThan(2000);
    // Expired by the queue's sweep (1 s after each finished; a loaded machine runs it late).
    await waitFor(
      'the records to expire',
      () => queue.held.records,
      (n) => n === 0,
      { intervalMs: 100 },
    );
    expect(queue.held.records).toBe(0);
  });

  it("forgets job records after their time to live even when a record's own timer fired before the cache's clock said so", async () => {
    // The race a loaded machine loses now and then, made certain: timers (faked) run 1 s ahead of
    // the clock records are stamped with (performance.now, real). lru-cache's ttlAutopurge looks at
    // each record once, when its timer fires; a record not yet stale by then was never looked at
    // again, and stayed (347 of them, once, in a full run).
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'] });
    try {
      const queue = new FsJobQueue(
        async () => ({ body: new Uint8Array(8), contentType: 'application/octet-stream', version: 1 }),
        { ...DEFAULT_JOB_OPTIONS, resultTtlS: 1 },
      );
      for (let i = 0; i < 4; i++) await queue.submit({ function: 'f', body: new Uint8Array(8), contentType: 'x' });
      // Finished (setImmediate is not faked): four records held, each with its result.
      while (queue.held.bytes === 0 || queue.held.records !== 4) await new Promise((r) => setImmediate(r));
      const finished = performance.now();
      await vi.advanceTimersByTimeAsync(1001);
      // Real time passes the time to live; the timers run on.
      while (performance.now() - finished < 1100) await new Promise((r) => setImmediate(r));
      await vi.advanceTimersByTimeAsync(2000);
      expect(queue.held).toEqual({ records: 0, bytes: 0 });
      await queue.close();
    } finally {
      vi.useRealTimers();
    }
  });

  it("caps functions' own logs by bytes, however many names and lines come", () => {
    const logs = new FunctionLogs();
    const line = 'x'.repeat(8192);
    for (let i = 0; i < 20_000; i++)
      logs.add({ function: `fn-${i % 500}`, version: 1, source: 'hook', level: 'info', msg: line });
    expect(logs.bytes).toBeLessThanOrEqual(64 * 2 ** 20);
    expect(logs.bytes).toBeGreaterThan(32 * 2 ** 20);
    // What is kept is readable, and the newest line is there.
    expect(logs.recent('fn-499').at(-1)?.msg).toBe(line);
  });
});
