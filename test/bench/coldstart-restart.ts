/**
 * bench:coldstart's cases with a node process of its own, as Kubernetes starts a new pod: a node
 * restarted (spawned as `npm start` runs it, built; an empty cache, its functions in Redis and S3) and one
 * request sent as soon as its port answers; and a burst, four functions cold at once on a node just
 * started. The reference for both: the same model loaded and run once in a fresh python3-torch
 * process (import torch included), timed here in the same run.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';

import { PYTHON, REPO_ROOT } from '../helpers/fixtures.js';
import { freePort } from '../helpers/redis.js';
import { randomRows } from './engine-reference.js';

export interface ColdModel {
  /** The function's name (its model as KServe names it). */
  name: string;
  file: string;
  /** One row's shape. */
  shape: number[];
}

const PY_LOAD_FORWARD = `
import sys, torch
m = torch.jit.load(sys.argv[1])
with torch.no_grad():
    m(torch.randn([1] + [int(d) for d in sys.argv[2:]]))
print("done")
`;

/** A fresh python3-torch process that loads `model` and runs it once: ms from spawn to its exit. */
export async function pythonLoadForward(model: ColdModel): Promise<number> {
  const t0 = performance.now();
  const child = spawn(PYTHON, ['-c', PY_LOAD_FORWARD, model.file, ...model.shape.map(String)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => {
    out += d;
  });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0 || !out.includes('done')) throw new Error(`python3 exited ${code}: ${out}`);
  return performance.now() - t0;
}

/** A KServe binary infer request for one row of `model`: ms to its answer (a 200, checked). */
export async function infer(url: string, model: ColdModel): Promise<number> {
  const data = randomRows(
    model.shape.reduce((a, b) => a * b, 1),
    1,
  );
  const header = new TextEncoder().encode(
    JSON.stringify({
      inputs: [
        { name: 'x', shape: [1, ...model.shape], datatype: 'FP32', parameters: { binary_data_size: data.byteLength } },
      ],
    }),
  );
  const body = new Uint8Array(header.length + data.byteLength);
  body.set(header);
  body.set(new Uint8Array(data.buffer), header.length);
  const t0 = performance.now();
  const r = await fetch(`${url}/v2/models/${model.name}/infer`, {
    method: 'POST',
    body,
    headers: {
      'content-type': 'application/octet-stream',
      'inference-header-content-length': String(header.length),
      'accept-encoding': 'identity',
    },
  });
  const bytes = await r.arrayBuffer();
  if (r.status !== 200)
    throw new Error(`${model.name} answered ${r.status}: ${Buffer.from(bytes).toString().slice(0, 300)}`);
  return performance.now() - t0;
}

interface Started {
  child: ChildProcess;
  url: string;
  metricsUrl: string;
  /** ms from spawn until the port answered. */
  portLive: number;
  stop(): Promise<void>;
}

/**
 * A node process as `npm start` runs it (dist/node/main.mjs, built by tools/build-node.ts), with
 * `env`; resolves as soon as its HTTP port answers.
 */
async function startNodeProcess(env: Record<string, string>): Promise<Started> {
  const [http, grpc, metrics] = [await freePort(), await freePort(), await freePort()];
  const t0 = performance.now();
  const child = spawn(process.execPath, [join(REPO_ROOT, 'dist', 'node', 'main.mjs')], {
    cwd: REPO_ROOT,
    env: {
      ...process.env,
      HEARTH_LOG_LEVEL: 'warn',
      ...env,
      HEARTH_HTTP_PORT: String(http),
      HEARTH_GRPC_PORT: String(grpc),
      HEARTH_METRICS_PORT: String(metrics),
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const url = `http://127.0.0.1:${http}`;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the node exited with ${child.exitCode} before its port answered`);
    const live = await fetch(`${url}/v2/health/live`).then(
      () => true,
      () => false,
    );
    if (live) break;
    await new Promise((r) => setTimeout(r, 2));
  }
  const portLive = performance.now() - t0;
  const stop = async () => {
    child.kill('SIGTERM');
    await exited;
  };
  return { child, url, metricsUrl: `http://127.0.0.1:${metrics}/metrics`, portLive, stop };
}

export interface RestartTimes {
  /** Spawn to the port answering. */
  portLive: number;
  /** The port answering to the first request's answer. */
  answer: number;
  /** Spawn to the first answer. */
  total: number;
  /** The node's own start (seconds of its process: modules, stores, port_live, ready). */
  nodeStart: Record<string, number>;
  /** The function's cold start as the node recorded it (seconds: fetch, runner, load, warm-up…). */
  coldStart: Record<string, unknown>;
}

/** What the node says of its start (its metrics) and of `name`'s cold start (its pools). */
async function phasesOf(node: Started, name: string): Promise<Pick<RestartTimes, 'nodeStart' | 'coldStart'>> {
  const metrics = await (await fetch(node.metricsUrl)).text();
  const nodeStart = Object.fromEntries(
    [...metrics.matchAll(/^hearth_node_start_seconds\{phase="(\w+)"\} ([\d.e+-]+)$/gm)].map((m) => [
      m[1]!,
      Number(m[2]),
    ]),
  );
  const info = (await (await fetch(`${node.url}/api/v1/functions/${name}`)).json()) as {
    pools: { coldStart?: Record<string, unknown> }[];
  };
  return { nodeStart, coldStart: info.pools.find((p) => p.coldStart)?.coldStart ?? {} };
}

/** A node restarted with `env`, one request for `model` as soon as its port answers. */
export async function restartToAnswer(env: Record<string, string>, model: ColdModel): Promise<RestartTimes> {
  const node = await startNodeProcess(env);
  try {
    const answer = await infer(node.url, model);
    return { portLive: node.portLive, answer, total: node.portLive + answer, ...(await phasesOf(node, model.name)) };
  } finally {
    await node.stop();
  }
}

/**
 * A node started with `env`, ready and given `settleMs` (its spare runner up), then one request to
 * each of `models` at once: ms from sending them to each answer.
 */
export async function burst(env: Record<string, string>, models: ColdModel[], settleMs: number): Promise<number[]> {
  const node = await startNodeProcess(env);
  try {
    while ((await fetch(`${node.url}/v2/health/ready`)).status !== 200) await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, settleMs));
    const t0 = performance.now();
    const answers = await Promise.all(
      models.map(async (m) => {
        await infer(node.url, m);
        return performance.now() - t0;
      }),
    );
    for (const m of models) console.log(`    ${m.name}: ${JSON.stringify((await phasesOf(node, m.name)).coldStart)}`);
    return answers;
  } finally {
    await node.stop();
  }
}
