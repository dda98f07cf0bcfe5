/**
 * KServe v2 / Open Inference Protocol tensors over HTTP: JSON `data`, and Triton's binary tensor
 * data extension (a JSON header of `Inference-Header-Content-Length` bytes, then raw tensor bytes).
 */
import { parseInferJsonAsync } from '../../runtime/index.js';
import { InvalidInputError } from '../../sdk/errors.js';
import { BinaryBody, encodeBinary } from '../../sdk/kserve-binary.js';
import type { HookTensors } from '../../sdk/hook.js';
import type { FunctionSpec } from '../../sdk/spec/function-spec.js';
import { bytesOf, numel } from '../../sdk/tensor.js';
import { flatten, tensorToJson } from '../../sdk/tensor-json.js';
import { inputHead, selectOutputs, tensorFromRaw, tensorFromValues } from '../inference-tensors.js';
import { decodeBytes } from '../../sdk/tensor-bytes.js';
import type { ShmContext } from '../shared-memory.js';
import { sharedInput, sharedMemoryRef, writeToRegion } from '../shared-memory.js';

const utf8 = new TextDecoder();

interface RequestInput {
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
  inputs: RequestInput[];
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
): Promise<{ request: InferRequest; tensors: HookTensors }> {
  // A header length that does not fit is BinaryBody's error, thrown before it takes this parse.
  let header: unknown;
  let failure: unknown;
  try {
    header = await parseInferJsonAsync(headerLength === undefined ? body : body.subarray(0, headerLength));
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
  const tensors: HookTensors = {};
  for (const [i, input] of request.inputs.entries()) {
    const where = `inputs[${i}]`;
    if (typeof input?.name !== 'string') throw new InvalidInputError(`${where}.name must be a string`);
    if (!Array.isArray(input.shape))
      throw new InvalidInputError(`${where}.shape must be a list of non-negative integers`, { reason: 'ERR_SHAPE' });
    const { dtype, shape } = inputHead(tensors, input, where);
    const size = input.parameters?.binary_data_size;
    const shared = sharedInput(input.name, dtype, shape, input.parameters, shm);
    if (shared) tensors[input.name] = shared;
    else if (size !== undefined) {
      if (!parsed.binary)
        throw new InvalidInputError(
          `${where} has binary_data_size but the request has no Inference-Header-Content-Length`,
        );
      tensors[input.name] = tensorFromRaw(
        input.name,
        dtype,
        shape,
        parsed.take(size, `input "${input.name}"`),
        'binary_data_size',
      );
    } else {
      if (input.data === undefined) throw new InvalidInputError(`${where} has neither data nor binary_data_size`);
      const data = input.data;
      // Values nest at most one list per dimension (a flat list is fine too).
      const flat =
        data instanceof Float64Array ? data : Array.isArray(data) ? flatten(data, Math.max(1, shape.length)) : [data];
      tensors[input.name] = tensorFromValues(dtype, flat, shape, `inputs.${input.name}.data`);
    }
  }
  parsed.end('inputs');
  return { request, tensors };
}

/** The response: JSON data, or (when asked) a JSON header followed by raw output bytes. */
export function formatInferResponse(
  model: { name: string; version: number },
  request: InferRequest,
  outputs: HookTensors,
  spec: FunctionSpec,
  shm?: ShmContext,
): { body: Uint8Array; contentType: string; headerLength?: number } {
  const asked = request.outputs ?? [];
  const selected = selectOutputs(
    outputs,
    spec,
    asked.map((o) => ({ name: o.name, classification: o.parameters?.classification })),
  );
  const binaryAll = request.parameters?.binary_data_output === true;
  const parts: Uint8Array[] = [];
  const json = {
    model_name: model.name,
    model_version: String(model.version),
    ...(request.id === undefined ? {} : { id: request.id }),
    outputs: selected.map(({ name, tensor: t }, i) => {
      const shared = sharedMemoryRef(asked[i]?.parameters, `output '${name}'`);
      if (shared) {
        writeToRegion(shm, shared, name, t.data);
        return {
          name,
          datatype: t.dtype,
          shape: t.shape,
          parameters: {
            shared_memory_region: shared.region,
            shared_memory_byte_size: t.data.byteLength,
            ...(shared.offset ? { shared_memory_offset: shared.offset } : {}),
          },
        };
      }
      const binary = asked[i]?.parameters?.binary_data ?? binaryAll;
      if (binary) {
        const bytes = bytesOf(t.data);
        parts.push(bytes);
        return { name, datatype: t.dtype, shape: t.shape, parameters: { binary_data_size: bytes.byteLength } };
      }
      const data =
        t.dtype === 'BYTES'
          ? decodeBytes(t.data as Uint8Array).map((b) => utf8.decode(b))
          : (tensorToJson({ ...t, shape: [numel(t.shape)] }) as unknown[]);
      return { name, datatype: t.dtype, shape: t.shape, data };
    }),
  };
  if (parts.length === 0)
    return { body: new TextEncoder().encode(JSON.stringify(json)), contentType: 'application/json' };
  const { body, headerLength } = encodeBinary(json, parts);
  return { body, contentType: 'application/octet-stream', headerLength };
}
