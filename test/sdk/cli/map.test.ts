/**
 * `hearth map` and `client.map()` on a real node: 200 inputs as async jobs, 3 of them made to fail
 * in the hook; 197 results in input order, each python3-torch's answer for its input, and the 3
 * failures listed with their errors (exit 1). The same map again with the same keys finds the same
 * jobs (resumable), and the CLI's progress goes to stderr only.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { HearthNode } from '../../../platform/node/index.js';
import { Hearth } from '../../../sdk/client.js';
import { HEARTH_CLI, modelPath } from '../../helpers/fixtures.js';
import { deployFixture, testNode } from '../../helpers/node.js';
import { maxAbsDiff, rng } from '../../helpers/random.js';
import { pythonForward } from '../../helpers/reference.js';
import { SMALL_SPEC } from '../../helpers/specs.js';

const run = promisify(execFile);
const dir = await mkdtemp(join(tmpdir(), 'hearth-map-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

const FAILING = new Set([17, 101, 188]);
const random = rng(20261202);
const rows = Array.from({ length: 200 }, () =>
  Array.from({ length: 4 }, () => Math.round((random() * 4 - 2) * 1000) / 1000),
);
const inputs = rows.map((row, i) => ({ x: [row], ...(FAILING.has(i) ? { fail: true } : {}) }));
/** python3-torch's answer for every row, in one batch. */
const reference = pythonForward(modelPath('small'), [
  { dtype: 'FP32', shape: [rows.length, 4], data: Float32Array.from(rows.flat()) },
]).outputs[0]!.data as Float32Array;

describe('map over many inputs', () => {
  let node: HearthNode;
  beforeAll(async () => {
    node = await testNode(join(dir, 'node'));
    const spec = { ...SMALL_SPEC, hook: 'hook.ts' };
    expect((await deployFixture(node.httpUrl, spec, { model: 'small', hook: 'fail-some' })).status).toBe(201);
  });
  afterAll(() => node.close());

  it('hearth map: 197 results in input order, the 3 failures listed, exit 1', async () => {
    const file = join(dir, 'inputs.jsonl');
    // A blank line after input 99: failures are named by their line in the file (input 17 is line
    // 18, input 101 line 103), not by a 0-based index a reader has to add one to.
    const text = inputs.map((i) => JSON.stringify(i));
    await writeFile(file, `${[...text.slice(0, 100), '', ...text.slice(100)].join('\n')}\n`);
    const out = join(dir, 'results.jsonl');
    const r = await run(HEARTH_CLI, ['--url', node.httpUrl, 'map', 'small', file, '--out', out, '-c', '8']).then(
      (x) => ({ code: 0, ...x }),
      (e: { code: number; stdout: string; stderr: string }) => e,
    );
    expect(r.code, r.stderr).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('small: 197 of 200 succeeded');
    for (const i of FAILING)
      expect(r.stderr).toMatch(
        new RegExp(
          `inputs\\.jsonl:${i < 100 ? i + 1 : i + 2} \\(index ${i}\\): .*post refused this one.*\\(HOOK_FAILED\\)`,
        ),
      );
    const lines = (await readFile(out, 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { index: number; output?: { y: number[][] }; error?: { code: string } });
    expect(lines.map((l) => l.index)).toEqual(rows.map((_, i) => i));
    expect(lines.filter((l) => l.error).map((l) => [l.index, l.error!.code])).toEqual(
      [...FAILING].map((i) => [i, 'HOOK_FAILED']),
    );
    const got = lines.filter((l) => l.output).map((l) => l.output!.y[0]!);
    const want = rows.map((_, i) => Array.from(reference.subarray(i * 3, i * 3 + 3))).filter((_, i) => !FAILING.has(i));
    expect(got).toHaveLength(197);
    expect(maxAbsDiff(Float32Array.from(got.flat()), Float32Array.from(want.flat()))).toBeLessThan(1e-5);
  }, 120_000);

  it('client.map: the same keys find the same jobs (a rerun resumes, redoing nothing)', async () => {
    const client = new Hearth({ url: node.httpUrl });
    const some = inputs.slice(95, 110);
    let settled = 0;
    const first = await client.map('small', some, {
      concurrency: 4,
      keyPrefix: 'resume-test',
      onSettled: () => settled++,
    });
    expect(settled).toBe(some.length);
    expect(first.filter((o) => !o.ok).map((o) => o.index)).toEqual([101 - 95]);
    const again = await client.map('small', some, { concurrency: 4, keyPrefix: 'resume-test' });
    expect(again.map((o) => o.job)).toEqual(first.map((o) => o.job));
    expect(again).toEqual(first);
  }, 60_000);
});
