/**
 * Tensors as Hearth passes them around: a dtype, a shape and a typed array over the raw,
 * little-endian elements. Hooks build and read these; the engine takes and returns them without
 * copying the bytes where it can.
 *
 * @example
 * const x = tensor('FP32', [1, 4], new Float32Array([1, 2, 3, 4]));
 */
import { InvalidInputError } from './errors.js';

/** Element types on the wire (KServe v2 names). FP16 and BF16 travel as raw 16-bit words. */
export const DTYPES = [
  'BOOL',
  'UINT8',
  'UINT16',
  'UINT32',
  'UINT64',
  'INT8',
  'INT16',
  'INT32',
  'INT64',
  'FP16',
  'BF16',
  'FP32',
  'FP64',
  'BYTES',
] as const;
export type DType = (typeof DTYPES)[number];

/** The dtypes LibTorch computes with (TorchScript has no unsigned types beyond UINT8, nor BYTES). */
export type EngineDType = Exclude<DType, 'UINT16' | 'UINT32' | 'UINT64' | 'BYTES'>;
const NOT_ENGINE: ReadonlySet<DType> = new Set(['UINT16', 'UINT32', 'UINT64', 'BYTES']);
export const ENGINE_DTYPES: readonly EngineDType[] = DTYPES.filter((d): d is EngineDType => !NOT_ENGINE.has(d));

export interface TypedArrayByDType {
  BOOL: Uint8Array;
  UINT8: Uint8Array;
  UINT16: Uint16Array;
  UINT32: Uint32Array;
  UINT64: BigUint64Array;
  INT8: Int8Array;
  INT16: Int16Array;
  INT32: Int32Array;
  INT64: BigInt64Array;
  FP16: Uint16Array;
  BF16: Uint16Array;
  FP32: Float32Array;
  FP64: Float64Array;
  BYTES: Uint8Array;
}

export type TypedArrayFor<D extends DType> = TypedArrayByDType[D];

export interface Tensor<D extends DType = DType> {
  dtype: D;
  shape: number[];
  data: TypedArrayFor<D>;
}

/** An output of a model: a tensor with the name its position or dict key gives it ("0", "1.0", "logits"). */
export interface NamedTensor<D extends DType = DType> extends Tensor<D> {
  name: string;
}

const ARRAY_TYPES: {
  [D in DType]: {
    new (buffer: ArrayBufferLike, byteOffset?: number, length?: number): TypedArrayByDType[D];
    BYTES_PER_ELEMENT: number;
  };
} = {
  BOOL: Uint8Array,
  UINT8: Uint8Array,
  UINT16: Uint16Array,
  UINT32: Uint32Array,
  UINT64: BigUint64Array,
  INT8: Int8Array,
  INT16: Int16Array,
  INT32: Int32Array,
  INT64: BigInt64Array,
  FP16: Uint16Array,
  BF16: Uint16Array,
  FP32: Float32Array,
  FP64: Float64Array,
  BYTES: Uint8Array,
};

export function isDType(value: unknown): value is DType {
  return typeof value === 'string' && (DTYPES as readonly string[]).includes(value);
}

/** Bytes per element; BYTES tensors have no fixed element size and report 1 (raw bytes). */
export function elementSize(dtype: DType): number {
  return ARRAY_TYPES[dtype].BYTES_PER_ELEMENT;
}

export function numel(shape: readonly number[]): number {
  return shape.reduce((n, d) => n * d, 1);
}

/** A typed array of the dtype's element type over `bytes` (no copy; `bytes` must be aligned). */
export function viewAs<D extends DType>(dtype: D, bytes: ArrayBufferView): TypedArrayFor<D> {
  const size = elementSize(dtype);
  if (bytes.byteLength % size !== 0) {
    throw new InvalidInputError(`${bytes.byteLength} bytes is not a whole number of ${dtype} elements`);
  }
  return new ARRAY_TYPES[dtype](bytes.buffer, bytes.byteOffset, bytes.byteLength / size);
}

/** A typed array's bytes as a byte view of the same memory (no copy): viewAs's inverse. */
export function bytesOf(data: ArrayBufferView): Uint8Array {
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

/** A new zero-filled typed array for `count` elements of `dtype`. */
export function allocate<D extends DType>(dtype: D, count: number): TypedArrayFor<D> {
  return new ARRAY_TYPES[dtype](new ArrayBuffer(count * elementSize(dtype)));
}

export function tensor<D extends DType>(dtype: D, shape: number[], data: TypedArrayFor<D>): Tensor<D> {
  const expected = numel(shape);
  if (dtype !== 'BYTES' && data.length !== expected) {
    throw new InvalidInputError(`shape [${shape.join(', ')}] needs ${expected} elements, data has ${data.length}`);
  }
  return { dtype, shape, data };
}

/** Tensors by input or output name: what a model takes and gives, with or without a hook around it. */
export type TensorsByName = Record<string, Tensor>;
