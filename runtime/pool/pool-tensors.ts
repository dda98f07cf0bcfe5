/**
 * Tensors a pool makes itself, apart from its callers': warm-up samples, zero rows, the control
 * inputs of a sequence batch, and a List[str] output cut back into each request's rows.
 */
import { InferenceError, InvalidInputError } from '../../sdk/errors.js';
import type { FunctionSpec } from '../../sdk/spec/function-spec.js';
import type { DType, Tensor, TensorsByName } from '../../sdk/tensor.js';
import { allocate, ENGINE_DTYPES, numel } from '../../sdk/tensor.js';
import { bytesTensor } from '../../sdk/tensor-bytes.js';
import { floatToBFloat16, floatToHalf } from '../../sdk/tensor-json.js';
import type { SequenceFlags, SequenceRow } from '../batcher/index.js';
import { checkTensors } from '../tensors/index.js';
import type { IoBinding } from './io-binding.js';
import { toModelShape } from './reshape.js';

/**
 * A List[str] output of a batch, cut back into each request's rows: the list holds `total` rows of
 * equal length, in order (as Triton reads TYPE_STRING outputs, one-dimensional per row).
 */
export function splitStrings(
  name: string,
  t: Tensor<'BYTES'>,
  rows: readonly number[],
  total: number,
): Tensor<'BYTES'>[] {
  const count = t.shape[0] ?? 0;
  if (count % total !== 0)
    throw new InferenceError(`output "${name}" has ${count} strings for a batch of ${total} rows`);
  const per = count / total;
  const view = new DataView(t.data.buffer, t.data.byteOffset, t.data.byteLength);
  let at = 0;
  return rows.map((n) => {
    const start = at;
    for (let i = 0; i < n * per; i++) at += 4 + view.getUint32(at, true);
    return { dtype: 'BYTES', shape: [n, per], data: t.data.subarray(start, at) };
  });
}

/**
 * What a sequence batch adds to its callers' inputs, in modelInputs' order: the control inputs (one
 * value per row), then the state inputs — each row's sequence's kept state, or zeros for a filler
 * row and a sequence's START (Triton's zero_data initial state).
 */
export function sequenceInputs(
  spec: FunctionSpec,
  rows: readonly SequenceRow<unknown>[],
  kept: readonly (TensorsByName | undefined)[] = [],
): Tensor[] {
  return [...sequenceControls(spec, rows), ...sequenceStates(spec, rows, kept)];
}

function sequenceStates(
  spec: FunctionSpec,
  rows: readonly SequenceRow<unknown>[],
  kept: readonly (TensorsByName | undefined)[],
): Tensor[] {
  const batched = spec.maxBatchSize > 0;
  return spec.sequence!.states.map((st) => {
    const per = numel(st.dims);
    const data = allocate(st.dtype, per * rows.length);
    rows.forEach((r, i) => {
      const state = r.filler || r.start ? undefined : kept[i]?.[st.input];
      if (state) (data as Float32Array).set(state.data as Float32Array, i * per);
    });
    return { dtype: st.dtype, shape: batched ? [rows.length, ...st.dims] : st.dims, data } as Tensor;
  });
}

/** The control inputs of a sequence batch, in the order of spec.sequence.controls: one value per row. */
function sequenceControls(spec: FunctionSpec, rows: readonly SequenceRow<unknown>[]): Tensor[] {
  const shape = spec.maxBatchSize > 0 ? [rows.length, 1] : [1];
  return spec.sequence!.controls.map((c) => {
    const data = allocate(c.dtype, rows.length);
    rows.forEach((r, i) => {
      const flag = c.kind === 'start' ? !r.filler && r.start : c.kind === 'end' ? !r.filler && r.end : !r.filler;
      if (c.kind === 'corrid') {
        const id = r.filler ? 0n : BigInt(r.id as bigint);
        if (data instanceof BigInt64Array || data instanceof BigUint64Array) data[i] = id;
        else (data as Int32Array)[i] = Number(id);
      } else {
        const v = c.values[flag ? 1 : 0]!;
        if (data instanceof BigInt64Array || data instanceof BigUint64Array) data[i] = BigInt(v);
        else (data as Float32Array)[i] = v;
      }
    });
    return { dtype: c.dtype, shape, data } as Tensor;
  });
}

/** A tensor of zeros, or of small random values (Triton's zero_data / random_data). */
export function filled(dtype: DType, shape: number[], fill: 'zero' | 'random'): Tensor {
  const n = numel(shape);
  if (dtype === 'BYTES')
    return bytesTensor(
      shape,
      Array.from({ length: n }, () => (fill === 'zero' ? '' : Math.random().toString(36).slice(2))),
    );
  const data = allocate(dtype, n);
  if (fill === 'random') {
    for (let i = 0; i < n; i++) {
      const r = Math.random();
      if (data instanceof BigInt64Array || data instanceof BigUint64Array) data[i] = BigInt(Math.floor(r * 100));
      else if (data instanceof Float32Array || data instanceof Float64Array) data[i] = r;
      else if (dtype === 'FP16' || dtype === 'BF16') data[i] = dtype === 'FP16' ? floatToHalf(r) : floatToBFloat16(r);
      else data[i] = Math.floor(r * (dtype === 'BOOL' ? 2 : 100));
    }
  }
  return { dtype, shape, data } as Tensor;
}

/**
 * The warm-up passes at load: the spec's samples (Triton's model_warmup), each run its count (on a
 * sequence model, as filler rows: READY false); else, for stateless models of engine dtypes, `runs`
 * passes of zeros with -1 dims as 1 and a batch of one.
 */
export function warmupSamples(
  spec: FunctionSpec,
  runs: number,
): { tensors: TensorsByName; runs: number; always: boolean }[] {
  const batched = spec.maxBatchSize > 0;
  if (spec.warmup) {
    return spec.warmup.map((w) => ({
      tensors: Object.fromEntries(
        Object.entries(w.inputs).map(([name, i]) => [
          name,
          filled(i.dtype, [...(batched ? [w.batchSize] : []), ...i.dims], i.fill),
        ]),
      ),
      runs: w.count,
      always: true,
    }));
  }
  // A stateful model gets no dummy passes: a made-up row could touch a sequence's state.
  if (spec.sequence || !spec.inputs.every((i) => (ENGINE_DTYPES as readonly string[]).includes(i.dtype))) return [];
  const tensors = Object.fromEntries(
    spec.inputs.map((i) => [
      i.name,
      filled(i.dtype, [...(batched ? [1] : []), ...i.dims.map((d) => (d < 0 ? 1 : d))], 'zero'),
    ]),
  );
  return [{ tensors, runs, always: false }];
}

/**
 * forward()'s arguments, in its order, each the parts (one per request) shaped as the model takes
 * them. A sequence batch brings its control and state inputs (sequenceInputs: after the spec's
 * inputs in the binding), and may hold filler rows (empty tensors): they take zeros shaped as a
 * caller's row.
 */
export function forwardArgs(
  spec: FunctionSpec,
  binding: Pick<IoBinding, 'forwardOrder'>,
  requests: readonly TensorsByName[],
  sequence: Tensor[] = [],
): Tensor[][] {
  const batched = spec.maxBatchSize > 0;
  return binding.forwardOrder.map((i) => {
    if (i >= spec.inputs.length) return [sequence[i - spec.inputs.length]!];
    const input = spec.inputs[i]!;
    const template = requests.find((r) => r[input.name])![input.name]!;
    return requests.map((tensors) =>
      toModelShape(input, tensors[input.name] ?? filled(template.dtype, template.shape, 'zero'), batched),
    );
  });
}

/**
 * A sequence model's request, checked: a non-empty correlation id (a number where the model takes
 * its CORRID as one) and one row. Its sequence flags.
 */
export function checkSequenceRequest(
  spec: FunctionSpec,
  tensors: TensorsByName,
  flags: SequenceFlags | undefined,
): SequenceFlags {
  if (!flags || flags.id === '' || flags.id === 0n)
    throw new InvalidInputError(
      `inference request to model '${spec.name}' must specify a non-zero or non-empty correlation ID (sequence_id)`,
    );
  const rows = checkTensors(tensors, spec.inputs, spec.maxBatchSize);
  if (rows !== 1)
    throw new InvalidInputError(`a sequence model takes one row per request; this one has ${rows}`, {
      reason: 'ERR_SHAPE',
    });
  if (typeof flags.id === 'string' && spec.sequence!.controls.some((c) => c.kind === 'corrid'))
    throw new InvalidInputError(`model '${spec.name}' takes its CORRID as a number: send a numeric sequence_id`);
  return flags;
}
