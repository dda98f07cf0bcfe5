/**
 * A batch's outputs cut back into each request's rows: the model's outputs picked by the spec's
 * names (a dict by key, a tuple by the binding's index) and checked against the spec's dtype and
 * dims (./output-checks.ts), then each request's rows as views of the
 * batch tensor (no copy). BYTES outputs are split by rows of strings. Pure: no pool state.
 */
import { InferenceError } from '../../sdk/errors.js';
import type { FunctionSpec } from '../../sdk/spec/function-spec.js';
import type { Tensor, TensorsByName } from '../../sdk/tensor.js';
import type { ForwardResult } from '../engine/index.js';
import type { IoBinding } from './io-binding.js';
import { modelOutputs } from './io-binding.js';
import { checkOutput } from './output-checks.js';
import { splitStrings } from './pool-tensors.js';
import { fromModelShape } from './reshape.js';

/** `rows[i]` rows of each output go to request i, in order; a spec without batching takes them whole. */
export function splitOutputs(
  spec: FunctionSpec,
  binding: Pick<IoBinding, 'outputIndex' | 'outputRule'>,
  result: ForwardResult,
  rows: readonly number[],
): TensorsByName[] {
  const byName = result.kind === 'dict';
  const { outputIndex, outputRule } = binding;
  const named = modelOutputs(spec).map((o, i) => {
    const t = byName ? result.outputs.find((r) => r.name === o.name) : result.outputs[outputIndex[i]!];
    if (!t && byName)
      throw new InferenceError(
        `the model returned no output "${o.name}" (it returned ${result.outputs.map((r) => `"${r.name}"`).join(', ')})`,
      );
    if (!t)
      throw new InferenceError(
        `the model returned ${result.outputs.length} output(s); output "${o.name}" is its output ${outputIndex[i]} (${outputRule === 'named-index' ? 'by its __<index> suffix' : 'by its place in the spec'})`,
      );
    checkOutput(o, t, spec.maxBatchSize > 0);
    return { o, name: o.name, t };
  });
  const total = rows.reduce((n, r) => n + r, 0);
  if (spec.maxBatchSize === 0)
    return [Object.fromEntries(named.map(({ o, name, t }) => [name, fromModelShape(o, t, false)]))];
  const out: TensorsByName[] = rows.map(() => ({}));
  for (const { o, name, t } of named) {
    if (t.dtype === 'BYTES') {
      splitStrings(name, t as Tensor<'BYTES'>, rows, total).forEach((piece, i) => {
        out[i]![name] = piece;
      });
      continue;
    }
    rowViews(name, t, rows, total).forEach((piece, i) => {
      out[i]![name] = fromModelShape(o, piece, true);
    });
  }
  return out;
}

/**
 * A batch tensor of `total` rows cut into `rows[i]` rows each, in order: views of its data, no
 * copy. One whose first dimension is not `total` is refused, and so is BYTES (its rows are not
 * of one size: splitStrings cuts those), which a runner may send where the spec says otherwise.
 */
export function rowViews(name: string, t: Tensor, rows: readonly number[], total: number): Tensor[] {
  if (t.dtype === 'BYTES') throw new InferenceError(`output "${name}" is BYTES, which cannot be cut into rows by size`);
  if (t.shape[0] !== total) throw new InferenceError(`output "${name}" has ${t.shape[0]} rows for a batch of ${total}`);
  const rowElems = total === 0 ? 0 : t.data.length / total;
  let offset = 0;
  return rows.map((n) => {
    const data = (t.data as unknown as { subarray(a: number, b: number): Tensor['data'] }).subarray(
      offset * rowElems,
      (offset + n) * rowElems,
    );
    offset += n;
    return { dtype: t.dtype, shape: [n, ...t.shape.slice(1)], data } as Tensor;
  });
}
