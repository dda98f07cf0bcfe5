/**
 * Canaries with automatic rollback, through the CLI against a node while traffic flows: a new
 * version that passes its smoke request but fails on the traffic's inputs takes its share, is rolled
 * back by the node on its own before its window ends, and the CLI says why (exit 1); traffic is back
 * on v1, which answers as python3-torch does. A healthy one is promoted at the end of its window,
 * and `hearth rollback` afterwards returns to the version that served before the canary.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, expect, it } from 'vitest';

import type { CliRun } from '../../helpers/cli.js';
import { cliIn } from '../../helpers/cli.js';
import { testNode } from '../../helpers/node.js';
import { maxAbsDiff } from '../../helpers/random.js';
import { pythonForward } from '../../helpers/reference.js';

const dir = await mkdtemp(join(tmpdir(), 'hearth-canary-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

const { hearth, parsed } = cliIn(dir);

interface Versions {
  version: number;
  status: string;
  traffic: number;
}

/** Calls the function until `cli` ends; what each answer was, by the version that gave it. */
async function trafficDuring(
  url: string,
  name: string,
  row: number[],
  cli: Promise<CliRun>,
): Promise<{ run: CliRun; answers: { status: number; version: string | null; outputs?: number[][] }[] }> {
  let done = false;
  const ended = cli.finally(() => {
    done = true;
  });
  const answers: { status: number; version: string | null; outputs?: number[][] }[] = [];
  // Four callers: a busy machine still sends the canary its calls within its window.
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (!done) {
        const r = await fetch(`${url}/fn/${name}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ inputs: [row] }),
        });
        const body = (await r.json()) as { outputs?: number[][] };
        answers.push({ status: r.status, version: r.headers.get('hearth-version'), outputs: body.outputs });
      }
    }),
  );
  return { run: await ended, answers };
}

it('rolls a failing canary back by itself within its window, and promotes a healthy one', async () => {
  const node = await testNode(join(dir, 'node'));
  const url = node.httpUrl;
  try {
    const fn = join(dir, 'canaried');
    const { name } = await parsed<{ name: string }>(url, 'init', fn);
    expect((await parsed<{ status: string }>(url, 'deploy', fn)).status).toBe('ready');
    const hook = await readFile(join(fn, 'hook.ts'), 'utf8');
    const row = [7, 1, 2, 3];
    const reference = pythonForward(join(fn, 'model.pt'), [
      { dtype: 'FP32', shape: [1, 4], data: Float32Array.from(row) },
    ]).outputs[0]!.data as Float32Array;

    // v2 answers the spec's example ([1, 2, 3, 4]) but throws on a 7: it passes its smoke request
    // and fails the traffic it gets as a canary.
    await writeFile(
      join(fn, 'hook.ts'),
      hook.replace(
        'pre(request, ctx) {',
        "pre(request, ctx) {\n    if (JSON.stringify(request.kind === 'json' ? request.json : null).includes('7')) throw new Error('v2 cannot take a 7');",
      ),
    );
    const failing = await trafficDuring(
      url,
      name,
      row,
      hearth(url, 'deploy', fn, '--canary', '20', '--canary-window', '120s'),
    );
    expect(failing.run.code, failing.run.err).toBe(1);
    expect(failing.run.err).toMatch(/v2 ready: canary at 20% for 120 s against v1/);
    expect(failing.run.err).toMatch(
      /error: \S+ v2 was rolled back by its canary: v2 failed (\d+) of \1 calls \(100\.0%\) against 0\.0% on v1: more than 5 points over\. Traffic is back on v1 100%\. Its failed calls: hearth logs \S+ --errors --version 2$/m,
    );
    // Both versions took traffic while it watched; v1's answers are python3-torch's.
    const v1 = failing.answers.filter((a) => a.version === '1');
    const v2 = failing.answers.filter((a) => a.version === '2');
    expect(v2.length).toBeGreaterThanOrEqual(10);
    expect(v2.every((a) => a.status === 500)).toBe(true);
    expect(v1.every((a) => a.status === 200)).toBe(true);
    expect(maxAbsDiff(Float32Array.from(v1.at(-1)!.outputs!.flat()), reference)).toBeLessThan(1e-6);
    // Decided by its error rate, before the window ended (the node's own clock, in the record).
    const info = await parsed<{ canary: { state: string; startedAt: string; decidedAt: string; windowMs: number } }>(
      url,
      'describe',
      name,
    );
    expect(info.canary.state).toBe('rolled-back');
    expect(Date.parse(info.canary.decidedAt) - Date.parse(info.canary.startedAt)).toBeLessThan(info.canary.windowMs);
    expect((await parsed<Versions[]>(url, 'versions', name)).map((v) => [v.version, v.status, v.traffic])).toEqual([
      [1, 'ready', 100],
      [2, 'rolled-back', 0],
    ]);
    expect((await hearth(url, 'describe', name)).out).toMatch(/^canary: v2 rolled-back after \d+ s: v2 failed \d+ of/m);
    // Why, in the function's log; what failed, under v2 in --errors.
    expect((await hearth(url, 'logs', name)).out).toMatch(
      / v2 lifecycle +warn +canary: rolled back to v1 100%: v2 failed/,
    );
    expect((await hearth(url, 'logs', name, '--errors', '--version', '2')).out).toMatch(/v2 cannot take a 7/);
    // The calls after it all go to v1.
    const after = await fetch(`${url}/fn/${name}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ inputs: [row] }),
    });
    expect([after.status, after.headers.get('hearth-version')]).toEqual([200, '1']);

    // v3 is healthy: promoted when its 10 s window ends (its 10 calls come on a loaded machine too).
    // (The latency limit is loose here: two small percentiles on a shared machine differ by its
    // load, not by the code; the rule is canary.test.ts's, and canary-latency.test.ts's.)
    await writeFile(join(fn, 'hook.ts'), hook.replace('pre(request, ctx) {', 'pre(request, ctx) {\n    // v3'));
    const healthy = await trafficDuring(
      url,
      name,
      row,
      hearth(url, 'deploy', fn, '--canary', '30', '--canary-window', '10s', '--canary-max-p99', '1000'),
    );
    expect(healthy.run.code, healthy.run.err).toBe(0);
    expect(healthy.run.err).toMatch(
      /canary passed: v3 promoted to 100% \(errors 0\.0% over \d+ calls against 0\.0% on v1; (p50|p90|p99) [\d.]+ ms against [\d.]+ ms\)/,
    );
    const v3 = healthy.answers.filter((a) => a.version === '3');
    expect(v3.length).toBeGreaterThanOrEqual(10);
    expect(v3.every((a) => a.status === 200)).toBe(true);
    expect(maxAbsDiff(Float32Array.from(v3.at(-1)!.outputs!.flat()), reference)).toBeLessThan(1e-6);
    expect((await parsed<Versions[]>(url, 'versions', name)).map((v) => [v.version, v.traffic])).toEqual([
      [1, 0],
      [2, 0],
      [3, 100],
    ]);
    // After a promotion, a rollback returns to the version that served before the canary.
    await parsed(url, 'rollback', name);
    expect((await parsed<Versions[]>(url, 'versions', name)).map((v) => [v.version, v.traffic])).toEqual([
      [1, 100],
      [2, 0],
      [3, 0],
    ]);
  } finally {
    await node.close();
  }
}, 240_000);
