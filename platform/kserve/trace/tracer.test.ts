/**
 * Traces as Triton writes them: one JSON array in the trace file (whole after every write), or
 * groups of log_frequency traces in indexed files, the last group when trace_count runs out; and
 * a node's trace files bounded in size.
 */
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';

import { TraceFile } from './trace-file.js';
import { TRACE_DEFAULTS } from './trace-settings.js';
import { Tracer } from './tracer.js';

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

async function tracerIn(options: { maxBytes?: number; maxFiles?: number; maxQueuedBytes?: number } = {}) {
  const dir = await mkdtemp(join(tmpdir(), 'hearth-tracer-'));
  dirs.push(dir);
  const warnings: string[] = [];
  const log = { info: () => {}, debug: () => {}, warn: (_: object, msg?: string) => void warnings.push(msg ?? '') };
  const file = new TraceFile(join(dir, 'traces'), { ...options, log });
  return { dir: join(dir, 'traces'), tracer: new Tracer(file, TRACE_DEFAULTS, log), warnings };
}

const set = (tracer: Tracer, settings: Record<string, string>) =>
  tracer.setting('m', new Map(Object.entries(settings).map(([k, v]) => [k, [v]])));

/** A request of model m through the tracer: its trace, if taken, with two timestamps, ended. */
function request(tracer: Tracer, id = 'r', model = 'm'): boolean {
  const trace = tracer.start(model);
  if (!trace) return false;
  trace.capture('REQUEST_START', 10n);
  trace.capture('REQUEST_END', 20n);
  trace.identify(3, id);
  trace.end();
  return true;
}

const json = async (path: string) => JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>[];

describe('the tracer', () => {
  it('appends each trace to trace.json, a whole JSON array after every write', async () => {
    const { dir, tracer } = await tracerIn();
    set(tracer, { trace_level: 'TIMESTAMPS', trace_rate: '1' });
    for (let i = 1; i <= 3; i++) {
      expect(request(tracer)).toBe(true);
      await tracer.flushed();
      const records = await json(join(dir, 'trace.json'));
      expect(records.filter((r) => 'model_name' in r)).toHaveLength(i);
    }
    const records = await json(join(dir, 'trace.json'));
    expect(records.slice(0, 3)).toEqual([
      { id: 1, model_name: 'm', model_version: 3, request_id: 'r' },
      { id: 1, timestamps: [{ name: 'REQUEST_START', ns: 10 }] },
      { id: 1, timestamps: [{ name: 'REQUEST_END', ns: 20 }] },
    ]);
    await tracer.close();
  });

  it('writes log_frequency traces at a time to indexed files, and the rest when trace_count runs out', async () => {
    const { dir, tracer } = await tracerIn();
    set(tracer, { trace_level: 'TIMESTAMPS', trace_rate: '1', trace_count: '3', log_frequency: '2' });
    const taken = Array.from({ length: 5 }, () => request(tracer));
    expect(taken).toEqual([true, true, true, false, false]);
    await tracer.flushed();
    expect((await readdir(dir)).sort()).toEqual(['trace.json.0', 'trace.json.1']);
    const traces = async (name: string) => (await json(join(dir, name))).filter((r) => 'model_name' in r).length;
    expect([await traces('trace.json.0'), await traces('trace.json.1')]).toEqual([2, 1]);
    await tracer.close();
  });

  it('keeps the newest traces within its bound: trace.json moved aside to trace.prev.json, the older one removed', async () => {
    const { dir, tracer, warnings } = await tracerIn({ maxBytes: 2000 });
    set(tracer, { trace_level: 'TIMESTAMPS', trace_rate: '1' });
    for (let i = 1; i <= 100; i++) request(tracer, `r${i}`);
    await tracer.close();
    expect((await readdir(dir)).sort()).toEqual(['trace.json', 'trace.prev.json']);
    expect(await bytesIn(dir)).toBeLessThanOrEqual(2000);
    const ids = [...(await json(join(dir, 'trace.prev.json'))), ...(await json(join(dir, 'trace.json')))]
      .filter((r) => 'model_name' in r)
      .map((r) => Number(String(r.request_id).slice(1)));
    // The newest, without a gap: the last one taken is there, and every one since the oldest kept.
    expect(ids.at(-1)).toBe(100);
    expect(ids).toEqual(Array.from({ length: ids.length }, (_, i) => 101 - ids.length + i));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/reached 2000 bytes: trace.json is moved to trace.prev.json/);
  });

  it('keeps the newest indexed files within its bound, removing the oldest', async () => {
    const { dir, tracer } = await tracerIn({ maxBytes: 2000 });
    set(tracer, { trace_level: 'TIMESTAMPS', trace_rate: '1', log_frequency: '2' });
    for (let i = 1; i <= 60; i++) request(tracer, `r${i}`);
    await tracer.close();
    const names = await readdir(dir);
    expect(names).toContain('trace.json.29');
    expect(names).not.toContain('trace.json.0');
    expect(await bytesIn(dir)).toBeLessThanOrEqual(2000);
    const last = (await json(join(dir, 'trace.json.29'))).filter((r) => 'model_name' in r);
    expect(last.map((r) => r.request_id)).toEqual(['r59', 'r60']);
  });

  it('keeps at most maxFiles indexed files, however small (log_frequency 1 writes one per request)', async () => {
    const { dir, tracer } = await tracerIn({ maxFiles: 5 });
    set(tracer, { trace_level: 'TIMESTAMPS', trace_rate: '1', log_frequency: '1' });
    for (let i = 1; i <= 20; i++) request(tracer, `r${i}`);
    await tracer.close();
    const names = (await readdir(dir)).filter((n) => n.startsWith('trace.json.')).sort();
    expect(names).toEqual(['trace.json.15', 'trace.json.16', 'trace.json.17', 'trace.json.18', 'trace.json.19']);
  });

  it('bounds its files in bytes, not UTF-16 characters', async () => {
    const { dir, tracer } = await tracerIn({ maxBytes: 8000 });
    set(tracer, { trace_level: 'TIMESTAMPS', trace_rate: '1' });
    // 200 characters of 3 bytes each in UTF-8.
    for (let i = 0; i < 40; i++) request(tracer, '€'.repeat(200));
    await tracer.close();
    expect(await bytesIn(dir)).toBeLessThanOrEqual(8000);
  });

  it('drops traces while its writes are behind (a bounded queue), and writes again once they caught up', async () => {
    const { dir, tracer, warnings } = await tracerIn({ maxQueuedBytes: 1000 });
    set(tracer, { trace_level: 'TIMESTAMPS', trace_rate: '1' });
    // Ended in one go: nothing is written before the loop is over.
    for (let i = 1; i <= 100; i++) request(tracer, `r${i}`);
    await tracer.flushed();
    const count = async () => (await json(join(dir, 'trace.json'))).filter((r) => 'model_name' in r).length;
    const queued = await count();
    expect(queued).toBeGreaterThan(0);
    expect(queued).toBeLessThan(100);
    expect(warnings).toEqual(['traces are dropped while their writes are behind']);
    request(tracer, 'later');
    await tracer.close();
    expect(await count()).toBe(queued + 1);
  });

  it("clips a caller's request id and model name", async () => {
    const { dir, tracer } = await tracerIn();
    tracer.setting(
      undefined,
      new Map([
        ['trace_level', ['TIMESTAMPS']],
        ['trace_rate', ['1']],
      ]),
    );
    request(tracer, 'x'.repeat(100_000), 'y'.repeat(100_000));
    await tracer.close();
    const [head] = await json(join(dir, 'trace.json'));
    expect(head).toEqual({
      id: 1,
      model_name: `${'y'.repeat(256)}…`,
      model_version: 3,
      request_id: `${'x'.repeat(256)}…`,
    });
  });

  it("forgets a deleted function's own setting, unless made for the function of that name now", async () => {
    const { dir, tracer } = await tracerIn();
    const update = new Map([
      ['trace_level', ['TIMESTAMPS']],
      ['trace_rate', ['1']],
      ['log_frequency', ['5']],
    ]);
    tracer.setting('m', update, 'created-1');
    expect(request(tracer)).toBe(true);
    tracer.forget('m', 'created-1');
    expect(tracer.settings.of('m')).not.toBe(tracer.settings.of());
    // Deleted (here, or another node's function of that name created anew): the global setting, OFF.
    tracer.forget('m', 'created-2');
    expect(tracer.settings.of('m')).toBe(tracer.settings.of());
    expect(request(tracer)).toBe(false);
    // Its pending trace is written; a read for a function created anew finds no setting of the old one.
    await tracer.flushed();
    expect(await readdir(dir)).toEqual(['trace.json.0']);
    tracer.setting('m', update, 'created-3');
    expect(tracer.setting('m', undefined, 'created-4').find(([k]) => k === 'trace_level')).toEqual([
      'trace_level',
      ['OFF'],
    ]);
    await tracer.close();
  });
});

/** Bytes in the files of `dir`. */
async function bytesIn(dir: string): Promise<number> {
  let total = 0;
  for (const name of await readdir(dir)) total += (await stat(join(dir, name))).size;
  return total;
}
