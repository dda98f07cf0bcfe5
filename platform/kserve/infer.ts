/**
 * One KServe infer, whichever transport carried it, once admitted (./admission.ts): the request's
 * tensors (from shared memory, raw bytes or JSON values), Triton's sequence flags, the call, the
 * outputs asked for (classification included), and the outputs asked into shared memory written
 * there. A transport's codec reads its wire format into an InferCall and writes the InferAnswer back
 * out.
 */
import type { Tensor, TensorsByName } from '../../sdk/tensor.js';
import { callerId } from '../caller/index.js';
import type { ServingFunctions } from '../functions/serving.js';
import type { ShmContext } from './shared-memory.js';
import { sharedInput, sharedMemoryRef, writeToRegion } from './shared-memory.js';
import type { RequestedOutput, SelectedOutput } from './tensors.js';
import { inputHead, selectOutputs, sequenceFlags, tensorFromRaw, tensorFromValues } from './tensors.js';
import type { Trace } from './trace/index.js';

/** Where an input's data is when it is not in shared memory, as its codec found it. */
export type InputContent = { raw: Uint8Array; field: string } | { values: ArrayLike<unknown>; where: string };

/** One input of a request, as a transport's codec hands it over. */
export interface RequestInput {
  name: string;
  datatype: string;
  shape: unknown[];
  /** Names the input in messages (`inputs[0]`, `input "x"`). */
  where: string;
  /** Its parameters, unwrapped: a shared memory region, … */
  parameters: Record<string, unknown> | undefined;
  /** Its data, read only when it is not in shared memory (a codec's own errors thrown from here). */
  content: () => InputContent;
}

/**
 * The request's tensors, in order: each checked (datatype, shape, given once), then read from the
 * caller's shared memory region its parameters name, else from its content.
 */
export function requestTensors(inputs: readonly RequestInput[], shm: ShmContext | undefined): TensorsByName {
  const tensors: TensorsByName = {};
  for (const input of inputs) {
    const { dtype, shape } = inputHead(tensors, input, input.where);
    const shared = sharedInput(input.name, dtype, shape, input.parameters, shm);
    if (shared) {
      tensors[input.name] = shared;
      continue;
    }
    const content = input.content();
    tensors[input.name] =
      'raw' in content
        ? tensorFromRaw(input.name, dtype, shape, content.raw, content.field)
        : tensorFromValues(dtype, content.values, shape, content.where);
  }
  return tensors;
}

export interface InferCall {
  model: string;
  version: number | undefined;
  id?: string;
  /** The request's tensors, read once the call is admitted (a codec's requestTensors). */
  tensors: () => TensorsByName | Promise<TensorsByName>;
  /** The request's parameters, unwrapped (sequence_id, sequence_start, sequence_end, …). */
  parameters: Record<string, unknown> | undefined;
  outputs: readonly RequestedOutput[];
  deadline?: number;
  signal?: AbortSignal;
  shm: ShmContext;
  /** Its trace, when the trace settings sampled it (Kserve.startTrace). */
  trace?: Trace;
}

/** An output answered: its tensor, or where in the caller's shared memory it was written. */
export interface AnsweredOutput extends SelectedOutput {
  shared?: { region: string; offset: number; byteSize: number };
}

export interface InferAnswer {
  model_name: string;
  model_version: string;
  id?: string;
  outputs: AnsweredOutput[];
  /** The most bytes the response may take (the function's limits.maxResponseMb): for its codec, not sent. */
  maxResponseBytes?: number;
}

export async function inferCall(functions: ServingFunctions, call: InferCall): Promise<InferAnswer> {
  const tensors = await call.tensors();
  // A sequence is its caller's own: another caller's id names a different (unknown) sequence.
  const flags = sequenceFlags(call.parameters);
  const sequence = flags && { ...flags, caller: callerId(call.shm.owner) };
  const { outputs, version } = await functions.infer(call.model, call.version, tensors, {
    deadline: call.deadline,
    signal: call.signal,
    ...(sequence ? { sequence } : {}),
  });
  return {
    model_name: call.model,
    model_version: String(version.version),
    ...(call.id === undefined ? {} : { id: call.id }),
    outputs: selectOutputs(outputs, version.spec, call.outputs).map((o) => answered(o, call.shm)),
    maxResponseBytes: version.spec.limits.maxResponseMb * 2 ** 20,
  };
}

function answered(output: SelectedOutput, shm: ShmContext): AnsweredOutput {
  const ref = sharedMemoryRef(output.asked?.parameters, `output '${output.name}'`);
  if (!ref) return output;
  const data: Tensor['data'] = output.tensor.data;
  writeToRegion(shm, ref, output.name, data);
  return { ...output, shared: { region: ref.region, offset: ref.offset, byteSize: data.byteLength } };
}
