/**
 * A canary judged on latency that is noisy the same way on both sides (issue 45), through the CLI
 * against a node. Every version's hook sleeps (Atomics.wait: no CPU spent, so the machine's load
 * moves both sides alike) a seeded draw of 25 ms ± 20%, and each hook thread's first two calls take
 * a cold path of 800 ms — a healthy version's occasional slow call, the same in every version.
 *
 * The healthy canary takes ~50 calls of 500 (10%): one of them at least is a cold 800 ms call (its
 * first routed call on any thread it uses is one), while v1 — warmed with 1100 calls first, its
 * threads started — has no cold call among its latest 1024. The rule before this issue compared
 * p99s of each version's latest calls; under 100 calls a p99 is the slowest call, so it compared
 * 800 ms with v1's ~30–100 ms and rolled the healthy version back, every time. Now both sides are
 * compared at the p50 (the highest percentile ~50 calls estimate) and it is promoted. A version
 * six times slower (150 ms) is still rolled back, at the percentile both sides reach; it then shows
 * `rolled-back` with why in `hearth versions --json` and the API, and `hearth traffic` can give it
 * traffic again.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, expect, it } from 'vitest';

import { cliIn } from '../../helpers/cli.js';
import { testNode } from '../../helpers/node.js';
import { waitFor } from '../../helpers/wait.js';

const dir = await mkdtemp(join(tmpdir(), 'hearth-canary-latency-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

const { hearth, parsed } = cliIn(dir);

/** init's classifier, its pre sleeping `baseMs` ± 20% (seeded), a thread's first two calls 800 ms. */
const noisyHook = (baseMs: number, mark: string) => `// ${mark}
import { defineHook, inputFromJson, tensorToJson } from '@hearth/sdk';

// mulberry32: every thread of every version draws the same sequence.
let seed = 45;
const draw = () => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const cell = new Int32Array(new SharedArrayBuffer(4));
let calls = 0;

export default defineHook({
  pre(request, ctx) {
    Atomics.wait(cell, 0, 0, calls++ < 2 ? 800 : ${baseMs} * (0.8 + 0.4 * draw()));
    if (request.kind !== 'json') throw new Error('send JSON');
    return { x: inputFromJson(ctx, 'x', (request.json as { inputs?: unknown }).inputs, 'inputs') };
  },
  post(outputs) {
    return { outputs: tensorToJson(outputs.y!) };
  },
});
`;

/** `n` calls through the split from four callers at once, each answered; how many each version took. */
async function traffic(url: string, name: string, n: number): Promise<Record<string, number>> {
  const by: Record<string, number> = {};
  let sent = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (sent < n) {
        sent++;
        const r = await fetch(`${url}/fn/${name}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ inputs: [[7, 1, 2, 3]] }),
        });
        await r.arrayBuffer();
        expect(r.status).toBe(200);
        const v = r.headers.get('hearth-version') ?? '?';
        by[v] = (by[v] ?? 0) + 1;
      }
    }),
  );
  return by;
}

interface Described {
  canary?: {
    version: number;
    state: string;
    percentile?: string | null;
    cause?: string;
    observed?: { canary: { sampled?: number }; baseline: { sampled?: number } };
  };
  versions: { version: number; status: string; reason?: string; rolledBackBy?: string }[];
}

/** A canary deploy with `calls` calls sent once its canary watches; the CLI's run. */
async function canaryDeploy(url: string, fn: string, name: string, version: number, calls: number, ...flags: string[]) {
  const cli = hearth(url, 'deploy', fn, ...flags);
  await waitFor(
    `v${version}'s canary to watch`,
    async () => (await (await fetch(`${url}/api/v1/functions/${name}`)).json()) as Described,
    (d) => d.canary?.version === version,
    { timeoutMs: 60_000, intervalMs: 100 },
  );
  const split = await traffic(url, name, calls);
  return { run: await cli, split };
}

it('promotes a healthy version under noisy latency, and rolls a slower one back at a percentile both sides reach', async () => {
  const node = await testNode(join(dir, 'node'));
  const url = node.httpUrl;
  try {
    const fn = join(dir, 'noisy');
    const { name } = await parsed<{ name: string }>(url, 'init', fn);
    await writeFile(join(fn, 'hook.ts'), noisyHook(25, 'v1'));
    expect((await parsed<{ status: string }>(url, 'deploy', fn)).status).toBe('ready');
    // v1 warm: its threads started, their cold calls out of its latest 1024.
    expect(await traffic(url, name, 1100)).toEqual({ 1: 1100 });

    // v2: the same hook. The window is long enough for its calls on a busy machine; sent fewer, it
    // is judged on those.
    await writeFile(join(fn, 'hook.ts'), noisyHook(25, 'v2'));
    const healthy = await canaryDeploy(url, fn, name, 2, 500, '--canary', '10', '--canary-window', '25s');
    expect(healthy.run.code, healthy.run.err).toBe(0);
    expect(healthy.run.err).toMatch(
      /canary passed: v2 promoted to 100% \(errors 0\.0% over \d+ calls against 0\.0% on v1; p50 [\d.]+ ms against [\d.]+ ms\)/,
    );
    const promoted = await parsed<Described>(url, 'describe', name);
    expect(promoted.canary).toMatchObject({ state: 'promoted', percentile: 'p50' });
    // Fewer than 100 calls on the canary's side: a p90 would stand on under 10 of them.
    expect(promoted.canary!.observed!.canary.sampled).toBeGreaterThanOrEqual(20);
    expect(promoted.canary!.observed!.canary.sampled).toBeLessThan(100);

    // v3 sleeps 150 ms: six times v2's 25.
    await writeFile(join(fn, 'hook.ts'), noisyHook(150, 'v3'));
    const slow = await canaryDeploy(url, fn, name, 3, 200, '--canary', '30', '--canary-window', '20s');
    expect(slow.run.code, slow.run.err).toBe(1);
    expect(slow.run.err).toMatch(
      /^error: \S+ v3 was rolled back by its canary: v3's (p50|p90) [\d.]+ ms against [\d.]+ ms on v2 is over 1\.5× \(errors 0\.0% over \d+ calls against 0\.0% on v2\)\. Traffic is back on v2 100%\.$/m,
    );
    // Latency decided it: no error code after the sentence, no errors log to read.
    expect(slow.run.err).not.toMatch(/CONFLICT|hearth logs/);
    const versions = await parsed<{ version: number; status: string; traffic: number; reason?: string }[]>(
      url,
      'versions',
      name,
    );
    expect(versions.map((v) => [v.version, v.status, v.traffic])).toEqual([
      [1, 'ready', 0],
      [2, 'ready', 100],
      [3, 'rolled-back', 0],
    ]);
    expect(versions[2]!.reason).toMatch(/^its canary rolled it back: v3's (p50|p90) [\d.]+ ms against/);
    const api = (await (await fetch(`${url}/api/v1/functions/${name}`)).json()) as Described;
    expect(api.versions[2]).toMatchObject({
      status: 'rolled-back',
      rolledBackBy: 'canary',
      reason: versions[2]!.reason,
    });
    expect(api.canary).toMatchObject({
      state: 'rolled-back',
      cause: 'latency',
      percentile: expect.stringMatching(/^p(50|90)$/),
    });
    expect((await hearth(url, 'describe', name)).out).toMatch(/│ 3 +│ rolled-back +│ 0 +│/);

    // By hand, it takes traffic again, and is ready.
    expect((await hearth(url, 'traffic', name, '2=50', '3=50')).code).toBe(0);
    expect((await parsed<{ version: number; status: string }[]>(url, 'versions', name)).map((v) => v.status)).toEqual([
      'ready',
      'ready',
      'ready',
    ]);
  } finally {
    await node.close();
  }
}, 300_000);
