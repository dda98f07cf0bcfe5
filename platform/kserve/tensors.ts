/**
 * KServe v2 tensors, as both transports carry them (HTTP: ../http/kserve-body.ts, gRPC:
 * ../grpc/tensors.ts): the checks on an input's name, datatype and shape, raw bytes into a tensor of
 * its own aligned buffer, JSON values into a tensor — each failure the caller's bad input — and the
 * outputs a response carries.
 */

import type { SequenceFlags } from '../../runtime/index.js';
import { InvalidInputError } from '../../sdk/errors.js';
import type { FunctionSpec } from '../../sdk/spec/function-spec.js';
import type { DType, Tensor, TensorsByName } from '../../sdk/tensor.js';
import { allocate, elementSize, isDType, numel, viewAs } from '../../sdk/tensor.js';
import { checkBytes, encodeBytes } from '../../sdk/tensor-bytes.js';
import { tensorFromJson } from '../../sdk/tensor-json.js';
import { classify } from './classification.js';

/** The input's datatype and shape, checked; `where` names it in messages. */
export function inputHead(
  tensors: TensorsByName,
  input: { name: string; datatype: string; shape: unknown[] },
  where: string,
): { dtype: DType; shape: number[] } {
  if (!isDType(input.datatype))
    throw new InvalidInputError(`${where}.datatype "${input.datatype}" is not a KServe v2 datatype`, {
      reason: 'ERR_DTYPE',
    });
  const shape = input.shape.map(Number);
  if (shape.some((d) => !Number.isSafeInteger(d) || d < 0))
    throw new InvalidInputError(`${where}.shape must be a list of non-negative integers below 2^53`, {
      reason: 'ERR_SHAPE',
    });
  if (tensors[input.name]) throw new InvalidInputError(`input "${input.name}" is given twice`);
  return { dtype: input.datatype as DType, shape };
}

/** Refuses `byteLength` bytes for a tensor of `shape` × `dtype` (not BYTES) unless they are exactly that. */
export function checkRawSize(name: string, dtype: DType, shape: number[], byteLength: number, field: string): void {
  const expected = numel(shape) * elementSize(dtype);
  if (byteLength !== expected) {
    throw new InvalidInputError(
      `input "${name}": ${field} has ${byteLength} bytes but shape [${shape.join(', ')}] × ${dtype} needs ${expected}`,
      { reason: 'ERR_SHAPE' },
    );
  }
}

/** Bytes that must be exactly shape × dtype, copied once into an aligned buffer (they may sit at any offset). */
export function tensorFromRaw(name: string, dtype: DType, shape: number[], bytes: Uint8Array, field: string): Tensor {
  if (dtype === 'BYTES') {
    try {
      checkBytes(bytes, numel(shape));
    } catch (error) {
      throw new InvalidInputError(`input "${name}": ${field}: ${(error as Error).message}`, { reason: 'ERR_SHAPE' });
    }
    return { dtype, shape, data: new Uint8Array(bytes) };
  }
  checkRawSize(name, dtype, shape, bytes.byteLength, field);
  // Read in place where its elements are aligned (a body read for it: platform/http/hot/read-body.ts);
  // copied where they are not. A 602 KB image copied here cost the in-process path a third of its
  // time at c=1 (copy and collection).
  if (bytes.byteOffset % elementSize(dtype) === 0) return { dtype, shape, data: viewAs(dtype, bytes) } as Tensor;
  const data = allocate(dtype, numel(shape));
  new Uint8Array(data.buffer).set(bytes);
  return { dtype, shape, data } as Tensor;
}

/** Flat JSON values in the given shape. */
export function tensorFromValues(dtype: DType, values: ArrayLike<unknown>, shape: number[], where: string): Tensor {
  if (dtype === 'BYTES') {
    if (values.length !== numel(shape))
      throw new InvalidInputError(`${where}: ${values.length} string(s) for shape [${shape.join(', ')}]`, {
        reason: 'ERR_SHAPE',
      });
    const elements = Array.from(values, (v, i) => {
      if (typeof v === 'string' || v instanceof Uint8Array) return v;
      throw new InvalidInputError(`${where}[${i}] must be a string for a BYTES input`, { reason: 'ERR_DTYPE' });
    });
    return { dtype, shape, data: encodeBytes(elements) };
  }
  try {
    return tensorFromJson(dtype, values, shape, where);
  } catch (error) {
    throw new InvalidInputError((error as Error).message, { reason: 'ERR_SHAPE' });
  }
}

/** An output a request asks for: by name, optionally as a classification (Triton's extension). */
export interface RequestedOutput {
  name: string;
  classification?: number;
  /** Its other parameters, unwrapped (binary_data, shared memory). */
  parameters?: Record<string, unknown>;
}

/** An output a response carries, with what the request asked of it (when it named outputs). */
export interface SelectedOutput {
  name: string;
  tensor: Tensor;
  asked?: RequestedOutput;
}

/**
 * The outputs a response carries, in order: those asked for (all the spec's when none are), each
 * turned into its classification when the request asks for one.
 */
export function selectOutputs(
  outputs: TensorsByName,
  spec: FunctionSpec,
  requested: readonly RequestedOutput[],
): SelectedOutput[] {
  const asked = requested.length > 0;
  const wanted: readonly RequestedOutput[] = asked ? requested : spec.outputs.map((o) => ({ name: o.name }));
  return wanted.map((w) => {
    const t = outputs[w.name];
    const declared = spec.outputs.find((o) => o.name === w.name);
    if (!t || !declared)
      throw new InvalidInputError(`unexpected inference output '${w.name}' for model '${spec.name}'`);
    const tensor =
      w.classification === undefined ? t : classify(t, declared, Number(w.classification), spec.maxBatchSize > 0);
    return { name: w.name, tensor, ...(asked ? { asked: w } : {}) };
  });
}

/**
 * Triton's sequence parameters (sequence_id, sequence_start, sequence_end), from an infer
 * request's parameters as either transport carries them; undefined when the request names no sequence.
 */
export function sequenceFlags(parameters: Record<string, unknown> | undefined): SequenceFlags | undefined {
  const raw = parameters?.sequence_id;
  if (raw === undefined || raw === 0 || raw === 0n || raw === '') {
    if (parameters?.sequence_start === true || parameters?.sequence_end === true)
      throw new InvalidInputError('sequence_start and sequence_end need a non-zero or non-empty sequence_id');
    return undefined;
  }
  let id: bigint | string;
  if (typeof raw === 'bigint') {
    if (raw < 0n) throw new InvalidInputError('sequence_id must be a non-negative integer or a string');
    id = raw;
  } else if (typeof raw === 'number') {
    if (!Number.isSafeInteger(raw) || raw < 0)
      throw new InvalidInputError('sequence_id must be a non-negative integer or a string');
    id = BigInt(raw);
  } else if (typeof raw === 'string') {
    if (raw.length > 256) throw new InvalidInputError('sequence_id strings are at most 256 characters');
    id = raw;
  } else {
    throw new InvalidInputError('sequence_id must be a non-negative integer or a string');
  }
  const flag = (name: string): boolean => {
    const v = parameters?.[name];
    if (v === undefined) return false;
    if (typeof v !== 'boolean') throw new InvalidInputError(`${name} must be true or false`);
    return v;
  };
  return { id, start: flag('sequence_start'), end: flag('sequence_end') };
}
