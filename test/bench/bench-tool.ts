/**
 * bench:tool — `hearth bench` judged as a measuring tool: the same route loaded by it and by wrk
 * (C, epoll, the reference HTTP load generator; Debian's wrk 4.1.0, one thread like hearth bench),
 * closed loop at concurrency 1 and 64, the same body (a zero-cost model's JSON: zero_vec, 1024
 * floats in and out) and the same answer:
 *
 * - a bare node:http server (./bare-server.ts) that answers the bytes Hearth answered, fixed in
 *   advance: what the client costs shows most here, the server doing next to nothing;
 * - a Hearth function URL, /fn/zero-vec (the model without a hook, in its runner).
 *
 * Each cell runs both tools twice (wrk first, then hearth bench first) and prints the means:
 * hearth bench req/s ÷ wrk req/s (target: within 10%, 0.9–1.1) and their p50s
 * side by side, and both clients' CPU per request (hearth bench's from its report, wrk's from
 * /usr/bin/time). hearth bench runs as users run it: the bundled CLI, `--path` with the body as
 * --input-file, each step after a 1 s warm-up; wrk gets a 1 s run first too.
 *
 * Writes test/bench/results/bench-tool.json. Flags: --quick (2 s cells), --seconds S (5),
 * --out FILE. HEARTH_BENCH_PROF=DIR: hearth bench runs under `node --cpu-prof` into DIR.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';

import type { BenchReport } from '../../sdk/index.js';
import { bundleCli } from '../../sdk/packages/build.js';
import { ensureModels, REPO_ROOT } from '../helpers/fixtures.js';
import { deployFixture, spawnNode } from '../helpers/node.js';
import { afterSpareBoots } from './deploy.js';
import { benchFlags, round } from './flags.js';
import { stop } from './load.js';

const run = promisify(execFile);
const flags = benchFlags('bench-tool');
const CONCURRENCY = [1, 64];
const ROUTE = '/fn/zero-vec';
const ROUNDS = flags.quick ? 1 : 2;

interface Measured {
  perS: number;
  p50Ms: number;
  p99Ms: number;
  cpuUsPerReq: number;
}

const mean = (ms: Measured[]): Measured => {
  const avg = (k: keyof Measured) => ms.reduce((n, m) => n + m[k], 0) / ms.length;
  return { perS: avg('perS'), p50Ms: avg('p50Ms'), p99Ms: avg('p99Ms'), cpuUsPerReq: avg('cpuUsPerReq') };
};

/** wrk's "50%   1.23ms" as ms. */
function wrkMs(text: string, label: string): number {
  const m = new RegExp(`^\\s*${label}\\s+([\\d.]+)(us|ms|s)\\s*$`, 'm').exec(text);
  if (!m) throw new Error(`wrk printed no ${label} latency:\n${text}`);
  return Number(m[1]) * { us: 0.001, ms: 1, s: 1000 }[m[2] as 'us' | 'ms' | 's'];
}

async function wrk(url: string, script: string, c: number, seconds: number, dir: string): Promise<Measured> {
  const args = ['-t1', `-c${c}`, '--latency', '-s', script, url];
  await run('wrk', ['-d1s', ...args]);
  const times = join(dir, 'wrk-time.txt');
  const { stdout } = await run('/usr/bin/time', ['-f', '%U %S', '-o', times, 'wrk', `-d${seconds}s`, ...args]);
  const total = Number(/(\d+) requests in/.exec(stdout)?.[1]);
  const [user, sys] = (await readFile(times, 'utf8')).trim().split(/\s+/).map(Number);
  return {
    perS: Number(/Requests\/sec:\s+([\d.]+)/.exec(stdout)?.[1]),
    p50Ms: wrkMs(stdout, '50%'),
    p99Ms: wrkMs(stdout, '99%'),
    cpuUsPerReq: ((user! + sys!) * 1e6) / total,
  };
}

async function hearthBench(cli: string, base: string, bodyFile: string, c: number, seconds: number): Promise<Measured> {
  const prof = process.env.HEARTH_BENCH_PROF;
  const { stdout } = await run(
    process.execPath,
    [
      ...(prof ? ['--cpu-prof', `--cpu-prof-dir=${prof}`] : []),
      cli,
      '--url',
      base,
      '--json',
      'bench',
      'zero-vec',
      '--path',
      ROUTE,
      '--input-file',
      bodyFile,
      '--concurrency',
      String(c),
      '--duration',
      `${seconds}s`,
      '--warmup',
      '1s',
    ],
    { maxBuffer: 2 ** 24 },
  );
  const [step] = (JSON.parse(stdout) as BenchReport).steps;
  if (!step || step.ok !== step.requests) throw new Error(`hearth bench saw errors: ${JSON.stringify(step?.errors)}`);
  return { perS: step.reqPerS, p50Ms: step.latencyMs.p50!, p99Ms: step.latencyMs.p99!, cpuUsPerReq: step.clientCpuUs };
}

async function startBare(): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(REPO_ROOT, 'test', 'bench', 'bare-server.ts')], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const line = await new Promise<string>((resolve) => createInterface({ input: child.stdout! }).once('line', resolve));
  return { child, url: `http://127.0.0.1:${(JSON.parse(line) as { http: number }).http}` };
}

/** The node with zero_vec deployed without a hook, and the body and answer of its function URL. */
async function startHearth(dir: string, body: string) {
  const node = await spawnNode(join(dir, 'data'));
  const spec = {
    name: 'zero-vec',
    model: 'model.pt',
    maxBatchSize: 64,
    instances: { device: 'cpu' },
    inputs: [{ name: 'x', dtype: 'FP32', dims: [1024] }],
    outputs: [{ name: 'y', dtype: 'FP32', dims: [1024] }],
  };
  const r = await deployFixture(node.url, spec, { model: 'zero_vec' });
  if (r.status !== 201) throw new Error(`deploy failed: ${await r.text()}`);
  const answer = await fetch(`${node.url}${ROUTE}`, {
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json' },
  });
  if (!answer.ok) throw new Error(`zero-vec answered ${answer.status}: ${await answer.text()}`);
  return { node, answer: Buffer.from(await answer.arrayBuffer()), type: answer.headers.get('content-type')! };
}

async function main(): Promise<void> {
  ensureModels();
  const seconds = flags.seconds;
  const dir = await mkdtemp(join(tmpdir(), 'hearth-bench-tool-'));
  const cli = await bundleCli(join(REPO_ROOT, 'node_modules', '.cache', 'hearth-bench-tool'));
  const body = JSON.stringify({ inputs: { x: [Array.from({ length: 1024 }, (_, i) => round(Math.sin(i), 4))] } });
  const bodyFile = join(dir, 'body.json');
  await writeFile(bodyFile, body);
  const script = join(dir, 'post.lua');
  await writeFile(
    script,
    `local f = io.open("${bodyFile}", "rb")\nwrk.body = f:read("*a")\nf:close()\nwrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\n`,
  );
  const load = { before: loadavg()[0]! };
  const hearth = await startHearth(dir, body);
  const bare = await startBare();
  // The bare server answers the same route with the very bytes Hearth answered.
  await fetch(`${bare.url}/__response?for=${ROUTE}`, {
    method: 'PUT',
    body: hearth.answer,
    headers: { 'content-type': hearth.type, 'x-for-content-type': 'application/json' },
  });
  await afterSpareBoots();
  const rows = [];
  try {
    for (const [server, base] of [
      ['bare', bare.url],
      ['hearth-fn', hearth.node.url],
    ] as const)
      for (const c of CONCURRENCY) {
        // Two rounds, each tool first once (the machine drifts); each figure the rounds' mean.
        const ws: Measured[] = [];
        const hs: Measured[] = [];
        for (let round = 0; round < ROUNDS; round++)
          for (const tool of round % 2 === 0 ? ['wrk', 'hearth'] : ['hearth', 'wrk'])
            if (tool === 'wrk') ws.push(await wrk(`${base}${ROUTE}`, script, c, seconds, dir));
            else hs.push(await hearthBench(cli, base, bodyFile, c, seconds));
        const w = mean(ws);
        const h = mean(hs);
        const ratio = round(h.perS / w.perS, 3);
        const row = {
          server,
          concurrency: c,
          hearth_bench_per_s: round(h.perS),
          wrk_per_s: round(w.perS),
          ratio,
          within_10pct: ratio >= 0.9 && ratio <= 1.1,
          hearth_bench_p50_ms: round(h.p50Ms, 3),
          wrk_p50_ms: round(w.p50Ms, 3),
          hearth_bench_p99_ms: round(h.p99Ms, 3),
          wrk_p99_ms: round(w.p99Ms, 3),
          hearth_bench_cpu_us_per_req: round(h.cpuUsPerReq),
          wrk_cpu_us_per_req: round(w.cpuUsPerReq),
        };
        rows.push(row);
        console.log(JSON.stringify(row));
      }
  } finally {
    await Promise.all([stop(hearth.node.child), stop(bare.child)]);
    await rm(dir, { recursive: true, force: true });
  }
  console.table(rows);
  const result = {
    seconds,
    rounds: ROUNDS,
    cores: availableParallelism(),
    loadavg_1m: { before: round(load.before, 2), after: round(loadavg()[0]!, 2) },
    note: 'a shared machine: other work ran beside this benchmark; compare ratios, not absolute figures',
    rows,
  };
  mkdirSync(join(flags.out, '..'), { recursive: true });
  writeFileSync(flags.out, `${JSON.stringify(result, null, 2)}\n`);
  console.log(`wrote ${flags.out}`);
}

await main();
