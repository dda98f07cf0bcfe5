/**
 * bench:scale — a step load (low → high → low → idle) at one node, with the autoscaler on short
 * windows: the pool's instance count and the p99 latency over time. The function is the `slow`
 * fixture without batching (each request one forward), so instances are what adds throughput.
 * Writes test/bench/results/scale.json and scale.svg.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { ensureModels, modelPath, REPO_ROOT } from '../helpers/fixtures.js';
import { postFunction, spawnNode, upload } from '../helpers/node.js';
import { SLOW_SPEC } from '../helpers/specs.js';

const OUT = join(REPO_ROOT, 'test', 'bench', 'results');
const ITERS = 60;
const STEPS = [
  { label: 'low', concurrency: 2, seconds: 10 },
  { label: 'high', concurrency: 24, seconds: 20 },
  { label: 'low', concurrency: 2, seconds: 20 },
  { label: 'idle', concurrency: 0, seconds: 16 },
];
const SCALING = { minInstances: 0, maxInstances: 4, targetQueueDepth: 4, stableWindowS: 8, scaleDownAfterS: 10 };
const SAMPLE_MS = 500;

interface Sample {
  t: number;
  concurrency: number;
  instances: number;
  state: string;
  p99_ms: number | null;
  req_per_s: number;
}

function svg(samples: Sample[]): string {
  const W = 760,
    H = 320,
    L = 50,
    R = 60,
    T = 30,
    B = 40;
  const tMax = Math.max(...samples.map((s) => s.t));
  const iMax = Math.max(4, ...samples.map((s) => s.instances));
  const pMax = Math.max(10, ...samples.map((s) => s.p99_ms ?? 0)) * 1.1;
  const x = (t: number) => L + (t / tMax) * (W - L - R);
  const yi = (i: number) => H - B - (i / iMax) * (H - T - B);
  const yp = (p: number) => H - B - (p / pMax) * (H - T - B);
  const step = samples
    .map(
      (s, k) =>
        `${k === 0 ? 'M' : 'L'}${x(s.t).toFixed(1)},${yi(k === 0 ? s.instances : samples[k - 1]!.instances).toFixed(1)} L${x(s.t).toFixed(1)},${yi(s.instances).toFixed(1)}`,
    )
    .join(' ');
  const p99 = samples
    .filter((s) => s.p99_ms !== null)
    .map((s, k) => `${k === 0 ? 'M' : 'L'}${x(s.t).toFixed(1)},${yp(s.p99_ms!).toFixed(1)}`)
    .join(' ');
  const load = samples
    .map((s, k) => `${k === 0 ? 'M' : 'L'}${x(s.t).toFixed(1)},${yi((s.concurrency / 24) * iMax).toFixed(1)}`)
    .join(' ');
  const ticks = (n: number, max: number, y: (v: number) => number, side: 'l' | 'r') =>
    Array.from({ length: n + 1 }, (_, k) => {
      const v = (max / n) * k;
      const xx = side === 'l' ? L - 6 : W - R + 6;
      return `<text x="${xx}" y="${y(v) + 4}" text-anchor="${side === 'l' ? 'end' : 'start'}">${Math.round(v)}</text>`;
    }).join('');
  const xt = Array.from(
    { length: Math.floor(tMax / 10) + 1 },
    (_, k) => `<text x="${x(k * 10)}" y="${H - B + 16}" text-anchor="middle">${k * 10}</text>`,
  ).join('');
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="11">
<rect width="${W}" height="${H}" fill="white"/>
<text x="${W / 2}" y="16" text-anchor="middle" font-size="13">bench:scale — instances (steps) and p99 latency under a step load</text>
<line x1="${L}" y1="${H - B}" x2="${W - R}" y2="${H - B}" stroke="#999"/><line x1="${L}" y1="${T}" x2="${L}" y2="${H - B}" stroke="#999"/><line x1="${W - R}" y1="${T}" x2="${W - R}" y2="${H - B}" stroke="#999"/>
${ticks(iMax, iMax, yi, 'l')}${ticks(5, pMax, yp, 'r')}${xt}
<text x="${W / 2}" y="${H - 6}" text-anchor="middle">seconds</text>
<text x="14" y="${H / 2}" transform="rotate(-90 14 ${H / 2})" text-anchor="middle" fill="#1f77b4">instances</text>
<text x="${W - 12}" y="${H / 2}" transform="rotate(90 ${W - 12} ${H / 2})" text-anchor="middle" fill="#d62728">p99 ms</text>
<path d="${load}" fill="none" stroke="#bbb" stroke-dasharray="4 3"/>
<path d="${step}" fill="none" stroke="#1f77b4" stroke-width="2"/>
<path d="${p99}" fill="none" stroke="#d62728" stroke-width="1.5"/>
<text x="${L + 8}" y="${T + 12}" fill="#888">dashed: offered concurrency (0–24, scaled)</text>
</svg>
`;
}

async function main(): Promise<void> {
  ensureModels();
  const dir = await mkdtemp(join(tmpdir(), 'hearth-bench-scale-'));
  const node = await spawnNode(join(dir, 'data'), { HEARTH_AUTOSCALE_TICK_MS: '250', HEARTH_LOG_LEVEL: 'info' });
  try {
    const model = await upload(node.url, new Uint8Array(await readFile(modelPath('slow'))));
    const spec = { ...SLOW_SPEC, scaling: SCALING };
    const deployed = await postFunction(node.url, { spec, artifacts: { model } });
    if (deployed.status !== 201) throw new Error(`deploy failed: ${await deployed.text()}`);
    const body = JSON.stringify({
      inputs: [
        { name: 'x', shape: [4, 512], datatype: 'FP32', data: new Array(2048).fill(0.01) },
        { name: 'n', shape: [], datatype: 'INT64', data: [ITERS] },
      ],
    });
    console.log(
      `bench:scale — steps ${STEPS.map((s) => `${s.label} c=${s.concurrency} ${s.seconds}s`).join(' → ')}; scaling ${JSON.stringify(SCALING)}`,
    );

    const t0 = performance.now();
    let concurrency = 0;
    let done: { at: number; ms: number }[] = [];
    let errors = 0;
    let stop = false;
    const worker = async (index: number): Promise<void> => {
      while (!stop) {
        if (index >= concurrency) {
          await new Promise((r) => setTimeout(r, 20));
          continue;
        }
        const start = performance.now();
        const r = await fetch(`${node.url}/v2/models/slow/infer`, {
          method: 'POST',
          body,
          headers: { 'content-type': 'application/json' },
        }).catch(() => undefined);
        if (!r || r.status !== 200) errors++;
        await r?.arrayBuffer();
        done.push({ at: performance.now(), ms: performance.now() - start });
      }
    };
    const workers = Array.from({ length: Math.max(...STEPS.map((s) => s.concurrency)) }, (_, i) => worker(i));
    const samples: Sample[] = [];
    const sampler = setInterval(async () => {
      const now = performance.now();
      const window = done;
      done = [];
      const pools = (
        (await (await fetch(`${node.url}/api/v1/pools`)).json()) as {
          pools: { function: string; state: string; instances: { total: number } }[];
        }
      ).pools.filter((p) => p.function === 'slow' && p.state !== 'stopped');
      const latencies = window.map((d) => d.ms).sort((a, b) => a - b);
      samples.push({
        t: Math.round((now - t0) / 100) / 10,
        concurrency,
        instances: pools.reduce((n, p) => n + p.instances.total, 0),
        state: pools[0]?.state ?? 'zero',
        p99_ms: latencies.length
          ? Math.round(latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * 0.99))]! * 10) / 10
          : null,
        req_per_s: Math.round((window.length / SAMPLE_MS) * 1000),
      });
    }, SAMPLE_MS);
    for (const s of STEPS) {
      concurrency = s.concurrency;
      await new Promise((r) => setTimeout(r, s.seconds * 1000));
    }
    stop = true;
    clearInterval(sampler);
    await Promise.all(workers);

    const changes = samples
      .filter((s, k) => k > 0 && s.instances !== samples[k - 1]!.instances)
      .map((s) => ({ t: s.t, instances: s.instances }));
    console.log(`instance changes: ${changes.map((c) => `${c.t}s→${c.instances}`).join(', ')}; errors ${errors}`);
    for (const [k, s] of STEPS.entries()) {
      const from = STEPS.slice(0, k).reduce((n, x) => n + x.seconds, 0);
      const inStep = samples.filter((x) => x.t >= from && x.t < from + s.seconds);
      const p99s = inStep.map((x) => x.p99_ms).filter((v): v is number => v !== null);
      console.log(
        `  ${s.label.padEnd(5)} c=${String(s.concurrency).padStart(2)}: instances ${Math.min(...inStep.map((x) => x.instances))}–${Math.max(...inStep.map((x) => x.instances))}, req/s ~${Math.round(inStep.reduce((n, x) => n + x.req_per_s, 0) / Math.max(1, inStep.length))}, p99 max ${p99s.length ? Math.max(...p99s) : '-'} ms`,
      );
    }
    mkdirSync(OUT, { recursive: true });
    writeFileSync(
      join(OUT, 'scale.json'),
      `${JSON.stringify({ steps: STEPS, scaling: SCALING, iters: ITERS, errors, changes, samples }, null, 2)}\n`,
    );
    writeFileSync(join(OUT, 'scale.svg'), svg(samples));
    console.log(`wrote ${join(OUT, 'scale.json')} and scale.svg`);
  } finally {
    node.child.kill('SIGTERM');
    await node.exited;
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
