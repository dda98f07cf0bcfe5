/**
 * bench:serve — Hearth against the traditional deployment of the same TorchScript model: Flask
 * under gunicorn (2 workers) and FastAPI under uvicorn (2 workers), python3-torch, one request per
 * forward. Each is driven by autocannon (closed loop) at concurrency 1, 16 and 64, for the MLP
 * (JSON body of 1024 floats, the same body for every server) and ResNet-50 (raw FP32 image bytes).
 * Extra MLP rows: Hearth's KServe binary extension and gRPC raw_input_contents. The engine's best
 * batch throughput for each model is measured first, in the same run.
 *
 * Writes test/bench/results/serve.json: {engine_best_per_s, rows: [{model, concurrency, server,
 * req_per_s, p50_ms, p99_ms}]}. Flags: --quick (short cells), --seconds S.
 */

import type { ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';

import { loadModel, setIntraOpThreads } from '../../runtime/index.js';
import { ensureModels, modelPath } from '../helpers/fixtures.js';
import { spawnNode } from '../helpers/node.js';
import { afterSpareBoots, deployWithHook, MLP_SPEC, RESNET_SPEC } from './deploy.js';
import { engineBestBatch, randomRows as floats } from './engine-reference.js';
import { benchFlags, round } from './flags.js';
import { cannon, grpcLoad, kserveBinary, stop } from './load.js';
import { startPeer, waitForPort } from './python-peers.js';

const flags = benchFlags('serve');
const { seconds } = flags;
const CONCURRENCY = [1, 16, 64];
const threads = availableParallelism();

interface Row {
  model: string;
  concurrency: number;
  server: string;
  req_per_s: number;
  p50_ms: number;
  p99_ms: number;
  errors: number;
}

/**
 * A cell's length. ResNet-50 at c=64 answers in ~6 s here: in a 10 s cell the 64 requests still in
 * flight at its end are work done and not counted, about a third of the cell, so it runs 30 s.
 */
function cellSeconds(model: 'mlp' | 'resnet50', c: number): number {
  if (model === 'mlp') return seconds;
  return c >= 64 ? seconds * 6 : seconds * 2;
}

async function engineBest(model: 'mlp' | 'resnet50'): Promise<number> {
  setIntraOpThreads(threads);
  const rowShape = model === 'mlp' ? [1024] : [3, 224, 224];
  const warm = {
    dtype: 'FP32' as const,
    shape: [1, ...rowShape],
    data: floats(
      rowShape.reduce((a, b) => a * b, 1),
      1,
    ),
  };
  const m = await loadModel(modelPath(model), { warmup: { inputs: [warm], runs: 3 } });
  const { best } = await engineBestBatch(
    m,
    rowShape,
    // ResNet-50 on a CPU runs no faster per row in a batch (python3-torch, 2 threads, this
    // machine: 9.98 rows/s at batch 1, 9.29 at 4, 9.81 at 8): batch 1 is among its candidates.
    model === 'mlp' ? [32, 64] : [1, 8, 16],
    model === 'mlp' ? 2000 : 6000,
  );
  m.dispose();
  return best;
}

function startServePeer(kind: 'flask' | 'fastapi', model: 'mlp' | 'resnet50', port: number): ChildProcess {
  const env = { PEER_MODEL: modelPath(model), PEER_KIND: model === 'mlp' ? 'mlp' : 'resnet' };
  return kind === 'flask'
    ? startPeer('gunicorn', 'flask_app:app', port, env)
    : startPeer('uvicorn', 'fastapi_app:app', port, env);
}

async function main(): Promise<void> {
  ensureModels();
  console.log(
    `bench:serve — ${threads} cores, ${seconds}s per cell; measuring the engine's best batch throughput first`,
  );
  const engine = { mlp: await engineBest('mlp'), resnet50: await engineBest('resnet50') };
  console.log(`engine best: MLP ${round(engine.mlp)} rows/s, ResNet-50 ${round(engine.resnet50)} rows/s`);

  const dir = await mkdtemp(join(tmpdir(), 'hearth-bench-serve-'));
  const hearth = await spawnNode(join(dir, 'data'));
  const rows: Row[] = [];
  try {
    await deployWithHook(hearth.url, MLP_SPEC, 'mlp', 'mlp-json', dir);
    await deployWithHook(hearth.url, RESNET_SPEC, 'resnet50', 'resnet-binary', dir);
    await afterSpareBoots();

    const mlpX = floats(1024, 7);
    const mlpBody = JSON.stringify({ inputs: Array.from(mlpX) });
    const resnetBody = new Uint8Array(floats(3 * 224 * 224, 8).buffer);
    const record = (
      model: string,
      server: string,
      concurrency: number,
      r: { rps: number; p50: number; p99: number; errors: number },
    ): void => {
      const row = {
        model,
        concurrency,
        server,
        req_per_s: round(r.rps),
        p50_ms: round(r.p50, 2),
        p99_ms: round(r.p99, 2),
        errors: r.errors,
      };
      rows.push(row);
      console.log(
        `  ${model.padEnd(9)} ${server.padEnd(15)} c=${String(concurrency).padStart(2)}  ${row.req_per_s.toFixed(1).padStart(8)} req/s  p50 ${row.p50_ms.toFixed(1).padStart(7)} ms  p99 ${row.p99_ms.toFixed(1).padStart(7)} ms${r.errors ? `  errors ${r.errors}` : ''}`,
      );
    };

    // Each server is measured alone: a peer is started for its turn and stopped after it.
    for (const model of ['mlp', 'resnet50'] as const) {
      const body = model === 'mlp' ? mlpBody : resnetBody;
      const type = { 'content-type': model === 'mlp' ? 'application/json' : 'application/octet-stream' };
      const servers: ['hearth' | 'flask-gunicorn' | 'fastapi-uvicorn', number][] = [
        ['hearth', 0],
        ['flask-gunicorn', 18000 + Math.floor(Math.random() * 500)],
        ['fastapi-uvicorn', 18600 + Math.floor(Math.random() * 500)],
      ];
      for (const [server, port] of servers) {
        const child =
          server === 'hearth'
            ? undefined
            : startServePeer(server === 'flask-gunicorn' ? 'flask' : 'fastapi', model, port);
        const url = child ? `http://127.0.0.1:${port}/predict` : `${hearth.url}/fn/${model}`;
        try {
          if (child) await waitForPort(url, child, server);
          await cannon(url, body, type, 4, model === 'mlp' ? 1 : 3); // warm-up
          for (const c of CONCURRENCY)
            record(model, server, c, await cannon(url, body, type, c, cellSeconds(model, c)));
        } finally {
          if (child) await stop(child);
        }
      }
    }

    // The MLP through Hearth's KServe binary extension and gRPC raw_input_contents.
    const { body: binary, headers: kserve } = kserveBinary('x', [1, 1024], mlpX);
    const mlpGrpc = { model: 'mlp', input: 'x', shape: [1, 1024], data: mlpX };
    await cannon(`${hearth.url}/v2/models/mlp/infer`, binary, kserve, 4, 1);
    for (const c of CONCURRENCY)
      record(
        'mlp',
        'hearth-kserve-binary',
        c,
        await cannon(`${hearth.url}/v2/models/mlp/infer`, binary, kserve, c, seconds),
      );
    await grpcLoad(hearth.grpc, mlpGrpc, 4, 1);
    for (const c of CONCURRENCY) record('mlp', 'hearth-grpc-raw', c, await grpcLoad(hearth.grpc, mlpGrpc, c, seconds));
  } finally {
    await stop(hearth.child);
    await rm(dir, { recursive: true, force: true });
  }

  const at = (model: string, server: string, c = 64) =>
    rows.find((r) => r.model === model && r.server === server && r.concurrency === c)!;
  const check = (label: string, ok: boolean, detail: string): void =>
    console.log(`  ${ok ? 'met   ' : 'MISSED'} ${label}: ${detail}`);
  console.log('\ntargets at concurrency 64:');
  const ofEngine: [label: string, model: 'mlp' | 'resnet50', server: string, target: number][] = [
    ['MLP binary', 'mlp', 'hearth-kserve-binary', 0.8],
    ['MLP gRPC', 'mlp', 'hearth-grpc-raw', 0.8],
    ['MLP JSON function URL', 'mlp', 'hearth', 0.6],
    ['ResNet-50', 'resnet50', 'hearth', 0.9],
  ];
  for (const [label, model, server, target] of ofEngine) {
    const ratio = at(model, server).req_per_s / engine[model];
    check(`${label} ≥ ${target} × engine best`, ratio >= target, `${round(ratio, 3)}`);
  }
  const flask = at('mlp', 'flask-gunicorn');
  check(
    'MLP ≥ 5 × Flask throughput',
    at('mlp', 'hearth').req_per_s >= 5 * flask.req_per_s,
    `${round(at('mlp', 'hearth').req_per_s / flask.req_per_s, 2)}×`,
  );
  check(
    "MLP p99 ≤ 1/3 of Flask's",
    at('mlp', 'hearth').p99_ms <= flask.p99_ms / 3,
    `${at('mlp', 'hearth').p99_ms} ms vs ${flask.p99_ms} ms`,
  );
  // Issue 13's: the path around the engine no slower than Flask anywhere.
  console.log('\ntargets of the path around the engine:');
  for (const c of [16, 64]) {
    const ratio = at('resnet50', 'hearth', c).req_per_s / at('resnet50', 'flask-gunicorn', c).req_per_s;
    check(`ResNet-50 c=${c} ≥ 1.2 × Flask`, ratio >= 1.2, `${round(ratio, 2)}×`);
  }
  const ofBest = Math.max(...[16, 64].map((c) => at('resnet50', 'hearth', c).req_per_s)) / engine.resnet50;
  check('ResNet-50 ≥ 0.8 × engine best (best of c=16, 64)', ofBest >= 0.8, `${round(ofBest, 3)}`);
  const lone = at('mlp', 'hearth', 1);
  const loneFlask = at('mlp', 'flask-gunicorn', 1);
  check(
    'MLP c=1 ≥ 1.0 × Flask in throughput and p50',
    lone.req_per_s >= loneFlask.req_per_s && lone.p50_ms <= loneFlask.p50_ms,
    `${round(lone.req_per_s / loneFlask.req_per_s, 2)}×, p50 ${lone.p50_ms} ms vs ${loneFlask.p50_ms} ms`,
  );
  mkdirSync(join(flags.out, '..'), { recursive: true });
  writeFileSync(
    flags.out,
    `${JSON.stringify({ engine_best_per_s: { mlp: round(engine.mlp), resnet50: round(engine.resnet50) }, threads, seconds, rows }, null, 2)}\n`,
  );
  console.log(`\nwrote ${flags.out}`);
}

await main();
