/**
 * `npm run bench:soak -- --minutes 10`: two nodes in cluster mode (their own Redis, with AOF, and
 * s3rver), two functions at a fixed request rate — one called synchronously, one as async jobs —
 * while, at a quarter, a half and three quarters of the run, it SIGKILLs node A's runners, restarts
 * Redis (SIGKILL, then start on the same files), and drains node B (SIGTERM) and starts another.
 * Every second it samples node A's RSS (the node and its runners) and open file descriptors, Redis'
 * memory, and the sync calls' latency. At the end it waits for every acknowledged job to settle.
 *
 * Writes test/bench/results/soak.json and soak.svg. Targets: 0 acknowledged jobs lost; RSS and FDs
 * flat after warm-up (the last minute within 10% of the second); p99 outside fault windows within
 * 1.5× of the first minute's.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';

import { Redis } from 'ioredis';

import { REPO_ROOT } from '../helpers/fixtures.js';
import type { NodeProcess } from '../helpers/node.js';
import { deployFixture, spawnNode } from '../helpers/node.js';
import { startRedis } from '../helpers/redis.js';
import { startS3 } from '../helpers/s3.js';
import { SMALL_SPEC, SMALL_X } from '../helpers/specs.js';
import { round } from './flags.js';

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '10' },
    rate: { type: 'string', default: '40' },
    out: { type: 'string', default: join(REPO_ROOT, 'test', 'bench', 'results', 'soak.json') },
  },
});
const MINUTES = Number(values.minutes);
const RATE = Number(values.rate); // sync calls per second; jobs at a quarter of it
const RUN_MS = MINUTES * 60_000;
/** A fault window: from the fault until this long after it, latencies are not held to the target. */
const FAULT_WINDOW_MS = 20_000;

interface Sample {
  t: number;
  rssMb: number;
  fds: number;
  redisMb: number;
  p50: number;
  p99: number;
  sent: number;
  ok: number;
  errors: number;
  jobsAcked: number;
}

const percentile = (xs: number[], p: number): number => {
  if (xs.length === 0) return 0;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};

/** Resident memory of a process and its children (a node and its runners), MB. */
function treeRssMb(pid: number): number {
  let kb = 0;
  for (const p of [pid, ...runnersOf(pid)]) {
    try {
      kb += Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${p}/status`, 'utf8'))?.[1] ?? 0);
    } catch {
      // gone
    }
  }
  return kb / 1024;
}

const fdCount = (pid: number): number => {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return 0;
  }
};

/** A node's child processes: its runners (and its spare). */
function runnersOf(pid: number): number[] {
  try {
    return execFileSync('pgrep', ['-P', String(pid)])
      .toString()
      .trim()
      .split('\n')
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'hearth-soak-'));
  const redisDir = join(dir, 'redis');
  await mkdir(redisDir);
  const redis = await startRedis(['--appendonly', 'yes', '--appendfsync', 'always', '--dir', redisDir]);
  const s3 = await startS3();
  const env = {
    REDIS_URL: redis.url,
    HEARTH_REDIS_PREFIX: 'soak:',
    HEARTH_S3_BUCKET: s3.bucket,
    HEARTH_S3_ENDPOINT: s3.endpoint,
    HEARTH_JOB_LOCK_MS: '5000',
    HEARTH_JOB_BACKOFF_MS: '200',
    HEARTH_JOB_ATTEMPTS: '10',
    HEARTH_LOG_LEVEL: 'warn',
  };
  const quiet = () => undefined;
  const a = await spawnNode(join(dir, 'a'), { ...env, HEARTH_LOG_LEVEL: 'info' }, quiet);
  let b: NodeProcess = await spawnNode(join(dir, 'b'), { ...env, HEARTH_LOG_LEVEL: 'info' }, quiet);
  const deployed = [
    await deployFixture(a.url, { ...SMALL_SPEC, name: 'sync-fn' }, { model: 'small' }),
    await deployFixture(a.url, { ...SMALL_SPEC, name: 'job-fn' }, { model: 'small' }),
  ];
  if (deployed.some((r) => r.status !== 201)) throw new Error('deploy failed');
  const redisProbe = new Redis(redis.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  redisProbe.on('error', () => undefined);

  const body = JSON.stringify({ inputs: { x: SMALL_X } });
  const started = Date.now();
  const latencies: { at: number; ms: number }[] = [];
  const acked: string[] = [];
  let sent = 0;
  let ok = 0;
  let errors = 0;
  const faults: { at: number; what: string }[] = [];
  const inflight = new Set<Promise<void>>();
  const track = (p: Promise<void>) => {
    inflight.add(p);
    void p.finally(() => inflight.delete(p));
  };

  const call = async () => {
    sent++;
    const t0 = performance.now();
    try {
      const r = await fetch(`${a.url}/fn/sync-fn`, {
        method: 'POST',
        body,
        headers: { 'content-type': 'application/json' },
        signal: AbortSignal.timeout(30_000),
      });
      await r.arrayBuffer();
      if (r.status === 200) {
        ok++;
        latencies.push({ at: Date.now(), ms: performance.now() - t0 });
      } else errors++;
    } catch {
      errors++;
    }
  };
  const submit = async () => {
    try {
      const r = await fetch(`${a.url}/fn/job-fn`, {
        method: 'POST',
        body,
        headers: { 'content-type': 'application/json', prefer: 'respond-async' },
        signal: AbortSignal.timeout(30_000),
      });
      if (r.status === 202) acked.push(((await r.json()) as { id: string }).id);
      else await r.arrayBuffer();
    } catch {
      // not acknowledged: not counted
    }
  };

  const samples: Sample[] = [];
  let lastSample = started;
  const sampler = setInterval(() => {
    void (async () => {
      const now = Date.now();
      const window = latencies.filter((l) => l.at > lastSample).map((l) => l.ms);
      lastSample = now;
      const info = await redisProbe.info('memory').catch(() => '');
      samples.push({
        t: round((now - started) / 1000, 0),
        rssMb: round(treeRssMb(a.child.pid!), 1),
        fds: fdCount(a.child.pid!),
        redisMb: round(Number(/used_memory:(\d+)/.exec(info)?.[1] ?? 0) / 2 ** 20, 2),
        p50: round(percentile(window, 50), 2),
        p99: round(percentile(window, 99), 2),
        sent,
        ok,
        errors,
        jobsAcked: acked.length,
      });
    })();
  }, 1000);

  const schedule = [
    {
      at: RUN_MS / 4,
      what: "SIGKILL node A's runners",
      run: async () => {
        for (const pid of runnersOf(a.child.pid!)) process.kill(pid, 'SIGKILL');
      },
    },
    {
      at: RUN_MS / 2,
      what: 'restart Redis (SIGKILL, then start on its AOF)',
      run: async () => {
        await redis.stop();
        await new Promise((r) => setTimeout(r, 2000));
        await redis.start();
      },
    },
    {
      at: (RUN_MS * 3) / 4,
      what: 'drain node B (SIGTERM) and start another',
      run: async () => {
        b.child.kill('SIGTERM');
        await b.exited;
        b = await spawnNode(join(dir, `b${Date.now()}`), { ...env, HEARTH_LOG_LEVEL: 'info' }, quiet);
      },
    },
  ];

  // Fixed rate: a tick every 1000 / RATE ms; every fourth tick also submits a job.
  let tick = 0;
  const interval = 1000 / RATE;
  console.log(`soak: ${MINUTES} min at ${RATE} calls/s and ${RATE / 4} jobs/s`);
  while (Date.now() - started < RUN_MS) {
    const due = started + tick * interval;
    const wait = due - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    track(call());
    if (tick % 4 === 0) track(submit());
    tick++;
    const elapsed = Date.now() - started;
    const fault = schedule.find((f) => f.at <= elapsed && !faults.some((x) => x.what === f.what));
    if (fault) {
      faults.push({ at: elapsed, what: fault.what });
      console.log(`  ${round(elapsed / 1000, 0)} s: ${fault.what}`);
      track(fault.run());
    }
  }
  await Promise.all(inflight);
  clearInterval(sampler);

  // Every acknowledged job must settle (succeeded or failed with a record): none lost.
  const settleUntil = Date.now() + 120_000;
  const pending = new Set(acked);
  const outcomes = { succeeded: 0, failed: 0, missing: 0 };
  while (pending.size > 0 && Date.now() < settleUntil) {
    for (const id of [...pending]) {
      const r = await fetch(`${a.url}/api/v1/jobs/${id}`).catch(() => undefined);
      if (!r) continue;
      const job = (await r.json().catch(() => ({}))) as { status?: string };
      if (job.status === 'succeeded' || job.status === 'failed') {
        outcomes[job.status]++;
        pending.delete(id);
      }
    }
    if (pending.size > 0) await new Promise((r) => setTimeout(r, 1000));
  }
  outcomes.missing = pending.size;

  const minute = (from: number, to: number) => samples.filter((s) => s.t >= from && s.t < to);
  const mean = (xs: number[]) => xs.reduce((x, y) => x + y, 0) / Math.max(1, xs.length);
  const end = samples.at(-1)?.t ?? 0;
  const second = minute(60, 120);
  const last = minute(end - 60, end + 1);
  const rssGrowth = mean(last.map((s) => s.rssMb)) / Math.max(1, mean(second.map((s) => s.rssMb)));
  const fdGrowth = mean(last.map((s) => s.fds)) / Math.max(1, mean(second.map((s) => s.fds)));
  const inFault = (t: number) => faults.some((f) => t * 1000 >= f.at && t * 1000 < f.at + FAULT_WINDOW_MS);
  const firstP99 = percentile(
    latencies.filter((l) => l.at - started < 60_000).map((l) => l.ms),
    99,
  );
  const calmP99 = percentile(
    latencies.filter((l) => l.at - started >= 60_000 && !inFault((l.at - started) / 1000)).map((l) => l.ms),
    99,
  );
  const summary = {
    minutes: MINUTES,
    rate: RATE,
    faults,
    sync: { sent, ok, errors },
    jobs: { acked: acked.length, ...outcomes },
    rssMb: { secondMinute: round(mean(second.map((s) => s.rssMb))), lastMinute: round(mean(last.map((s) => s.rssMb))) },
    fds: { secondMinute: round(mean(second.map((s) => s.fds))), lastMinute: round(mean(last.map((s) => s.fds))) },
    p99Ms: { firstMinute: round(firstP99, 2), outsideFaults: round(calmP99, 2) },
    targets: {
      noJobLost: outcomes.missing === 0,
      rssFlat: rssGrowth <= 1.1,
      fdsFlat: fdGrowth <= 1.1,
      p99Steady: calmP99 <= 1.5 * firstP99,
    },
  };
  console.log(JSON.stringify(summary, null, 2));
  const targets = [
    [`0 acknowledged jobs lost: ${outcomes.missing} of ${acked.length}`, summary.targets.noJobLost],
    [`RSS flat (last minute ÷ second ≤ 1.1): ${round(rssGrowth, 3)}`, summary.targets.rssFlat],
    [`FDs flat (≤ 1.1): ${round(fdGrowth, 3)}`, summary.targets.fdsFlat],
    [
      `p99 outside faults ≤ 1.5 × first minute: ${round(calmP99, 2)} vs ${round(firstP99, 2)} ms`,
      summary.targets.p99Steady,
    ],
  ] as const;
  console.log('targets:');
  for (const [text, met] of targets) console.log(`  ${met ? 'met   ' : 'MISSED'} ${text}`);

  await mkdir(dirname(values.out), { recursive: true });
  await writeFile(values.out, `${JSON.stringify({ summary, samples }, null, 2)}\n`);
  await writeFile(values.out.replace(/\.json$/, '.svg'), soakChart(samples, faults));
  console.log(`wrote ${values.out} and its chart`);

  redisProbe.disconnect();
  for (const n of [a, b]) n.child.kill('SIGTERM');
  await Promise.all([a.exited, b.exited]);
  await redis.stop();
  await s3.close();
  await rm(dir, { recursive: true, force: true });
}

/** Four stacked panels over time: p50/p99, RSS, FDs, Redis memory; fault times as red lines. */
function soakChart(samples: Sample[], faults: { at: number; what: string }[]): string {
  const W = 900;
  const H = 150;
  const pad = 50;
  const end = Math.max(1, samples.at(-1)?.t ?? 1);
  const panels: { title: string; series: { name: string; color: string; get: (s: Sample) => number }[] }[] = [
    {
      title: 'sync latency (ms)',
      series: [
        { name: 'p50', color: '#2b6cb0', get: (s) => s.p50 },
        { name: 'p99', color: '#c05621', get: (s) => s.p99 },
      ],
    },
    { title: 'RSS of node A and its runners (MB)', series: [{ name: 'rss', color: '#2f855a', get: (s) => s.rssMb }] },
    { title: 'open file descriptors of node A', series: [{ name: 'fds', color: '#6b46c1', get: (s) => s.fds }] },
    { title: 'Redis used memory (MB)', series: [{ name: 'redis', color: '#b83280', get: (s) => s.redisMb }] },
  ];
  const parts: string[] = [];
  panels.forEach((panel, i) => {
    const top = i * (H + 30) + 20;
    const max = Math.max(1e-9, ...samples.flatMap((s) => panel.series.map((x) => x.get(s))));
    const x = (t: number) => pad + ((W - pad - 10) * t) / end;
    const y = (v: number) => top + H - (H * v) / max;
    parts.push(`<text x="${pad}" y="${top - 5}" font-size="12">${panel.title} (max ${round(max, 1)})</text>`);
    parts.push(`<rect x="${pad}" y="${top}" width="${W - pad - 10}" height="${H}" fill="none" stroke="#ccc"/>`);
    for (const f of faults)
      parts.push(
        `<line x1="${x(f.at / 1000)}" x2="${x(f.at / 1000)}" y1="${top}" y2="${top + H}" stroke="#e53e3e" stroke-dasharray="3,3"><title>${f.what}</title></line>`,
      );
    for (const s of panel.series) {
      const points = samples.map((p) => `${round(x(p.t), 1)},${round(y(s.get(p)), 1)}`).join(' ');
      parts.push(
        `<polyline fill="none" stroke="${s.color}" stroke-width="1.5" points="${points}"><title>${s.name}</title></polyline>`,
      );
    }
  });
  const height = panels.length * (H + 30) + 20;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${height}" font-family="sans-serif" role="img" aria-label="Soak run: latency, RSS, file descriptors and Redis memory over time, with the fault times marked">${parts.join('')}</svg>\n`;
}

await main();
process.exit(0);
