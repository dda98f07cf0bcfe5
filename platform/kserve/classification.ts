/**
 * Triton's classification extension: an output asked for with `classification: N` comes back as a
 * BYTES tensor of the N highest values per batch row, each "value:index[:label]" — the value
 * printed as C++'s std::to_string prints it (six decimals for floating types), as Triton does.
 */
import { InvalidInputError } from '../../sdk/errors.js';
import type { OutputSpec } from '../../sdk/spec/function-spec.js';
import type { Tensor } from '../../sdk/tensor.js';
import { numel } from '../../sdk/tensor.js';
import { bytesTensor } from '../../sdk/tensor-bytes.js';
import { bfloat16ToFloat, halfToFloat } from '../../sdk/tensor-json.js';

function values(t: Tensor): { value: (i: number) => number | bigint; text: (v: number | bigint) => string } {
  const floating = (v: number | bigint) => Number(v).toFixed(6);
  switch (t.dtype) {
    case 'FP32':
    case 'FP64':
      return { value: (i) => (t.data as Float32Array)[i]!, text: floating };
    case 'FP16':
      return { value: (i) => halfToFloat((t.data as Uint16Array)[i]!), text: floating };
    case 'BF16':
      return { value: (i) => bfloat16ToFloat((t.data as Uint16Array)[i]!), text: floating };
    case 'BYTES':
      throw new InvalidInputError('classification needs a numeric output, not BYTES');
    default:
      return { value: (i) => (t.data as unknown as ArrayLike<number | bigint>)[i]!, text: (v) => String(v) };
  }
}

/** The top `count` classes of each row of `t` (each item when the model has no batch dimension). */
export function classify(t: Tensor, spec: OutputSpec, count: number, batched: boolean): Tensor<'BYTES'> {
  if (!Number.isInteger(count) || count < 1)
    throw new InvalidInputError(
      `output "${spec.name}": classification must be a positive integer, got ${String(count)}`,
    );
  const rows = batched ? (t.shape[0] ?? 1) : 1;
  const per = rows === 0 ? 0 : numel(t.shape) / rows;
  const k = Math.min(count, per);
  const { value, text } = values(t);
  const out: string[] = [];
  for (let r = 0; r < rows; r++) {
    const base = r * per;
    // The top k by one pass with a small sorted list (k is a handful): no full sort of the row on
    // the event loop. Ties keep the lower index first.
    const top: number[] = [];
    for (let i = 0; i < per; i++) {
      const v = value(base + i);
      if (top.length === k && !(v > value(base + top[k - 1]!))) continue;
      let at = top.length;
      while (at > 0 && v > value(base + top[at - 1]!)) at--;
      top.splice(at, 0, i);
      if (top.length > k) top.pop();
    }
    for (const i of top) {
      const label = spec.labels?.[i];
      out.push(`${text(value(base + i))}:${i}${label ? `:${label}` : ''}`);
    }
  }
  return bytesTensor(batched ? [rows, k] : [k], out);
}
