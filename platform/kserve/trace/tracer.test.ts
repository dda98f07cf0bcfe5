/**
 * Traces as Triton writes them: one JSON array in the trace file (whole after every write), or
 * groups of log_frequency traces in indexed files, the last group when trace_count runs out; and
 * a node's trace files bounded in size.
 */
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
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

async function tracerIn(options: { maxBytes?: number } = {}) {
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
function request(tracer: Tracer): boolean {
  const trace = tracer.start('m');
  if (!trace) return false;
  trace.capture('REQUEST_START', 10n);
  trace.capture('REQUEST_END', 20n);
  trace.identify(3, 'r');
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

  it('drops traces past the bound of its files, and says so once', async () => {
    const { dir, tracer, warnings } = await tracerIn({ maxBytes: 400 });
    set(tracer, { trace_level: 'TIMESTAMPS', trace_rate: '1' });
    for (let i = 0; i < 10; i++) request(tracer);
    await tracer.close();
    const written = (await json(join(dir, 'trace.json'))).filter((r) => 'model_name' in r).length;
    expect(written).toBeGreaterThan(0);
    expect(written).toBeLessThan(10);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/traces past 400 bytes are dropped/);
  });
});
