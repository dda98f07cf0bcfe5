import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';

import { describe, expect, it } from 'vitest';

import { DEFAULT_ADDON_PATH } from '../../../runtime/engine/binding.js';
import { loadModel } from '../../../runtime/engine/index.js';
import { modelPath } from '../../helpers/fixtures.js';
import { maxAbsDiff } from '../../helpers/random.js';
import { pythonForward } from '../../helpers/reference.js';

const script = fileURLToPath(new URL('./workers/engine-worker.mjs', import.meta.url));
const input = [0.5, -1, 2, 0.25, 1, 1, -3, 0];

function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no ${what} after ${ms} ms`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

function start(thenSpin: boolean): Worker {
  return new Worker(script, {
    workerData: {
      addon: process.env.HEARTH_NATIVE_ADDON ?? DEFAULT_ADDON_PATH,
      model: modelPath('small'),
      slow: modelPath('slow'),
      input,
      thenSpin,
    },
  });
}

describe('the addon in worker threads', () => {
  it('loads and runs a model inside a worker and transfers the output buffer out', async () => {
    const worker = start(false);
    // Listened for from the start: a worker that exits right after its message can have both
    // handled in one turn of this thread (Node drains the worker's port, then emits 'exit'), so a
    // listener added once the message came missed the exit — the hang seen under load.
    const exited = new Promise((resolve) => worker.once('exit', resolve));
    // Each step fails on its own after 30 s, naming itself (the test's own timeout would not).
    const message = await within(
      30_000,
      "the worker's result",
      new Promise<{ shape: number[]; data: Float32Array }>((resolve, reject) => {
        worker.once('message', resolve);
        worker.once('error', reject);
      }),
    );
    await within(30_000, 'the worker to exit', exited);
    const ref = pythonForward(modelPath('small'), [{ dtype: 'FP32', shape: [2, 4], data: new Float32Array(input) }]);
    expect(message.shape).toEqual([2, 3]);
    expect(maxAbsDiff(message.data, ref.outputs[0]!.data as Float32Array)).toBeLessThan(1e-6);
  });

  it('survives a worker terminated while its forwards run, and keeps serving here', async () => {
    const worker = start(true);
    await new Promise<void>((resolve, reject) => {
      worker.on('message', (m) => m === 'spinning' && resolve());
      worker.once('error', reject);
    });
    await new Promise((r) => setTimeout(r, 50));
    const code = await worker.terminate();
    expect(code).toBe(1);
    const model = await loadModel(modelPath('small'));
    const out = await model.forward([{ dtype: 'FP32', shape: [2, 4], data: new Float32Array(input) }]);
    expect(out.outputs[0]!.shape).toEqual([2, 3]);
  });
});
