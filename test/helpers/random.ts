/** Seeded random tensors, so a failing test can be rerun on the same inputs. */
import type { EngineDType, Tensor } from '../../sdk/tensor.js';
import { allocate, numel } from '../../sdk/tensor.js';
import { floatToBFloat16, floatToHalf } from '../../sdk/tensor-json.js';

/** mulberry32: a small, well-mixed 32-bit PRNG. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function randomTensor<D extends EngineDType>(dtype: D, shape: number[], seed: number): Tensor<D> {
  const next = rng(seed);
  const n = numel(shape);
  const data = allocate(dtype, n);
  for (let i = 0; i < n; i++) {
    const r = next();
    switch (dtype) {
      case 'BOOL':
        (data as Uint8Array)[i] = r < 0.5 ? 0 : 1;
        break;
      case 'UINT8':
        (data as Uint8Array)[i] = Math.floor(r * 100);
        break;
      case 'INT8':
        (data as Int8Array)[i] = Math.floor(r * 100) - 50;
        break;
      case 'INT16':
        (data as Int16Array)[i] = Math.floor(r * 20000) - 10000;
        break;
      case 'INT32':
        (data as Int32Array)[i] = Math.floor(r * 2e9) - 1e9;
        break;
      case 'INT64':
        (data as BigInt64Array)[i] = BigInt(Math.floor(r * 2e15) - 1e15);
        break;
      // Multiples of 1/8 in [-4, 4): exact in FP16 and BF16, so doubling them is exact too.
      case 'FP16':
        (data as Uint16Array)[i] = floatToHalf(Math.floor(r * 64 - 32) / 8);
        break;
      case 'BF16':
        (data as Uint16Array)[i] = floatToBFloat16(Math.floor(r * 64 - 32) / 8);
        break;
      case 'FP32':
        (data as Float32Array)[i] = r * 2 - 1;
        break;
      case 'FP64':
        (data as Float64Array)[i] = r * 2 - 1;
        break;
    }
  }
  return { dtype, shape, data } as Tensor<D>;
}

/** Largest |a - b| over two float arrays. */
export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) throw new RangeError(`length ${a.length} vs ${b.length}`);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}
