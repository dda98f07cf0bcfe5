/**
 * Seed 000's benchmark, end to end, as the GPU kit runs it (bundled: kit/dist/node/seed-bench.mjs,
 * with no node_modules): a real node from the kit, seed 000's ResNet-50 Triton folder deployed as
 * printed, driven over KServe binary HTTP and gRPC at concurrency 1, 16 and 64, and beside it raw
 * LibTorch (python3 torch, test/bench/engine_python.py) at batch 1, 16 and its best batch on the same device,
 * in the same call. The seed's reference: 200 QPS at batch 1 and 1,500 at batch 16; the targets: at
 * c=64 ≥ 0.9 × raw best, at c=1 a p50 within 1 ms of raw batch 1's latency.
 *
 * Writes OUT/gpu-serve.json: {device, rows: [{route, concurrency, req_per_s, p50_ms, p99_ms,
 * mean_batch, errors}], raw_b1_per_s, raw_b16_per_s, raw_best_per_s, raw_best_batch, ratios,
 * gpu_metrics}, and the node's log to OUT/node.log.
 *
 * Usage: node seed-bench.mjs --model resnet50.pt [--device cuda:0|cpu] [--seconds 10] [--quick]
 *        [--out DIR] [--python python3] [--threads N] [--concurrency 1,16,64]
 * On `--device cpu` the folder deploys as `hearth deploy --device cpu` would (its KIND_GPU group on
 * the CPU); --quick runs cells of at most 2 s, raw batches 1 and 16 once each after one warm-up,
 * and a light warm-up (the CPU simulation's test, which also passes --concurrency 1,4,8: ResNet-50
 * at c=64 on two cores takes ten seconds to drain a cell).
 */
import { spawn } from 'node:child_process';
import { copyFileSync, createWriteStream, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { deployFolder } from '../../sdk/cli/deploy.js';
import { Hearth } from '../../sdk/client.js';
import type { LoadResult } from '../bench/loops.js';
import { grpcLoad, httpLoad, kserveBinary } from '../bench/loops.js';
import { pythonEngine } from '../bench/python-engine.js';

/** Seed 000's model folder, as printed (max_queue_delay_microseconds: 100 is 100 µs). */
export const SEED_CONFIG = `name: "resnet50"
platform: "pytorch_libtorch"
max_batch_size: 32
input [
  {
    name: "INPUT__0"
    data_type: TYPE_FP32
    dims: [ 3, 224, 224 ]
  }
]
output [
  {
    name: "OUTPUT__0"
    data_type: TYPE_FP32
    dims: [ 1000 ]
  }
]
instance_group [
  {
    count: 2
    kind: KIND_GPU
  }
]
dynamic_batching {
  preferred_batch_size: [ 4, 8, 16 ]
  max_queue_delay_microseconds: 100
}
`;

/** Seed 000's concurrencies; `--concurrency` replaces them (the CPU simulation's test uses less). */
const CONCURRENCY = [1, 16, 64];

export interface ServeRow {
  route: 'kserve-binary-http' | 'grpc';
  concurrency: number;
  req_per_s: number;
  p50_ms: number;
  p99_ms: number;
  mean_batch: number;
  errors: number;
}

const round = (x: number, digits = 1) => Math.round(x * 10 ** digits) / 10 ** digits;

interface NodeHandle {
  url: string;
  grpc: string;
  metrics: string;
  stop(): Promise<void>;
}

/** Starts the kit's node (main.mjs beside this file) with its log going to `logFile`. */
async function startNode(main: string, dataDir: string, logFile: string, threads: number): Promise<NodeHandle> {
  const log = createWriteStream(logFile);
  const child = spawn(process.execPath, [main], {
    env: {
      ...process.env,
      HEARTH_HTTP_PORT: '0',
      HEARTH_GRPC_PORT: '0',
      HEARTH_METRICS_PORT: '0',
      HEARTH_HOST: '127.0.0.1',
      HEARTH_DATA_DIR: dataDir,
      HEARTH_LOG_LEVEL: 'info',
      HEARTH_INTRA_OP_THREADS: String(threads),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stderr!.pipe(log, { end: false });
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const ports = await new Promise<{ http: number; grpc: number; metrics: number }>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      log.write(`${line}\n`);
      try {
        const e = JSON.parse(line) as { msg?: string; http: number; grpc: number; metrics: number };
        if (e.msg === 'hearth listening') resolve(e);
      } catch {
        // not a JSON line: kept in the log
      }
    });
    void exited.then((code) => reject(new Error(`the node exited (${code}) before it listened: see ${logFile}`)));
  });
  return {
    url: `http://127.0.0.1:${ports.http}`,
    grpc: `127.0.0.1:${ports.grpc}`,
    metrics: `http://127.0.0.1:${ports.metrics}/metrics`,
    stop: async () => {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
      log.end();
    },
  };
}

/**
 * Raw LibTorch: images per second at each batch (python3 torch through bench:engine's reference
 * script: host tensors in, forward under inference_mode, host tensors out), and the best.
 */
function raw(
  python: string,
  script: string,
  model: string,
  device: string,
  batches: number[],
  seconds: number,
  threads: number,
  quick: boolean,
): { per_s: Record<string, number>; latency_ms: Record<string, number>; best_batch: number; best_per_s: number } {
  const name = basename(model, '.pt');
  const lines = pythonEngine({
    python,
    script,
    models: dirname(model),
    rows: batches.map((b) => [name, b]),
    threads,
    seconds,
    device,
    ...(quick ? { minIters: 1, warmup: 1 } : {}),
  });
  const per_s = Object.fromEntries(lines.map((l) => [String(l.batch), round(l.per_s)]));
  const latency_ms = Object.fromEntries(lines.map((l) => [String(l.batch), round((1000 * l.seconds) / l.iters, 3)]));
  const best = lines.reduce((a, l) => (l.per_s > a.per_s ? l : a));
  return { per_s, latency_ms, best_batch: best.batch, best_per_s: round(best.per_s) };
}

/** The version's inference and execution counts (Triton's statistics): their deltas give the mean batch. */
async function counts(url: string): Promise<{ inferences: number; executions: number }> {
  const r = (await (await fetch(`${url}/v2/models/resnet50/stats`)).json()) as {
    model_stats: { inference_count: number; execution_count: number }[];
  };
  return r.model_stats.reduce(
    (a, s) => ({ inferences: a.inferences + s.inference_count, executions: a.executions + s.execution_count }),
    { inferences: 0, executions: 0 },
  );
}

export async function seedBench(o: {
  model: string;
  device: string;
  seconds: number;
  quick: boolean;
  out: string;
  python: string;
  threads: number;
  main: string;
  rawScript: string;
  concurrency?: number[];
}): Promise<Record<string, unknown>> {
  const levels = o.concurrency ?? CONCURRENCY;
  mkdirSync(o.out, { recursive: true });
  const work = mkdtempSync(join(tmpdir(), 'hearth-seed-'));
  try {
    const cuda = o.device.startsWith('cuda');
    const batches = o.quick ? [1, 16] : cuda ? [1, 2, 4, 8, 16, 32, 64] : [1, 2, 4, 8, 16];
    console.log(`raw LibTorch on ${o.device}: batches ${batches.join(', ')}`);
    const reference = raw(o.python, o.rawScript, o.model, o.device, batches, o.seconds / 2, o.threads, o.quick);
    console.log(`raw: ${JSON.stringify(reference.per_s)} images/s; best batch ${reference.best_batch}`);

    // Seed 000's folder: config.pbtxt as printed, the model in version 1.
    const folder = join(work, 'resnet50');
    mkdirSync(join(folder, '1'), { recursive: true });
    writeFileSync(join(folder, 'config.pbtxt'), SEED_CONFIG);
    copyFileSync(o.model, join(folder, '1', 'model.pt'));

    const node = await startNode(o.main, join(work, 'data'), join(o.out, 'node.log'), o.threads);
    const rows: ServeRow[] = [];
    let gpuMetrics: Record<string, number> = {};
    try {
      const deployed = await deployFolder(new Hearth({ url: node.url }), folder, cuda ? {} : { device: 'cpu' });
      console.log(
        `deployed resnet50 v${deployed.version}: ${deployed.status}${deployed.notes.length ? ` (${deployed.notes.join('; ')})` : ''}`,
      );
      if (deployed.status !== 'ready') throw new Error(`the deploy ended ${deployed.status}: ${deployed.reason ?? ''}`);
      const image = Float32Array.from({ length: 3 * 224 * 224 }, (_, i) => Math.sin(i) * 0.5);
      const http = kserveBinary('INPUT__0', [1, 3, 224, 224], image);
      const inferUrl = `${node.url}/v2/models/resnet50/infer`;
      // Warm-up: both instances run batches (of every preferred size, unless --quick).
      await httpLoad(inferUrl, http.body, http.headers, o.quick ? 2 : 16, Math.min(5, o.seconds));
      const routes = {
        'kserve-binary-http': (c: number, s: number) => httpLoad(inferUrl, http.body, http.headers, c, s),
        grpc: (c: number, s: number) =>
          grpcLoad(node.grpc, { model: 'resnet50', input: 'INPUT__0', shape: [1, 3, 224, 224], data: image }, c, s),
      } satisfies Record<ServeRow['route'], (c: number, s: number) => Promise<LoadResult>>;
      for (const [route, load] of Object.entries(routes) as [
        ServeRow['route'],
        (c: number, s: number) => Promise<LoadResult>,
      ][]) {
        for (const c of levels) {
          const before = await counts(node.url);
          const r = await load(c, o.seconds);
          const after = await counts(node.url);
          const executions = after.executions - before.executions;
          const row: ServeRow = {
            route,
            concurrency: c,
            req_per_s: round(r.rps),
            p50_ms: round(r.p50, 3),
            p99_ms: round(r.p99, 3),
            mean_batch: executions > 0 ? round((after.inferences - before.inferences) / executions, 2) : 0,
            errors: r.errors,
          };
          rows.push(row);
          console.log(
            `${route} c=${c}: ${row.req_per_s} req/s, p50 ${row.p50_ms} ms, p99 ${row.p99_ms} ms, mean batch ${row.mean_batch}, errors ${row.errors}`,
          );
        }
      }
      // Triton's GPU metric names, as the node exports them (none without a GPU).
      const text = await (await fetch(node.metrics)).text();
      gpuMetrics = Object.fromEntries(
        text
          .split('\n')
          .filter((l) => l.startsWith('nv_gpu_'))
          .map((l) => {
            const at = l.lastIndexOf(' ');
            return [l.slice(0, at), Number(l.slice(at + 1))];
          }),
      );
    } finally {
      await node.stop();
    }

    const top = Math.max(...levels);
    const at = (route: ServeRow['route'], c: number) => rows.find((r) => r.route === route && r.concurrency === c)!;
    const b1Latency = reference.latency_ms['1']!;
    const result = {
      device: o.device,
      config: SEED_CONFIG,
      seconds: o.seconds,
      threads: o.threads,
      rows,
      raw_b1_per_s: reference.per_s['1'],
      raw_b16_per_s: reference.per_s['16'],
      raw_best_per_s: reference.best_per_s,
      raw_best_batch: reference.best_batch,
      raw_per_s: reference.per_s,
      raw_b1_latency_ms: b1Latency,
      seed_reference: { b1_per_s: 200, b16_per_s: 1500 },
      ratios: {
        [`http_c${top}_vs_raw_best`]: round(at('kserve-binary-http', top).req_per_s / reference.best_per_s, 3),
        [`grpc_c${top}_vs_raw_best`]: round(at('grpc', top).req_per_s / reference.best_per_s, 3),
        http_c1_p50_minus_raw_b1_ms: round(at('kserve-binary-http', 1).p50_ms - b1Latency, 3),
        grpc_c1_p50_minus_raw_b1_ms: round(at('grpc', 1).p50_ms - b1Latency, 3),
      },
      targets: { c64_vs_raw_best: 0.9, c1_p50_minus_raw_b1_ms: 1 },
      gpu_metrics: gpuMetrics,
    };
    writeFileSync(join(o.out, 'gpu-serve.json'), `${JSON.stringify(result, null, 2)}\n`);
    console.log(
      `ratios: ${JSON.stringify(result.ratios)} (targets: c=64 ≥ 0.9 × raw best; c=1 p50 within 1 ms of raw batch 1)`,
    );
    console.log(`gpu metrics: ${Object.keys(gpuMetrics).length ? JSON.stringify(gpuMetrics) : 'none (no GPU)'}`);
    return result;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const here = dirname(fileURLToPath(import.meta.url));
  const { values } = parseArgs({
    options: {
      model: { type: 'string' },
      device: { type: 'string', default: 'cpu' },
      seconds: { type: 'string', default: '10' },
      quick: { type: 'boolean', default: false },
      out: { type: 'string', default: process.env.OUT ?? '.' },
      python: { type: 'string', default: process.env.HEARTH_PYTHON ?? 'python3' },
      threads: { type: 'string', default: String(availableParallelism()) },
      concurrency: { type: 'string' },
    },
  });
  if (!values.model) throw new Error('--model <resnet50.pt> is required');
  await seedBench({
    model: resolve(values.model),
    device: values.device!,
    seconds: Number(values.quick ? Math.min(2, Number(values.seconds)) : values.seconds),
    quick: values.quick!,
    out: resolve(values.out!),
    python: values.python!,
    threads: Number(values.threads),
    main: join(here, 'main.mjs'),
    rawScript: join(here, 'engine_python.py'),
    ...(values.concurrency ? { concurrency: values.concurrency.split(',').map(Number) } : {}),
  });
}
