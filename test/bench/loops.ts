/**
 * Closed-loop load that needs nothing but Node and the repository's own code (no autocannon): HTTP
 * over kept-alive connections, and gRPC ModelInfer. The GPU kit's benchmark runs these bundled.
 */
import { Agent, request } from 'node:http';

import * as grpc from '@grpc/grpc-js';

import { encodeBinary } from '../../sdk/kserve-binary.js';
import { inferenceClient } from '../helpers/grpc.js';

export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
}

/**
 * One client sending `body` back to back for `duration` seconds over one kept-alive connection,
 * timing each request with performance.now(): latencies to the microsecond (autocannon's are whole
 * milliseconds), for comparing p50s a fraction of a millisecond apart.
 */
export function serialLoop(
  url: string,
  body: Uint8Array | string,
  headers: Record<string, string>,
  duration: number,
): Promise<LoadResult> {
  return httpLoad(url, body, headers, 1, duration);
}

/**
 * `concurrency` clients, each on its own kept-alive connection, sending `body` back to back for
 * `duration` seconds (closed loop), each request timed with performance.now(). Needs nothing but
 * Node itself, so the GPU kit's benchmark can use it with no node_modules.
 */
export async function httpLoad(
  url: string,
  body: Uint8Array | string,
  headers: Record<string, string>,
  concurrency: number,
  duration: number,
): Promise<LoadResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const payload =
    typeof body === 'string' ? Buffer.from(body) : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  const once = (): Promise<number> =>
    new Promise((resolve, reject) => {
      const req = request(
        url,
        { method: 'POST', agent, headers: { ...headers, 'content-length': String(payload.length) } },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        },
      );
      req.on('error', reject);
      req.end(payload);
    });
  const result = await closedLoop(concurrency, duration, async () => (await once().catch(() => 0)) === 200);
  agent.destroy();
  return result;
}

/**
 * `concurrency` callers each calling `once` back to back until `duration` seconds are up, every
 * call timed; `once` resolves to whether the call succeeded.
 */
async function closedLoop(concurrency: number, duration: number, once: () => Promise<boolean>): Promise<LoadResult> {
  const latencies: number[] = [];
  let errors = 0;
  const start = performance.now();
  const end = start + duration * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        const t = performance.now();
        if (!(await once())) errors++;
        latencies.push(performance.now() - t);
      }
    }),
  );
  return summary(latencies, (performance.now() - start) / 1000, errors);
}

/**
 * Throughput and percentiles of the latencies (ms). `elapsed` runs until the last answer: requests
 * still in flight when the time is up are waited for and counted, so at high concurrency and long
 * latencies the rate is not inflated by answers that came after the nominal end.
 */
function summary(latencies: number[], elapsed: number, errors: number): LoadResult {
  latencies.sort((a, b) => a - b);
  return {
    rps: latencies.length / elapsed,
    p50: latencies[Math.floor(latencies.length / 2)] ?? 0,
    p99: latencies[Math.floor(latencies.length * 0.99)] ?? 0,
    errors,
  };
}

/** A KServe infer request with one FP32 input in Triton's binary extension (the SDK's codec), output binary too. */
export function kserveBinary(
  input: string,
  shape: number[],
  data: Float32Array,
): { body: Uint8Array; headers: Record<string, string> } {
  const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  const { body, headerLength } = encodeBinary(
    {
      inputs: [{ name: input, shape, datatype: 'FP32', parameters: { binary_data_size: bytes.byteLength } }],
      parameters: { binary_data_output: true },
    },
    [bytes],
  );
  return {
    body,
    headers: { 'content-type': 'application/octet-stream', 'inference-header-content-length': String(headerLength) },
  };
}

/** `concurrency` callers each sending ModelInfer (one FP32 input in raw_input_contents) back to back. */
export async function grpcLoad(
  address: string,
  request: { model: string; input: string; shape: number[]; data: Float32Array },
  concurrency: number,
  duration: number,
): Promise<LoadResult> {
  const client = inferenceClient(address);
  const message = {
    model_name: request.model,
    inputs: [{ name: request.input, datatype: 'FP32', shape: request.shape }],
    raw_input_contents: [Buffer.from(request.data.buffer, request.data.byteOffset, request.data.byteLength)],
  };
  const result = await closedLoop(
    concurrency,
    duration,
    () => new Promise<boolean>((resolve) => client.ModelInfer!(message, new grpc.Metadata(), (e) => resolve(!e))),
  );
  client.close();
  return result;
}
