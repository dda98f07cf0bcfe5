/**
 * bench:engine — throughput of the native addon against python3-torch, the same TorchScript files,
 * the same thread count, measured in one run on this machine.
 *
 * For each model (the 8.4M-parameter MLP, ResNet-50) and batch size (1, 8, 32), each side runs a
 * closed loop after a warm-up. python3-torch runs one forward after another on its thread. The
 * addon is measured two ways on one instance (one lane, the same intra-op threads, one forward
 * executing at a time): serial, one forward in flight, each awaited before the next is sent; and
 * pipelined, two in flight, so the next forward is already queued on the lane when one finishes,
 * which is how a pool keeps an instance busy. The difference between them is the round trip to the
 * JS thread (two cross-thread wake-ups, about 0.1 ms on this VM). Rounds alternate the two sides,
 * and each side keeps its best round, so a burst of noise from a neighbour on this shared machine
 * hurts neither side more than the other.
 *
 * Writes test/bench/results/engine.json: rows {model, batch, addon_per_s, python_per_s, ratio}
 * (addon_per_s pipelined), plus addon_serial_per_s and ratio_serial.
 * Flags: --quick (under a minute), --threads N (default: all cores), --rounds N, --seconds S.
 */

import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

import type { Model } from '../../runtime/engine/index.js';
import { devices, loadModel, setIntraOpThreads } from '../../runtime/engine/index.js';
import { ensureModels, MODELS_DIR, PYTHON, REPO_ROOT } from '../helpers/fixtures.js';
import { rng } from '../helpers/random.js';
import { pythonEngine } from './python-engine.js';

const { values: flags } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    threads: { type: 'string' },
    rounds: { type: 'string' },
    seconds: { type: 'string' },
    device: { type: 'string', default: 'cpu' },
    out: { type: 'string', default: join(REPO_ROOT, 'test', 'bench', 'results', 'engine.json') },
  },
});

const quick = flags.quick;
const threads = Number(flags.threads ?? availableParallelism());
const rounds = Number(flags.rounds ?? (quick ? 1 : 3));
const seconds = Number(flags.seconds ?? (quick ? 0.4 : 2));
const device = flags.device;
const SHAPES: Record<string, number[]> = { mlp: [1024], resnet50: [3, 224, 224] };
const ROWS: [string, number][] = [
  ['mlp', 1],
  ['mlp', 8],
  ['mlp', 32],
  ['resnet50', 1],
  ['resnet50', 8],
  ['resnet50', 32],
];

interface Measure {
  per_s: number;
  iters: number;
  seconds: number;
}

function input(model: string, batch: number): Float32Array {
  const next = rng(batch);
  const data = new Float32Array(batch * SHAPES[model]!.reduce((a, b) => a * b, 1));
  for (let i = 0; i < data.length; i++) data[i] = next() * 2 - 1;
  return data;
}

async function addonRound(models: Map<string, Model>): Promise<Map<string, Measure>> {
  const out = new Map<string, Measure>();
  for (const [name, batch] of ROWS) {
    const model = models.get(name)!;
    const x = { dtype: 'FP32' as const, shape: [batch, ...SHAPES[name]!], data: input(name, batch) };
    for (let i = 0; i < 3; i++) await model.forward([x]);
    for (const depth of [1, 2]) {
      let iters = 0;
      let elapsed = 0;
      const start = performance.now();
      const client = async (): Promise<void> => {
        while (iters < 3 || elapsed < seconds) {
          await model.forward([x]);
          iters++;
          elapsed = (performance.now() - start) / 1000;
        }
      };
      await Promise.all(Array.from({ length: depth }, client));
      out.set(`${name}:${batch}:${depth}`, { per_s: (batch * iters) / elapsed, iters, seconds: elapsed });
    }
  }
  return out;
}

function pythonRound(): Map<string, Measure> {
  const out = new Map<string, Measure>();
  for (const r of pythonEngine({
    python: PYTHON,
    script: join(REPO_ROOT, 'test', 'bench', 'engine_python.py'),
    models: MODELS_DIR,
    rows: ROWS.map(([m, b]) => [m, b]),
    threads,
    seconds,
    device,
  }))
    out.set(`${r.model}:${r.batch}`, r);
  return out;
}

function best(into: Map<string, Measure>, from: Map<string, Measure>): void {
  for (const [key, m] of from) if (!into.has(key) || into.get(key)!.per_s < m.per_s) into.set(key, m);
}

async function main(): Promise<void> {
  ensureModels();
  setIntraOpThreads(threads);
  const report = devices();
  console.log(
    `bench:engine — LibTorch ${report.torchVersion}, ${report.devices[0]!.name}, ${threads} thread(s), device ${device}, ${rounds} round(s) of ≥${seconds}s per row${quick ? ' (quick)' : ''}`,
  );

  const models = new Map<string, Model>();
  for (const name of new Set(ROWS.map(([m]) => m))) {
    const x = { dtype: 'FP32' as const, shape: [1, ...SHAPES[name]!], data: input(name, 1) };
    models.set(name, await loadModel(join(MODELS_DIR, `${name}.pt`), { device, warmup: { inputs: [x], runs: 3 } }));
  }

  const addon = new Map<string, Measure>();
  const python = new Map<string, Measure>();
  for (let r = 0; r < rounds; r++) {
    // Alternate which side goes first, so neither always runs on a cooler (or hotter) machine.
    if (r % 2 === 0) {
      best(python, pythonRound());
      best(addon, await addonRound(models));
    } else {
      best(addon, await addonRound(models));
      best(python, pythonRound());
    }
  }

  const round1 = (v: number): number => Math.round(v * 10) / 10;
  const round3 = (v: number): number => Math.round(v * 1000) / 1000;
  const rows = ROWS.map(([model, batch]) => {
    const piped = addon.get(`${model}:${batch}:2`)!;
    const serial = addon.get(`${model}:${batch}:1`)!;
    const p = python.get(`${model}:${batch}`)!;
    return {
      model,
      batch,
      addon_per_s: round1(piped.per_s),
      python_per_s: round1(p.per_s),
      ratio: round3(piped.per_s / p.per_s),
      addon_serial_per_s: round1(serial.per_s),
      ratio_serial: round3(serial.per_s / p.per_s),
      threads,
      device,
    };
  });
  console.log('\nmodel      batch   addon/s   python/s   ratio   addon serial/s   ratio serial');
  for (const r of rows) {
    console.log(
      `${r.model.padEnd(10)} ${String(r.batch).padStart(5)} ${r.addon_per_s.toFixed(1).padStart(9)} ${r.python_per_s.toFixed(1).padStart(10)} ` +
        `${r.ratio.toFixed(3).padStart(7)} ${r.addon_serial_per_s.toFixed(1).padStart(16)} ${r.ratio_serial.toFixed(3).padStart(14)}${r.ratio < 1 ? '  ratio < 1.0' : ''}`,
    );
  }
  mkdirSync(join(flags.out, '..'), { recursive: true });
  writeFileSync(flags.out, `${JSON.stringify(rows, null, 2)}\n`);
  console.log(`\nwrote ${flags.out}`);
  for (const m of models.values()) m.dispose();
}

await main();
