/**
 * What `npm start` runs until the server lands (platform issue): load ResNet-50 through the native
 * engine, warm it up, and print a prediction for a synthetic image.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { devices, loadModel, setIntraOpThreads } from '../../runtime/index.js';
import type { Tensor } from '../../sdk/index.js';

const DEFAULT_MODEL = join(fileURLToPath(new URL('../..', import.meta.url)), '.fixtures', 'models', 'resnet50.pt');

/** A 224×224 RGB gradient, normalised with ImageNet's mean and std, in NCHW. */
function syntheticImage(): Tensor<'FP32'> {
  const mean = [0.485, 0.456, 0.406];
  const std = [0.229, 0.224, 0.225];
  const data = new Float32Array(3 * 224 * 224);
  for (let c = 0; c < 3; c++) {
    for (let y = 0; y < 224; y++) {
      for (let x = 0; x < 224; x++) {
        const value = c === 0 ? x / 223 : c === 1 ? y / 223 : 0.5;
        data[c * 224 * 224 + y * 224 + x] = (value - mean[c]!) / std[c]!;
      }
    }
  }
  return { dtype: 'FP32', shape: [1, 3, 224, 224], data };
}

export async function runDemo(modelPath = process.env.HEARTH_DEMO_MODEL ?? DEFAULT_MODEL): Promise<void> {
  const report = devices();
  const cpu = report.devices[0]!;
  setIntraOpThreads(Math.max(1, (await import('node:os')).availableParallelism()));
  console.log(
    `Hearth engine: LibTorch ${report.torchVersion}; ${cpu.name}; CUDA ${report.cudaAvailable ? `${report.cudaDeviceCount} device(s)` : 'not available'}`,
  );

  const image = syntheticImage();
  const device = report.cudaAvailable ? 'cuda:0' : 'cpu';
  const model = await loadModel(modelPath, { device, warmup: { inputs: [image], runs: 3 } });
  const info = model.info;
  console.log(
    `loaded ${modelPath} on ${info.device}: load ${info.loadMs.toFixed(0)} ms, warm-up ${info.warmupRuns} passes ${info.warmupMs.toFixed(0)} ms, weights ${(info.weightBytes / 1e6).toFixed(1)} MB`,
  );

  const started = performance.now();
  const { outputs } = await model.forward([image]);
  const elapsed = performance.now() - started;
  const logits = outputs[0]!.data as Float32Array;
  const max = Math.max(...logits);
  const exps = Array.from(logits, (v) => Math.exp(v - max));
  const sum = exps.reduce((a, b) => a + b, 0);
  const top = exps
    .map((p, i) => ({ i, p: p / sum }))
    .sort((a, b) => b.p - a.p)
    .slice(0, 5);
  console.log(`prediction in ${elapsed.toFixed(1)} ms (random weights, so the classes mean nothing yet):`);
  for (const { i, p } of top) console.log(`  class ${String(i).padStart(3)}  p=${p.toFixed(4)}`);
  model.dispose();
}
