import { spawn } from 'node:child_process';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import autocannon from 'autocannon';
import { modelPath, REPO_ROOT } from '../test/helpers/fixtures.js';
import { hookBundle, upload } from '../test/helpers/node.js';
import { randomRows as floats } from '../test/bench/engine-reference.js';

const mode = process.argv[2] ?? 'binary';
const prof = process.argv.includes('--prof');
const dir = await mkdtemp(join(tmpdir(), 'probe-'));
const child = spawn(process.execPath, [...(prof ? ['--cpu-prof', '--cpu-prof-dir', '/tmp/prof'] : []), '--import', 'tsx', join(REPO_ROOT, 'platform', 'main.ts')], {
  cwd: REPO_ROOT, env: { ...process.env, HEARTH_HTTP_PORT: '0', HEARTH_GRPC_PORT: '0', HEARTH_METRICS_PORT: '0', HEARTH_DATA_DIR: join(dir, 'data'), HEARTH_LOG_LEVEL: 'info', ...(process.env.IOT ? { HEARTH_INTRA_OP_THREADS: process.env.IOT } : {}) }, stdio: ['ignore', 'pipe', 'inherit'] });
const lines = createInterface({ input: child.stdout! });
const http = await new Promise<string>((resolve) => lines.on('line', (line) => { const e = JSON.parse(line); if (e.msg === 'hearth listening') resolve(`http://127.0.0.1:${e.http}`); }));
const m = await upload(http, new Uint8Array(await readFile(modelPath('mlp'))));
const h = await upload(http, await hookBundle('mlp-json', join(dir, 'bundles'), join(REPO_ROOT, 'test', 'bench', 'hooks')));
const spec = { name: 'mlp', model: 'model.pt', hook: 'hook.ts', maxBatchSize: 64, batching: { maxQueueDelayUs: 2000 }, instances: JSON.parse(process.env.INST ?? '{"device":"cpu"}'), inputs: [{ name: 'x', dtype: 'FP32', dims: [1024] }], outputs: [{ name: 'y', dtype: 'FP32', dims: [1024] }] };
const r = await fetch(`${http}/api/v1/functions`, { method: 'POST', body: JSON.stringify({ spec, artifacts: { model: m, hook: h } }), headers: { 'content-type': 'application/json' } });
console.log('deploy', r.status);
const x = floats(1024, 7);
let url: string, body: Buffer, headers: Record<string, string>;
if (mode === 'binary') {
  const header = new TextEncoder().encode(JSON.stringify({ inputs: [{ name: 'x', shape: [1, 1024], datatype: 'FP32', parameters: { binary_data_size: 4096 } }], parameters: { binary_data_output: true } }));
  body = Buffer.concat([header, Buffer.from(x.buffer)]);
  url = `${http}/v2/models/mlp/infer`; headers = { 'content-type': 'application/octet-stream', 'inference-header-content-length': String(header.length) };
} else {
  body = Buffer.from(JSON.stringify({ inputs: Array.from(x) })); url = `${http}/fn/mlp`; headers = { 'content-type': 'application/json' };
}
const c = Number(process.env.C ?? 64);
await autocannon({ url, method: 'POST', body, headers, connections: 4, duration: 1 });
const { readdirSync, readFileSync } = await import('node:fs');
const threads = () => { const o: Record<string, number> = {}; for (const t of readdirSync(`/proc/${child.pid}/task`)) { try { const st = readFileSync(`/proc/${child.pid}/task/${t}/stat`, 'utf8'); const name = st.slice(st.indexOf('(') + 1, st.lastIndexOf(')')); const f = st.slice(st.lastIndexOf(')') + 2).split(' '); o[name + '/' + t] = (o[name + '/' + t] ?? 0) + (Number(f[11]) + Number(f[12])) * 10; } catch {} } return o; };
const pools0 = await (await fetch(`${http}/api/v1/pools`)).json();
const t0 = threads(); const me0 = process.cpuUsage(); const w0 = performance.now();
const res = await autocannon({ url, method: 'POST', body, headers, connections: c, duration: Number(process.env.S ?? 6) });
const t1 = threads(); const me1 = process.cpuUsage(me0); const wall = performance.now() - w0;
const pools1 = await (await fetch(`${http}/api/v1/pools`)).json();
console.log('wall ms', wall.toFixed(0), 'loadgen cpu ms', ((me1.user + me1.system) / 1000).toFixed(0));
for (const k of Object.keys(t1)) { const d = t1[k] - (t0[k] ?? 0); if (d > 50) console.log('  thread', k, d, 'ms'); }
const st = pools1.pools[0]; const bs = Object.entries(st.batchSizes as Record<string, number>); const n = bs.reduce((a, [, c]) => a + c, 0); console.log('avg batch', (bs.reduce((a, [k, c]) => a + Number(k) * c, 0) / n).toFixed(1), 'hookThreads', st.hookThreads);
for (const [k, d] of Object.entries(st.durations as Record<string, { count: number; totalUs: number }>)) console.log('  ', k, d.count, (d.totalUs / Math.max(1, d.count) / 1000).toFixed(2), 'ms avg');
console.log(mode, 'c', c, 'rps', res.requests.average, 'p50', res.latency.p50, 'p99', res.latency.p99, 'err', res.errors + res.non2xx);
child.kill('SIGTERM');
await new Promise((r) => child.once('exit', r));
