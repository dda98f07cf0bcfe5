import { readFileSync } from 'node:fs';

import { describe, expect, it } from 'vitest';

import { loadModel } from '../../../runtime/engine/index.js';
import {
  DeviceUnavailableError,
  DisposedError,
  HearthError,
  InferenceError,
  InvalidInputError,
  ModelLoadError,
} from '../../../sdk/errors.js';
import { modelPath } from '../../helpers/fixtures.js';
import { randomTensor } from '../../helpers/random.js';

async function failure(promise: Promise<unknown>): Promise<HearthError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(HearthError);
    return error as HearthError;
  }
  throw new Error('expected a failure');
}

describe('engine errors', () => {
  it('refuses a truncated .pt with ModelLoadError', async () => {
    const bytes = readFileSync(modelPath('mlp'));
    const error = await failure(loadModel(new Uint8Array(bytes.subarray(0, bytes.length >> 1))));
    expect(error).toBeInstanceOf(ModelLoadError);
    expect(error.reason).toBe('ERR_MODEL_LOAD');
  });

  it('refuses a random file with ModelLoadError', async () => {
    const junk = new Uint8Array(4096).map((_, i) => (i * 7919) & 0xff);
    expect(await failure(loadModel(junk))).toBeInstanceOf(ModelLoadError);
    expect(await failure(loadModel('/etc/hostname'))).toBeInstanceOf(ModelLoadError);
    expect(await failure(loadModel('/nonexistent/model.pt'))).toBeInstanceOf(ModelLoadError);
  });

  it('refuses a zip that is not TorchScript with ModelLoadError', async () => {
    // A valid zip archive holding one text file.
    const zip = Buffer.from(
      'UEsDBAoAAAAAAAAAIQAAAAAAAAAAAAAAAAAFAAAAYS50eHRQSwECFAAKAAAAAAAAACEAAAAAAAAAAAAAAAAABQAAAAAAAAAAAAAAAAAAAAAAYS50eHRQSwUGAAAAAAEAAQAzAAAAIwAAAAAA',
      'base64',
    );
    expect(await failure(loadModel(new Uint8Array(zip)))).toBeInstanceOf(ModelLoadError);
  });

  it('refuses an unknown or absent device with DeviceUnavailableError', async () => {
    expect(await failure(loadModel(modelPath('small'), { device: 'tpu:0' }))).toBeInstanceOf(DeviceUnavailableError);
    expect(await failure(loadModel(modelPath('small'), { device: 'cuda:99' }))).toBeInstanceOf(DeviceUnavailableError);
  });

  it('reports a warm-up that fails as a load failure', async () => {
    const bad = randomTensor('FP32', [1, 10], 1);
    const error = await failure(loadModel(modelPath('mlp'), { warmup: { inputs: [bad] } }));
    expect(error).toBeInstanceOf(ModelLoadError);
    expect(error.message).toMatch(/warm-up/);
  });

  it('rejects the wrong number of inputs before LibTorch runs', async () => {
    const model = await loadModel(modelPath('add_mul'));
    const error = await failure(model.forward([randomTensor('FP32', [2], 1)]));
    expect(error).toBeInstanceOf(InvalidInputError);
    expect(error.reason).toBe('ERR_INPUT_COUNT');
    expect(error.message).toMatch(/takes 2 input/);
  });

  it('rejects a shape the model cannot take as ERR_SHAPE', async () => {
    const model = await loadModel(modelPath('mlp'));
    const error = await failure(model.forward([randomTensor('FP32', [1, 10], 1)]));
    expect(error).toBeInstanceOf(InvalidInputError);
    expect(error.reason).toBe('ERR_SHAPE');
    expect(error.message).toMatch(/^mat1 and mat2 shapes cannot be multiplied/);
  });

  it('rejects a dtype the model cannot take as ERR_DTYPE', async () => {
    const model = await loadModel(modelPath('mlp'));
    const error = await failure(model.forward([randomTensor('FP64', [1, 1024], 1)]));
    expect(error).toBeInstanceOf(InvalidInputError);
    expect(error.reason).toBe('ERR_DTYPE');
  });

  it('rejects data whose byte size is not shape × dtype, and an unknown dtype', async () => {
    const model = await loadModel(modelPath('small'));
    const short = await failure(model.forward([{ dtype: 'FP32', shape: [2, 4], data: new Float32Array(7) }]));
    expect(short).toBeInstanceOf(InvalidInputError);
    expect(short.message).toMatch(/28 bytes but shape \[2, 4\] of FP32 needs 32/);
    const unknown = await failure(model.forward([{ dtype: 'FP8' as 'FP32', shape: [1], data: new Float32Array(1) }]));
    expect(unknown.reason).toBe('ERR_DTYPE');
    const negative = await failure(model.forward([{ dtype: 'FP32', shape: [-1, 4], data: new Float32Array(4) }]));
    expect(negative.reason).toBe('ERR_SHAPE');
    const notArray = await failure(
      model.forward([{ dtype: 'FP32', shape: [4], data: [1, 2, 3, 4] as unknown as Float32Array }]),
    );
    expect(notArray.reason).toBe('ERR_INVALID_ARGUMENT');
  });

  it('turns an exception raised inside the model into InferenceError with its message', async () => {
    const model = await loadModel(modelPath('fails'));
    const error = await failure(model.forward([{ dtype: 'FP32', shape: [2], data: new Float32Array([-1, -2]) }]));
    expect(error).toBeInstanceOf(InferenceError);
    expect(error.message).toMatch(/negative input is not allowed/);
    // and the model keeps working
    const ok = await model.forward([{ dtype: 'FP32', shape: [2], data: new Float32Array([1, 2]) }]);
    expect(Array.from(ok.outputs[0]!.data as Float32Array)).toEqual([1, 2]);
  });

  it('refuses an output that is not a tensor with InferenceError', async () => {
    const model = await loadModel(modelPath('not_tensor'));
    const error = await failure(model.forward([randomTensor('FP32', [3], 1)]));
    expect(error).toBeInstanceOf(InferenceError);
    expect(error.reason).toBe('ERR_OUTPUT');
  });

  it('refuses use after dispose with DisposedError, and dispose is idempotent', async () => {
    const model = await loadModel(modelPath('small'));
    model.dispose();
    model.dispose();
    expect(await failure(model.forward([randomTensor('FP32', [1, 4], 1)]))).toBeInstanceOf(DisposedError);
    expect(() => model.share()).toThrow(DisposedError);
    expect(() => model.info).toThrow(DisposedError);
  });

  it('lets forwards in flight finish when the model is disposed under them', async () => {
    const model = await loadModel(modelPath('slow'));
    const x = randomTensor('FP32', [4, 512], 3);
    const iters = { dtype: 'INT64' as const, shape: [], data: new BigInt64Array([200n]) };
    const running = [1, 2, 3].map(() => model.forward([x, iters]));
    model.dispose();
    const results = await Promise.all(running);
    for (const r of results) expect(r.outputs[0]!.shape).toEqual([4, 512]);
    expect(await failure(model.forward([x, iters]))).toBeInstanceOf(DisposedError);
  });
});
