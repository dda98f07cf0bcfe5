/**
 * ModelInfer's tensors: `raw_input_contents` (bytes, one copy into an aligned typed array) or the
 * typed `contents` fields, in; `raw_output_contents` out, as Triton answers.
 */
import { InvalidInputError } from '../../sdk/errors.js';
import type { DType, TensorsByName } from '../../sdk/tensor.js';
import type { AnsweredOutput, RequestedOutput, RequestInput, ShmContext } from '../kserve/index.js';
import { requestTensors } from '../kserve/index.js';

export interface GrpcInput {
  name: string;
  datatype: string;
  shape: (number | string)[];
  contents?: Record<string, unknown[]> | null;
  parameters?: Record<string, Record<string, unknown>>;
}

const CONTENTS_FIELD: Partial<Record<DType, string>> = {
  BOOL: 'bool_contents',
  INT8: 'int_contents',
  INT16: 'int_contents',
  INT32: 'int_contents',
  INT64: 'int64_contents',
  UINT8: 'uint_contents',
  UINT16: 'uint_contents',
  UINT32: 'uint_contents',
  UINT64: 'uint64_contents',
  FP32: 'fp32_contents',
  FP64: 'fp64_contents',
  BYTES: 'bytes_contents',
};

/**
 * InferParameter oneofs unwrapped to their values. int64/uint64 travel as strings: with `bigints`
 * they come back as bigint (sequence ids), else as numbers.
 */
export function unwrapParameters(
  parameters: Record<string, Record<string, unknown>> | undefined,
  bigints = false,
): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(parameters ?? {}).map(([k, p]) => {
      const choice =
        typeof p.parameter_choice === 'string' ? p.parameter_choice : Object.keys(p).find((f) => f.endsWith('_param'));
      const value = choice ? p[choice] : undefined;
      if ((choice === 'int64_param' || choice === 'uint64_param') && value !== undefined)
        return [k, bigints ? BigInt(String(value)) : Number(value)];
      return [k, value];
    }),
  );
}

/**
 * The request's tensors: from a shared memory region named in the input's parameters, else from
 * raw_input_contents (indexed over the inputs not in shared memory, as Triton indexes them), else
 * from the typed contents. Contents beside raw_input_contents are refused, as Triton refuses them.
 */
export function grpcInputsToTensors(
  inputs: GrpcInput[],
  raw: Uint8Array[],
  shm: ShmContext | undefined,
  model: string,
): TensorsByName {
  let next = 0;
  const read = inputs.map(
    (input): RequestInput => ({
      name: input.name,
      datatype: input.datatype,
      shape: input.shape,
      where: `input "${input.name}"`,
      parameters: unwrapParameters(input.parameters),
      content: () => {
        const given = Object.values(input.contents ?? {}).some((v) => Array.isArray(v) && v.length > 0);
        if (raw.length > 0) {
          if (given)
            throw new InvalidInputError(
              `contents field must not be specified when using raw_input_contents for '${input.name}' for model '${model}'`,
            );
          const bytes = raw[next++];
          if (!bytes)
            throw new InvalidInputError(
              `raw_input_contents has ${raw.length} entries, too few for the inputs not in shared memory`,
            );
          return { raw: bytes, field: 'raw_input_contents' };
        }
        const dtype = input.datatype as DType;
        const field = CONTENTS_FIELD[dtype];
        const values = field ? input.contents?.[field] : undefined;
        if (!field || !values)
          throw new InvalidInputError(
            `input "${input.name}": send ${dtype} data in raw_input_contents${field ? ` or contents.${field}` : ''}`,
          );
        return {
          values: values.map((v) => (typeof v === 'string' && dtype !== 'INT64' && dtype !== 'UINT64' ? Number(v) : v)),
          where: `inputs.${input.name}`,
        };
      },
    }),
  );
  const tensors = requestTensors(read, shm);
  if (raw.length > next) throw new InvalidInputError(`raw_input_contents has ${raw.length} entries for ${next} inputs`);
  return tensors;
}

/**
 * ModelInferResponse outputs and raw contents. An output written into shared memory is answered
 * with its region in the parameters, and an empty raw entry keeps the others at their index (as
 * clients read raw_output_contents by the output's position).
 */
export function tensorsToGrpcOutputs(answered: readonly AnsweredOutput[]): {
  outputs: { name: string; datatype: string; shape: number[]; parameters?: object }[];
  raw: Buffer[];
} {
  const outputs: { name: string; datatype: string; shape: number[]; parameters?: object }[] = [];
  const raw: Buffer[] = [];
  for (const { name, tensor: t, shared } of answered) {
    if (shared) {
      outputs.push({
        name,
        datatype: t.dtype,
        shape: t.shape,
        parameters: {
          shared_memory_region: { string_param: shared.region },
          shared_memory_byte_size: { int64_param: shared.byteSize },
        },
      });
      raw.push(Buffer.alloc(0));
    } else {
      outputs.push({ name, datatype: t.dtype, shape: t.shape });
      raw.push(Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength));
    }
  }
  return { outputs, raw };
}

/** A ModelInferRequest output: its parameters are InferParameter oneofs (int64_param travels as a string). */
export interface GrpcRequestedOutput {
  name: string;
  parameters?: Record<string, Record<string, unknown>>;
}

export function requestedOutputs(outputs: readonly GrpcRequestedOutput[]): RequestedOutput[] {
  return outputs
    .filter((o) => o.name)
    .map((o) => {
      const parameters = unwrapParameters(o.parameters);
      const c = parameters.classification;
      const count = c === undefined ? undefined : Number(c);
      return { name: o.name, ...(count === undefined ? {} : { classification: count }), parameters };
    });
}
