/**
 * KServe v2 / Open Inference Protocol tensors over HTTP: JSON `data`, and Triton's binary tensor
 * data extension (a JSON header of `Inference-Header-Content-Length` bytes, then raw tensor bytes):
 * HTTP's codec over the protocol's core (../kserve), as ../grpc/tensors.ts is gRPC's; the server's
 * side of it (the client's is ../../sdk/kserve-binary.ts).
 */
import { InferenceError, InvalidInputError } from '../../sdk/errors.js';
import { BinaryBody, encodeBinary } from '../../sdk/kserve-binary.js';
import type { TensorsByName } from '../../sdk/tensor.js';
import { bytesOf, numel } from '../../sdk/tensor.js';
import { decodeBytes } from '../../sdk/tensor-bytes.js';
import { flatten, JsonBudget, JsonTooLargeError, tensorJsonText, tensorToJson } from '../../sdk/tensor-json.js';
import type { InferAnswer, RequestedOutput, RequestInput, ShmContext } from '../kserve/index.js';
import { parseInferJson, requestTensors } from '../kserve/index.js';

const utf8 = new TextDecoder();

interface JsonInput {
  name: string;
  shape: number[];
  datatype: string;
  data?: unknown;
  parameters?: {
    binary_data_size?: number;
    shared_memory_region?: string;
    shared_memory_byte_size?: number;
    shared_memory_offset?: number;
  };
}

export interface InferRequest {
  id?: string;
  inputs: JsonInput[];
  outputs?: {
    name: string;
    parameters?: {
      binary_data?: boolean;
      classification?: number;
      shared_memory_region?: string;
      shared_memory_byte_size?: number;
      shared_memory_offset?: number;
    };
  }[];
  parameters?: { binary_data_output?: boolean };
}

/**
 * Parses an infer request body (JSON, or JSON header + binary tail) into named tensors. The JSON is
 * read by the addon (simdjson), a large body off the event loop.
 */
export async function parseInferRequest(
  body: Uint8Array,
  headerLength: number | undefined,
  shm?: ShmContext,
): Promise<{ request: InferRequest; tensors: TensorsByName }> {
  // A header length that does not fit is BinaryBody's error, thrown before it takes this parse.
  let header: unknown;
  let failure: unknown;
  try {
    header = await parseInferJson(headerLength === undefined ? body : body.subarray(0, headerLength));
  } catch (error) {
    failure = error;
  }
  const parsed = new BinaryBody(body, headerLength, 'the infer request', () => {
    if (failure !== undefined) throw failure;
    return header;
  });
  const request = parsed.header as InferRequest;
  if (!request || !Array.isArray(request.inputs))
    throw new InvalidInputError('the infer request needs "inputs": [{name, shape, datatype, data}]');
  const inputs = request.inputs.map((input, i): RequestInput => {
    const where = `inputs[${i}]`;
    if (typeof input?.name !== 'string') throw new InvalidInputError(`${where}.name must be a string`);
    if (!Array.isArray(input.shape))
      throw new InvalidInputError(`${where}.shape must be a list of non-negative integers`, { reason: 'ERR_SHAPE' });
    return {
      name: input.name,
      datatype: input.datatype,
      shape: input.shape,
      where,
      parameters: input.parameters,
      content: () => {
        const size = input.parameters?.binary_data_size;
        if (size !== undefined) {
          if (!parsed.binary)
            throw new InvalidInputError(
              `${where} has binary_data_size but the request has no Inference-Header-Content-Length`,
            );
          return { raw: parsed.take(size, `input "${input.name}"`), field: 'binary_data_size' };
        }
        if (input.data === undefined) throw new InvalidInputError(`${where} has neither data nor binary_data_size`);
        const data = input.data;
        // Values nest at most one list per dimension (a flat list is fine too).
        const values =
          data instanceof Float64Array
            ? data
            : Array.isArray(data)
              ? flatten(data, Math.max(1, input.shape.length))
              : [data];
        return { values, where: `inputs.${input.name}.data` };
      },
    };
  });
  const tensors = requestTensors(inputs, shm);
  parsed.end('inputs');
  return { request, tensors };
}

/** The outputs a request names, as the infer call takes them. */
export function requestedOutputs(request: InferRequest): RequestedOutput[] {
  return (request.outputs ?? []).map((o) => ({
    name: o.name,
    ...(o.parameters?.classification === undefined ? {} : { classification: o.parameters.classification }),
    ...(o.parameters ? { parameters: o.parameters } : {}),
  }));
}

/** An output's data in the JSON: its strings for BYTES, else its elements flattened. */
function dataValues(t: TensorsByName[string]): unknown[] {
  if (t.dtype === 'BYTES') return decodeBytes(t.data as Uint8Array).map((b) => utf8.decode(b));
  return tensorToJson({ ...t, shape: [numel(t.shape)] }) as unknown[];
}

/** The same as JSON text (a number array printed directly: tensorJsonText), within `budget`. */
function dataText(t: TensorsByName[string], budget: JsonBudget): string {
  if (t.dtype !== 'BYTES') return tensorJsonText(t, undefined, budget);
  const text = JSON.stringify(dataValues(t));
  budget.left -= text.length;
  if (budget.left < 0) throw new JsonTooLargeError(budget.limit);
  return text;
}

/**
 * The response: JSON data, or (when asked) a JSON header followed by raw output bytes. JSON text
 * past answer.maxResponseBytes is not made: InferenceError (500, as a hook's response past
 * limits.maxResponseMb is a 500), naming binary data as the way out.
 */
export function formatInferResponse(
  request: InferRequest,
  answer: InferAnswer,
): { body: Uint8Array; contentType: string; headerLength?: number } {
  try {
    return format(request, answer, new JsonBudget(answer.maxResponseBytes ?? Number.POSITIVE_INFINITY));
  } catch (error) {
    if (!(error instanceof JsonTooLargeError)) throw error;
    throw new InferenceError(
      `the response as JSON would be over its limit of ${error.limit} (limits.maxResponseMb): ask for the outputs as binary data (parameters.binary_data_output: true)`,
      { reason: 'ERR_OUTPUT_SIZE' },
    );
  }
}

function format(
  request: InferRequest,
  { maxResponseBytes: _, ...answer }: InferAnswer,
  budget: JsonBudget,
): { body: Uint8Array; contentType: string; headerLength?: number } {
  const binaryAll = request.parameters?.binary_data_output === true;
  const parts: Uint8Array[] = [];
  // Each output's header fields, and its data where it goes in the JSON (printed below).
  const outputs = answer.outputs.map(({ name, tensor: t, asked, shared }) => {
    if (shared) {
      const parameters = {
        shared_memory_region: shared.region,
        shared_memory_byte_size: shared.byteSize,
        ...(shared.offset ? { shared_memory_offset: shared.offset } : {}),
      };
      return { head: { name, datatype: t.dtype, shape: t.shape, parameters } };
    }
    const binary = (asked?.parameters?.binary_data as boolean | undefined) ?? binaryAll;
    if (binary) {
      const bytes = bytesOf(t.data);
      parts.push(bytes);
      return { head: { name, datatype: t.dtype, shape: t.shape, parameters: { binary_data_size: bytes.byteLength } } };
    }
    return { head: { name, datatype: t.dtype, shape: t.shape }, tensor: t };
  });
  if (parts.length === 0) {
    // Printed piece by piece: JSON.stringify of a 1024-float array took twice as long as its text
    // made directly (tensorJsonText), the larger part of a KServe JSON response's cost.
    const printed = outputs.map(({ head, tensor }) =>
      tensor ? `${JSON.stringify(head).slice(0, -1)},"data":${dataText(tensor, budget)}}` : JSON.stringify(head),
    );
    const { outputs: _, ...rest } = answer;
    const top = JSON.stringify(rest);
    const text = `${top === '{}' ? '{' : `${top.slice(0, -1)},`}"outputs":[${printed.join(',')}]}`;
    return { body: new TextEncoder().encode(text), contentType: 'application/json' };
  }
  // Measured as text first: the header's JSON holds them as values.
  for (const { tensor } of outputs) if (tensor) dataText(tensor, budget);
  const json = {
    ...answer,
    outputs: outputs.map(({ head, tensor }) => (tensor ? { ...head, data: dataValues(tensor) } : head)),
  };
  const { body, headerLength } = encodeBinary(json, parts);
  return { body, contentType: 'application/octet-stream', headerLength };
}
