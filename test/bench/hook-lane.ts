/**
 * A microbenchmark of the hook lane alone (no node, no wire): a HookPool running bench:ceiling's
 * hooks in their sandbox, pre then post, serially (inline, as a lone request runs) and 64 at a time
 * (pre grouped and post by batch: on the hook threads, or on this thread where the hook costs a
 * request less than a hop to one, runtime/hooks/hook-cost.ts). Prints CPU µs per request of this
 * process and writes test/bench/results/hooklane.json: rows {hook, input, concurrency, cpu_us,
 * wall_us, pre_wall_us, inline_calls, pre_cost_us, post_cost_us} (the calls run on this thread, and
 * the pool's measure of the hook's own cost a request, per phase).
 * Flags: --only binary:vec,json:vec,binary:image,json:image (all but json:image by default).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { bundleHook, HookPool } from '../../runtime/hooks/index.js';
import { growHeapsFurther } from '../../runtime/runner/index.js';
import { parseSpec } from '../../sdk/spec/index.js';
import { REPO_ROOT } from '../helpers/fixtures.js';
import { benchFlags } from './flags.js';

// As a runner process sets it (runtime/runner/heap-growth.ts): the lane is measured as it runs there.
growHeapsFurther();
const out = await mkdtemp(join(tmpdir(), 'hearth-lane-'));
const N = Number(process.env.N ?? 4000);
const flags = benchFlags('hooklane');
const rows: {
  hook: string;
  input: string;
  concurrency: number;
  cpu_us: number;
  wall_us: number;
  pre_wall_us: number;
  inline_calls: number;
  pre_cost_us: number | null;
  post_cost_us: number | null;
}[] = [];

const finite = (us: number): number | null => (Number.isFinite(us) ? Math.round(us) : null);

async function lane(hook: 'json' | 'binary', input: 'vec' | 'image') {
  const dims = input === 'vec' ? [1024] : [3, 224, 224];
  const spec = parseSpec({
    name: `lane-${hook}`,
    model: 'model.pt',
    hook: 'hook.ts',
    maxBatchSize: 64,
    inputs: [{ name: 'x', dtype: 'FP32', dims }],
    outputs: [{ name: 'y', dtype: 'FP32', dims: [input === 'vec' ? 1024 : 1000] }],
  });
  const { path } = await bundleHook(join(REPO_ROOT, 'test', 'bench', 'hooks', `ceiling-${hook}.ts`), out);
  const pool = await HookPool.create({ spec, version: 1, bundlePath: path, sandbox: true, inline: true, threads: 2 });
  const n = input === 'vec' ? 1024 : 3 * 224 * 224;
  const values = Float32Array.from({ length: n }, (_, i) => Math.sin(i) * 0.5);
  const outN = input === 'vec' ? 1024 : 1000;
  const body =
    hook === 'json'
      ? new TextEncoder().encode(JSON.stringify({ inputs: Array.from(values) }))
      : new Uint8Array(values.buffer);
  const contentType = hook === 'json' ? 'application/json' : 'application/octet-stream';
  const request = () => ({ body: body.slice(), contentType });
  const y = (rows: number) => ({
    y: { dtype: 'FP32' as const, shape: [rows, outN], data: new Float32Array(rows * outN).fill(0.25) },
  });
  const count = input === 'vec' ? N : N / 16;
  const measure = async (c: number) => {
    const inline0 = pool.inlineCalls;
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    let preMs = 0;
    for (let done = 0; done < count; done += c) {
      const reqs = Array.from({ length: c }, request);
      const p0 = performance.now();
      const pres = await Promise.all(reqs.map((r) => pool.pre(r, { inline: c === 1 })));
      preMs += performance.now() - p0;
      const outs = y(c);
      const items = pres.map((p, i) => ({
        outputs: { y: { ...outs.y, shape: [1, outN], data: outs.y.data.subarray(i * outN, (i + 1) * outN) } },
        request: { body: p.body, contentType: reqs[i]!.contentType },
      }));
      const r = await pool.post(items, { inline: c === 1 });
      if (!r.every((o) => o.ok)) throw new Error(JSON.stringify(r.find((o) => !o.ok)));
      for (const p of pres) p.release?.(); // as a runner does once a request is answered
    }
    const cpu = process.cpuUsage(cpu0);
    const row = {
      hook,
      input,
      concurrency: c,
      cpu_us: Math.round((cpu.user + cpu.system) / count),
      wall_us: Math.round(((performance.now() - t0) * 1000) / count),
      pre_wall_us: Math.round((preMs * 1000) / count),
      inline_calls: pool.inlineCalls - inline0,
      pre_cost_us: finite(pool.costUs('pre')),
      post_cost_us: finite(pool.costUs('post')),
    };
    rows.push(row);
    console.log(
      `${hook}/${input} c=${c}: ${row.cpu_us} µs CPU/req, ${row.wall_us} µs wall/req (pre ${row.pre_wall_us}); ` +
        `${row.inline_calls} calls on this thread; hook's own cost a request pre ${row.pre_cost_us ?? '?'}, post ${row.post_cost_us ?? '?'} µs`,
    );
  };
  if (!process.env.ONLY64) {
    await measure(1);
    await measure(1);
  }
  await measure(64);
  await measure(64);
  await pool.close();
}

for (const w of flags.only ?? ['binary:vec', 'json:vec', 'binary:image']) {
  const [h, i] = w.split(':') as ['json' | 'binary', 'vec' | 'image'];
  await lane(h, i);
}
mkdirSync(join(flags.out, '..'), { recursive: true });
writeFileSync(flags.out, `${JSON.stringify({ when: new Date().toISOString(), requests: N, rows }, null, 2)}\n`);
console.log(`\nwrote ${flags.out}`);
process.exit(0);
