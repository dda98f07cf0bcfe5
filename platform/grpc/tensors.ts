/**
 * ModelInfer's tensors: `raw_input_contents` (bytes, one copy into an aligned typed array) or the
 * typed `contents` fields, in; `raw_output_contents` out, as Triton answers.
 */
import { InvalidInputError } from '../../sdk/errors.js';
import type { HookTensors } from '../../sdk/hook.js';
import type { DType, Tensor } from '../../sdk/tensor.js';
import type { RequestedOutput } from '../inference-tensors.js';
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
  FP32: 'fp32_contents', FP64: 'fp64_contents', BYTES: 'bytes_contents',
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

export function tensorsToGrpcOutputs(selected: readonly { name: string; tensor: Tensor }[]): { outputs: { name: string; datatype: string; shape: number[] }[]; raw: Buffer[] } {
  return {
    outputs: selected.map(({ name, tensor: t }) => ({ name, datatype: t.dtype, shape: t.shape })),
    raw: selected.map(({ tensor: t }) => Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength)),
  };
}

/** A ModelInferRequest output: its parameters are InferParameter oneofs (int64_param travels as a string). */
export interface GrpcRequestedOutput {
  name: string;
  parameters?: Record<string, { int64_param?: string | number; bool_param?: boolean; parameter_choice?: string }>;
}

export function requestedOutputs(outputs: readonly GrpcRequestedOutput[]): RequestedOutput[] {
  return outputs.filter((o) => o.name).map((o) => {
    const c = o.parameters?.classification;
    const count = c === undefined ? undefined : Number(c.int64_param ?? Number.NaN);
    return { name: o.name, ...(count === undefined ? {} : { classification: count }) };
  });
}
