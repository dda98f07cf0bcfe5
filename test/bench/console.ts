/**
 * The console's cost (`npm run bench:console`): the bundle's gzipped size; the time from opening
 * /console to a usable overview (the functions' rows drawn) on loopback, in Debian's chromium; and
 * the node process's CPU (its own and its runners', from /proc) over a window with no console open,
 * then over the same window with one console open on the overview and one on a function page
 * (each polling every second, the function page also following the log). Target: under 1% of a core
 * more. And the time from a call to its hook's console.log line in a function page's log pane
 * (target ≤ 2 s; the console test checks that the line comes, this measures how soon). Writes
 * test/bench/results/console.json.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';

import { chromium } from 'playwright-core';

import { REPO_ROOT } from '../helpers/fixtures.js';
import { deployFixture, spawnNode } from '../helpers/node.js';
import { SMALL_SPEC } from '../helpers/specs.js';
import { cpuOver } from './proc-cpu.js';

const KEY = 'bench-console-admin-key';
const WINDOW_S = Number(process.env.WINDOW_S ?? 30);

const dist = join(REPO_ROOT, 'console', 'dist');
execFileSync(process.execPath, ['--import', 'tsx', join(REPO_ROOT, 'console', 'build.ts')], {
  cwd: REPO_ROOT,
  stdio: 'inherit',
});
const bundleGzipKb = readdirSync(dist).reduce((n, f) => n + gzipSync(readFileSync(join(dist, f))).length, 0) / 1024;

const dir = await mkdtemp(join(tmpdir(), 'hearth-bench-console-'));
const node = await spawnNode(join(dir, 'data'), { HEARTH_API_KEYS: `${KEY}:admin` });
const auth = { authorization: `Bearer ${KEY}` };
for (const name of ['alpha', 'beta', 'gamma'])
  await deployFixture(
    node.url,
    { ...SMALL_SPEC, name, hook: 'hook.ts', scaling: { minInstances: 1 } },
    { model: 'small', hook: 'echo' },
    auth,
  );
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
try {
  // Time to a usable overview: a fresh context each time (nothing cached), the key already signed in.
  const usable: number[] = [];
  for (let i = 0; i < 5; i++) {
    const context = await browser.newContext();
    await context.addInitScript(`sessionStorage.setItem('hearth.apiKey', ${JSON.stringify(KEY)})`);
    const page = await context.newPage();
    const started = performance.now();
    await page.goto(`${node.url}/console/`);
    await page.getByRole('link', { name: 'gamma' }).waitFor();
    usable.push(performance.now() - started);
    await context.close();
  }
  usable.sort((a, b) => a - b);

  await new Promise((r) => setTimeout(r, 3000));
  const idleSplit = await cpuOver(node.child.pid!, WINDOW_S);
  const idle = idleSplit.total;
  const context = await browser.newContext();
  await context.addInitScript(`sessionStorage.setItem('hearth.apiKey', ${JSON.stringify(KEY)})`);
  const overview = await context.newPage();
  await overview.goto(`${node.url}/console/`);
  await overview.getByRole('link', { name: 'gamma' }).waitFor();
  const fnPage = await context.newPage();
  await fnPage.goto(`${node.url}/console/#/fn/alpha`);
  await fnPage.getByRole('heading', { name: 'Log' }).waitFor();
  await new Promise((r) => setTimeout(r, 2000));
  const openSplit = await cpuOver(node.child.pid!, WINDOW_S);
  const open = openSplit.total;
  await context.close();

  // A call's hook line in the log pane: five calls, each waited for before the next.
  // (After the CPU windows, so this function's pool is not in them.)
  await deployFixture(
    node.url,
    { ...SMALL_SPEC, name: 'delta', hook: 'hook.ts' },
    { model: 'small', hook: 'chatty' },
    auth,
  );
  const logLine: number[] = [];
  {
    const context = await browser.newContext();
    await context.addInitScript(`sessionStorage.setItem('hearth.apiKey', ${JSON.stringify(KEY)})`);
    const page = await context.newPage();
    await page.goto(`${node.url}/console/#/fn/delta`);
    await page.getByRole('heading', { name: 'Log' }).waitFor();
    for (let i = 0; i < 6; i++) {
      const tag = `bench${i}-${Date.now()}`;
      const sent = performance.now();
      const r = await fetch(`${node.url}/fn/delta`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ x: [[1, 2, 3, 4]], tag }),
      });
      if (r.status !== 200) throw new Error(`delta answered ${r.status}: ${await r.text()}`);
      await page.getByTestId('log').getByText(`pre saw tag ${tag}`).waitFor({ timeout: 30_000 });
      // The first call is the function's cold start: not the log's latency.
      if (i > 0) logLine.push(performance.now() - sent);
    }
    await context.close();
  }
  logLine.sort((a, b) => a - b);

  const result = {
    bundleGzipKb: Number(bundleGzipKb.toFixed(1)),
    usableOverviewMs: {
      median: Number(usable[2]!.toFixed(0)),
      min: Number(usable[0]!.toFixed(0)),
      max: Number(usable[4]!.toFixed(0)),
    },
    logLineMs: {
      median: Number(logLine[2]!.toFixed(0)),
      min: Number(logLine[0]!.toFixed(0)),
      max: Number(logLine[4]!.toFixed(0)),
    },
    nodeCpuPercentOfCore: {
      noConsole: Number(idle.toFixed(2)),
      consoleOpen: Number(open.toFixed(2)),
      added: Number((open - idle).toFixed(2)),
      /** The node's own threads, and its runners'. */
      split: { noConsole: idleSplit, consoleOpen: openSplit },
    },
    windowS: WINDOW_S,
    targets: { bundleGzipKb: 150, usableOverviewMs: 1000, logLineMs: 2000, addedCpuPercent: 1 },
  };
  console.log(
    `console bundle ${result.bundleGzipKb} KB gzipped (target ≤ 150)\n` +
      `usable overview on loopback: median ${result.usableOverviewMs.median} ms (min ${result.usableOverviewMs.min}, max ${result.usableOverviewMs.max}; target ≤ 1000)\n` +
      `a call's hook line in the log pane: median ${result.logLineMs.median} ms (min ${result.logLineMs.min}, max ${result.logLineMs.max}; target ≤ 2000)\n` +
      `node CPU over ${WINDOW_S} s: ${result.nodeCpuPercentOfCore.noConsole}% of a core with no console, ${result.nodeCpuPercentOfCore.consoleOpen}% with an overview and a function page open: ${result.nodeCpuPercentOfCore.added >= 0 ? '+' : ''}${result.nodeCpuPercentOfCore.added}% (target < 1%)\n` +
      `  node's own + runners': ${idleSplit.own} + ${idleSplit.children} with no console, ${openSplit.own} + ${openSplit.children} with one open`,
  );
  await mkdir(join(REPO_ROOT, 'test', 'bench', 'results'), { recursive: true });
  await writeFile(join(REPO_ROOT, 'test', 'bench', 'results', 'console.json'), `${JSON.stringify(result, null, 2)}\n`);
} finally {
  await browser.close();
  node.child.kill('SIGTERM');
  await node.exited;
  await rm(dir, { recursive: true, force: true });
}
