/** KServe v2 infer: raw tensors in, raw tensors out (no hooks), over Triton's binary tensor extension. */
import { HearthError } from '../errors.js';
import { BinaryBody, encodeBinary } from '../kserve-binary.js';
import type { DType, Tensor } from '../tensor.js';
import { bytesOf, elementSize, viewAs } from '../tensor.js';
import type { Transport } from './transport.js';

export interface InferOutput extends Tensor {
  name: string;
}

export interface InferOptions {
  version?: number;
  timeoutMs?: number;
}

/** The request: each input's header, its bytes after the JSON; outputs asked for as binary. */
function inferRequest(inputs: Record<string, Tensor>): { body: Uint8Array; headerLength: number } {
  const entries = Object.entries(inputs);
  const request = {
    inputs: entries.map(([n, t]) => ({
      name: n,
      shape: t.shape,
      datatype: t.dtype,
      parameters: { binary_data_size: (t.data as ArrayBufferView).byteLength },
    })),
    parameters: { binary_data_output: true },
  };
  return encodeBinary(
    request,
    entries.map(([, t]) => bytesOf(t.data as ArrayBufferView)),
  );
}

/** The response's outputs as typed tensors, each checked against its datatype. */
function inferOutputs(bytes: Uint8Array, length: string | null): Record<string, InferOutput> {
  const parsed = new BinaryBody(bytes, length === null ? undefined : Number(length), 'the infer response');
  const response = parsed.header as {
    outputs: { name: string; shape: number[]; datatype: DType; parameters?: { binary_data_size?: number } }[];
  };
  const out: Record<string, InferOutput> = {};
  for (const o of response.outputs) {
    const n = o.parameters?.binary_data_size;
    if (n === undefined) throw new HearthError(`output ${o.name} came back as JSON; expected binary data`);
    // A copy, so the typed array starts at an aligned offset.
    const data = viewAs(o.datatype, parsed.take(n, `output "${o.name}"`).slice());
    if (data.length * elementSize(o.datatype) !== n)
      throw new HearthError(`output ${o.name}: ${n} bytes do not fit ${o.datatype}`);
    out[o.name] = { name: o.name, dtype: o.datatype, shape: o.shape, data } as InferOutput;
  }
  return out;
}

export async function infer(
  node: Transport,
  name: string,
  inputs: Record<string, Tensor>,
  options: InferOptions,
): Promise<Record<string, InferOutput>> {
  const { body, headerLength } = inferRequest(inputs);
  const path = `/v2/models/${encodeURIComponent(name)}${options.version === undefined ? '' : `/versions/${options.version}`}/infer`;
  // Raw tensors compress poorly: fetch would otherwise ask for gzip on every response.
  const headers: Record<string, string> = {
    'content-type': 'application/octet-stream',
    'inference-header-content-length': String(headerLength),
    'accept-encoding': 'identity',
  };
  if (options.timeoutMs !== undefined) headers['hearth-timeout-ms'] = String(options.timeoutMs);
  const r = await node.request(path, { method: 'POST', body, headers });
  const bytes = new Uint8Array(await r.arrayBuffer());
  return inferOutputs(bytes, r.headers.get('inference-header-content-length'));
}
