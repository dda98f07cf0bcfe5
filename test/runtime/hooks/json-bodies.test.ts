/**
 * A JSON body parsed by the host (simdjson, its arrays of numbers packed into one Float64Array)
 * and rebuilt in the hook's isolate must be, to the hook, exactly what JSON.parse makes of it:
 * checked against JSON.parse on bodies of every shape the packing treats differently.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { parseJsonPacked } from '../../../runtime/engine/index.js';
import { bundleHook } from '../../../runtime/hooks/index.js';
import { HookSandbox } from '../../../runtime/hooks/sandbox.js';
import { REPO_ROOT } from '../../helpers/fixtures.js';

const enc = new TextEncoder();
let dir: string;
let sandbox: HookSandbox;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'hearth-json-'));
  const { path } = await bundleHook(join(REPO_ROOT, 'test', 'fixtures', 'hooks', 'json-echo.ts'), dir);
  sandbox = await HookSandbox.create({
    bundlePath: path,
    memoryMb: 128,
    maxResponseBytes: 2 ** 20,
    webAssembly: false,
    timeoutMs: 5000,
    log: () => {},
  });
  expect((await sandbox.setup({})).ok).toBe(true);
});
afterAll(async () => {
  sandbox.dispose();
  await rm(dir, { recursive: true, force: true });
});

const row = <T>(n: number, f: (i: number) => T): T[] => Array.from({ length: n }, (_, i) => f(i));
/** What the hook saw, as it printed it. */
const seen = (texts: string[]) =>
  sandbox
    .preMany(texts.map((t) => ({ body: enc.encode(t), contentType: 'application/json' })))
    .then((rs) =>
      rs.map((r) => (r.ok ? new TextDecoder().decode(r.tensors.text!.data as Uint8Array) : `failed: ${r.message}`)),
    );
/** What JSON.parse makes of it, through the same hook code. */
const reference = (text: string) => {
  const value = JSON.parse(text);
  if (Array.isArray(value) && Array.isArray(value[0])) value[0].push(1);
  let arrays = 0;
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) {
      arrays++;
      v.forEach(walk);
    } else if (v !== null && typeof v === 'object') Object.values(v).forEach(walk);
  };
  walk(value);
  return JSON.stringify({ value, arrays });
};

describe("a hook's JSON body, parsed by the host", () => {
  const bodies = {
    'a flat vector': { inputs: row(1024, (i) => Math.sin(i) * 0.5) },
    'a nested image, as rows': { inputs: [row(3, (c) => row(16, (y) => row(16, (x) => c + y / 16 + x / 256)))] },
    'a bare array of rows (the root packed)': row(40, (i) => row(8, (k) => i * 8 + k)),
    'ragged rows and mixed lists': {
      ragged: [row(300, (i) => i), row(200, (i) => -i)],
      mixed: [...row(40, (i) => i), 'x', null, true, [1, 2]],
      deeper: [[row(20, Number)], [[row(20, Number)]]],
      small: [1, 2, 3],
    },
    'objects, strings and numbers beside the arrays': {
      id: 'req-1',
      parameters: { temperature: 0.7, top_k: 40, stop: ['\n', '\u00e9\u2603'] },
      tokens: row(300, (i) => (i * 7919) % 50257),
      big: [2 ** 53 + 2, 1e300, -1.5e-300, 12345678901234567000, 5e-324],
    },
    'keys that look like indexes or JS names': { '0': row(300, Number), constructor: row(300, Number), toString: 'x' },
  };

  it('is what JSON.parse makes of it, plain Arrays included', async () => {
    const texts = Object.values(bodies).map((b) => JSON.stringify(b));
    for (const t of texts) {
      expect(t.length).toBeGreaterThan(1024);
      expect(parseJsonPacked(enc.encode(t)), 'the host parses it natively').toBeDefined();
    }
    expect(await seen(texts)).toEqual(texts.map(reference));
  });

  it('leaves to JSON.parse what it could read differently, and says the same of a body that is not JSON', async () => {
    const pad = ` ${' '.repeat(1100)}`;
    const texts = [
      `{"__proto__": {"polluted": true}, "x": ${JSON.stringify(row(64, Number))}}${pad}`,
      `[-0, ${row(64, Number).join(',')}]${pad}`,
      `{"huge": 123456789012345678901234567890, "x": ${JSON.stringify(row(64, Number))}}${pad}`,
      // A key given twice: JSON.parse keeps the last value, not the array packed for the first.
      `{"x": ${JSON.stringify(row(64, Number))}, "x": 5}${pad}`,
    ];
    for (const t of texts) {
      expect(t.length).toBeGreaterThan(1024);
      expect(parseJsonPacked(enc.encode(t))).toBeUndefined();
    }
    expect(await seen(texts)).toEqual(texts.map(reference));
    // Bodies that would make many values, many packs or much walking outside the isolate's caps.
    const wrap = (depth: number, inner: string): string => '['.repeat(depth) + inner + ']'.repeat(depth);
    const costly = [
      '{"a":'.repeat(40) + JSON.stringify([row(5000, (i) => row(16, (k) => i + k)), 'x']) + '}'.repeat(40),
      JSON.stringify(row(2000, (i) => ({ x: row(16, (k) => i * k) }))),
      wrap(1000, '"x"'),
    ];
    for (const t of costly) expect(parseJsonPacked(enc.encode(t))).toBeUndefined();
    expect(await seen(costly.slice(0, 2))).toEqual(costly.slice(0, 2).map(reference));
    const broken = `{"inputs": [${row(400, Number).join(',')}`;
    const [answer] = await seen([broken]);
    let message = '';
    try {
      JSON.parse(broken);
    } catch (e) {
      message = (e as Error).message;
    }
    expect(answer).toBe(`failed: the body is not valid JSON: ${message}`);
  });
});
