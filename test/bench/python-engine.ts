/** Runs bench:engine's python3-torch reference (./engine_python.py): one measure per model and batch. */
import { execFileSync } from 'node:child_process';

export interface PythonMeasure {
  model: string;
  batch: number;
  per_s: number;
  iters: number;
  seconds: number;
}

/** `rows` as [model file name without .pt, batch]; the script prints one JSON line each. */
export function pythonEngine(o: {
  python: string;
  script: string;
  models: string;
  rows: [string, number][];
  threads: number;
  seconds: number;
  device: string;
  /** Timed iterations at least, and untimed ones first (the script's defaults: 3 and 3). */
  minIters?: number;
  warmup?: number;
}): PythonMeasure[] {
  const stdout = execFileSync(
    o.python,
    [
      o.script,
      '--models',
      o.models,
      '--rows',
      o.rows.map(([m, b]) => `${m}:${b}`).join(','),
      '--threads',
      String(o.threads),
      '--seconds',
      String(o.seconds),
      '--device',
      o.device,
      ...(o.minIters === undefined ? [] : ['--min-iters', String(o.minIters)]),
      ...(o.warmup === undefined ? [] : ['--warmup', String(o.warmup)]),
    ],
    { maxBuffer: 1 << 24, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  return stdout
    .toString()
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as PythonMeasure);
}
