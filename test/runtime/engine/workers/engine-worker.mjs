// Loads the addon inside a worker thread, runs forwards, and reports back. Plain JS on purpose:
// the worker runs under plain Node, without the test runner's TypeScript loader.
import { createRequire } from 'node:module';
import { parentPort, workerData } from 'node:worker_threads';

const addon = createRequire(import.meta.url)(workerData.addon);
const model = await addon.load(workerData.model, 'cpu', [], 0);
const x = { dtype: 'FP32', shape: [2, 4], data: new Float32Array(workerData.input) };
const result = await model.forward([x]);
const out = result.outputs[0];
// The output buffer is transferred, not copied, back to the parent.
parentPort.postMessage({ shape: out.shape, data: out.data }, [out.data.buffer]);
if (workerData.thenSpin) {
  // Keep forwards running while the parent terminates this worker.
  const slow = await addon.load(workerData.slow, 'cpu', [], 0);
  const big = { dtype: 'FP32', shape: [64, 512], data: new Float32Array(64 * 512).fill(0.1) };
  const n = { dtype: 'INT64', shape: [], data: new BigInt64Array([3000n]) };
  parentPort.postMessage('spinning');
  await Promise.all([slow.forward([big, n]), slow.forward([big, n])]);
}
