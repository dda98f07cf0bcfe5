/**
 * Checks named tensors against the spec before anything runs: every input present and no other,
 * each dtype as declared, each shape matching the declared dims (-1 = any), the batch dimension
 * first when the model has one, and data whose size is shape × dtype. Returns the batch rows.
 */
import { InvalidInputError } from '../../sdk/errors.js';
import type { TensorSpec } from '../../sdk/spec/function-spec.js';
import type { Tensor } from '../../sdk/tensor.js';
import { bytesOf, elementSize, numel, viewAs } from '../../sdk/tensor.js';
import { checkBytes } from '../../sdk/tensor-bytes.js';
import { copyOf } from './bytes.js';

function shapeString(shape: readonly number[]): string {
  return `[${shape.join(', ')}]`;
}

export function checkTensors(
  tensors: Record<string, Tensor>,
  specs: readonly TensorSpec[],
  maxBatchSize: number,
  what = 'input',
): number {
  const names = new Set(specs.map((s) => s.name));
  for (const name of Object.keys(tensors)) {
    if (!names.has(name))
      throw new InvalidInputError(
        `unexpected ${what} "${name}"; the function takes ${[...names].map((n) => `"${n}"`).join(', ')}`,
        { reason: 'ERR_INPUT_COUNT' },
      );
  }
  let rows = -1;
  for (const spec of specs) {
    const t = tensors[spec.name];
    if (t === undefined) throw new InvalidInputError(`missing ${what} "${spec.name}"`, { reason: 'ERR_INPUT_COUNT' });
    if (t.dtype !== spec.dtype)
      throw new InvalidInputError(`${what} "${spec.name}" has dtype ${t.dtype}, expected ${spec.dtype}`, {
        reason: 'ERR_DTYPE',
      });
    if (!Array.isArray(t.shape) || t.shape.some((d) => !Number.isSafeInteger(d) || d < 0)) {
      throw new InvalidInputError(`${what} "${spec.name}" has an invalid shape`, { reason: 'ERR_SHAPE' });
    }
    const batched = maxBatchSize > 0;
    const dims = batched ? t.shape.slice(1) : t.shape;
    const ok =
      dims.length === spec.dims.length &&
      spec.dims.every((d, i) => d === -1 || d === dims[i]) &&
      (!batched || t.shape.length > 0);
    if (!ok) {
      const expected = batched ? `[batch, ${spec.dims.join(', ')}]` : shapeString(spec.dims);
      throw new InvalidInputError(`${what} "${spec.name}" has shape ${shapeString(t.shape)}, expected ${expected}`, {
        reason: 'ERR_SHAPE',
      });
    }
    if (t.dtype === 'BYTES') {
      try {
        checkBytes(t.data as Uint8Array, numel(t.shape));
      } catch (error) {
        throw new InvalidInputError(`${what} "${spec.name}": ${(error as Error).message}`, { reason: 'ERR_SHAPE' });
      }
    }
    const bytes = t.dtype === 'BYTES' ? (t.data as Uint8Array).byteLength : numel(t.shape) * elementSize(t.dtype);
    if (!ArrayBuffer.isView(t.data) || t.data.byteLength !== bytes) {
      throw new InvalidInputError(
        `${what} "${spec.name}" has ${ArrayBuffer.isView(t.data) ? t.data.byteLength : 0} bytes of data but shape ${shapeString(t.shape)} of ${t.dtype} needs ${bytes}`,
        { reason: 'ERR_SHAPE' },
      );
    }
    if (batched) {
      const r = t.shape[0]!;
      if (rows >= 0 && r !== rows)
        throw new InvalidInputError(`inputs disagree on the batch size: ${rows} and ${r} ("${spec.name}")`, {
          reason: 'ERR_SHAPE',
        });
      rows = r;
      if (r < 1) throw new InvalidInputError(`${what} "${spec.name}" has an empty batch`, { reason: 'ERR_SHAPE' });
      if (r > maxBatchSize)
        throw new InvalidInputError(`the request has ${r} rows but maxBatchSize is ${maxBatchSize}`, {
          reason: 'ERR_SHAPE',
        });
    }
  }
  return rows < 0 ? 1 : rows;
}

/** Requests batch together only when dtypes and every dimension but the batch one are equal. */
export function batchSignature(
  tensors: Record<string, Tensor>,
  specs: readonly TensorSpec[],
  maxBatchSize: number,
): string {
  return specs
    .map((s) => {
      const t = tensors[s.name]!;
      return `${t.dtype}${shapeString(maxBatchSize > 0 ? t.shape.slice(1) : t.shape)}`;
    })
    .join(';');
}

/**
 * Checked tensors with their data in memory of their own: a tensor a hook built on a
 * SharedArrayBuffer is copied into a plain ArrayBuffer (which can be moved to the pool and read by
 * the addon, and which the hook can no longer write once checked); the others are kept as they are.
 */
export function ownTensors(tensors: Record<string, Tensor>): Record<string, Tensor> {
  for (const [name, t] of Object.entries(tensors)) {
    if (t.data.buffer instanceof ArrayBuffer) continue;
    tensors[name] = { ...t, data: viewAs(t.dtype, copyOf(bytesOf(t.data))) } as Tensor;
  }
  return tensors;
}
