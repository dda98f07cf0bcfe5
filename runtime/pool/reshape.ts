/**
 * Triton's `reshape`: a tensor's shape as clients send and receive it (`dims`) differs from the
 * shape the model takes or returns (`reshape.shape`). Only the shape changes; the bytes are the
 * same, so this is metadata on a view. A -1 in the target is the one dimension left to fill.
 */
import { InvalidInputError } from '../../sdk/errors.js';
import type { TensorSpec } from '../../sdk/spec/function-spec.js';
import type { Tensor } from '../../sdk/tensor.js';
import { numel } from '../../sdk/tensor.js';

/** `target` with its one -1 filled so the elements are `elements`; refuses a shape that cannot hold them. */
export function resolveShape(target: readonly number[], elements: number, what: string): number[] {
  const known = target.reduce((n, d) => (d < 0 ? n : n * d), 1);
  const free = target.indexOf(-1);
  if (free < 0) {
    if (known !== elements)
      throw new InvalidInputError(`${what}: ${elements} element(s) do not reshape to [${target.join(', ')}]`, {
        reason: 'ERR_SHAPE',
      });
    return [...target];
  }
  if (known === 0 || elements % known !== 0)
    throw new InvalidInputError(`${what}: ${elements} element(s) do not reshape to [${target.join(', ')}]`, {
      reason: 'ERR_SHAPE',
    });
  const out = [...target];
  out[free] = elements / known;
  return out;
}

function reshaped(t: Tensor, batched: boolean, target: readonly number[], what: string): Tensor {
  const rows = batched ? t.shape.slice(0, 1) : [];
  const item = batched ? t.shape.slice(1) : t.shape;
  return { ...t, shape: [...rows, ...resolveShape(target, numel(item), what)] } as Tensor;
}

/** A request's input as the model takes it (reshape.shape), when the spec reshapes it. */
export function toModelShape(spec: TensorSpec, t: Tensor, batched: boolean): Tensor {
  return spec.reshape ? reshaped(t, batched, spec.reshape, `input "${spec.name}"`) : t;
}

/** A model's output as clients receive it (dims), when the spec reshapes it. */
export function fromModelShape(spec: TensorSpec, t: Tensor, batched: boolean): Tensor {
  return spec.reshape ? reshaped(t, batched, spec.dims, `output "${spec.name}"`) : t;
}
