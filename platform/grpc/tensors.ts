/**
 * ModelInfer's tensors: `raw_input_contents` (bytes, one copy into an aligned typed array) or the
 * typed `contents` fields, in; `raw_output_contents` out, as Triton answers.
 */
import { InvalidInputError } from '../../sdk/errors.js';
import type { HookTensors } from '../../sdk/hook.js';
import type { DType } from '../../sdk/tensor.js';
import { inputHead, tensorFromRaw, tensorFromValues } from '../inference-tensors.js';

export interface GrpcInput {
  name: string;
  datatype: string;
  shape: (number | string)[];
  contents?: Record<string, unknown[]> | null;
}

const CONTENTS_FIELD: Partial<Record<DType, string>> = {
  BOOL: 'bool_contents', INT8: 'int_contents', INT16: 'int_contents', INT32: 'int_contents', INT64: 'int64_contents',
  UINT8: 'uint_contents', UINT16: 'uint_contents', UINT32: 'uint_contents', UINT64: 'uint64_contents',
  FP32: 'fp32_contents', FP64: 'fp64_contents',
};

export function grpcInputsToTensors(inputs: GrpcInput[], raw: Uint8Array[]): HookTensors {
  if (raw.length > 0 && raw.length !== inputs.length) {
    throw new InvalidInputError(`raw_input_contents has ${raw.length} entries for ${inputs.length} inputs`);
  }
  const tensors: HookTensors = {};
  inputs.forEach((input, i) => {
    const { dtype, shape } = inputHead(tensors, input, `input "${input.name}"`);
    if (raw.length > 0) {
      tensors[input.name] = tensorFromRaw(input.name, dtype, shape, raw[i]!, 'raw_input_contents');
      return;
    }
    const field = CONTENTS_FIELD[dtype];
    const values = field ? input.contents?.[field] : undefined;
    if (!field || !values) throw new InvalidInputError(`input "${input.name}": send ${dtype} data in raw_input_contents${field ? ` or contents.${field}` : ''}`);
    tensors[input.name] = tensorFromValues(dtype, values.map((v) => (typeof v === 'string' && dtype !== 'INT64' && dtype !== 'UINT64' ? Number(v) : v)), shape, `inputs.${input.name}`);
  });
  return tensors;
}

export function tensorsToGrpcOutputs(outputs: HookTensors, wanted: string[]): { outputs: { name: string; datatype: string; shape: number[] }[]; raw: Buffer[] } {
  const names = wanted.length > 0 ? wanted : Object.keys(outputs);
  const out: { name: string; datatype: string; shape: number[] }[] = [];
  const raw: Buffer[] = [];
  for (const name of names) {
    const t = outputs[name];
    if (!t) throw new InvalidInputError(`the model has no output "${name}"`);
    out.push({ name, datatype: t.dtype, shape: t.shape });
    raw.push(Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength));
  }
  return { outputs: out, raw };
}
