/** Load generation shared by the benchmarks: autocannon, closed loop, keep-alive; gRPC ModelInfer. */
import type { ChildProcess } from 'node:child_process';
import { Agent, request } from 'node:http';

import * as grpc from '@grpc/grpc-js';
import autocannon from 'autocannon';

import { encodeBinary } from '../../sdk/kserve-binary.js';
import { inferenceClient } from '../helpers/grpc.js';

export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
}

/** `connections` clients each sending `body` back to back for `duration` seconds. */
export async function cannon(
  url: string,
  body: Uint8Array | string,
  headers: Record<string, string>,
  connections: number,
  duration: number,
): Promise<LoadResult> {
  const result = await autocannon({
    url,
    method: 'POST',
    body: typeof body === 'string' ? body : Buffer.from(body),
    headers,
    connections,
    duration,
    timeout: 60,
  });
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.non2xx,
  };
}

/** SIGTERM, then SIGKILL after 10 s; resolves when the process has exited. */
export function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
    setTimeout(() => child.kill('SIGKILL'), 10_000).unref();
  });
}

/**
 * One client sending `body` back to back for `duration` seconds over one kept-alive connection,
 * timing each request with performance.now(): latencies to the microsecond (autocannon's are whole
 * milliseconds), for comparing p50s a fraction of a millisecond apart.
 */
export async function serialLoop(
  url: string,
  body: Uint8Array | string,
  headers: Record<string, string>,
  duration: number,
): Promise<LoadResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
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
  const latencies: number[] = [];
  let errors = 0;
  const end = performance.now() + duration * 1000;
  while (performance.now() < end) {
    const t = performance.now();
    const status = await once().catch(() => 0);
    if (status !== 200) errors++;
    latencies.push(performance.now() - t);
  }
  agent.destroy();
  return summary(latencies, duration, errors);
}

/** Throughput and percentiles of the latencies (ms) measured over `duration` seconds. */
function summary(latencies: number[], duration: number, errors: number): LoadResult {
  latencies.sort((a, b) => a - b);
  return {
    rps: latencies.length / duration,
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
  const latencies: number[] = [];
  let errors = 0;
  const end = performance.now() + duration * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        const t = performance.now();
        await new Promise<void>((resolve) =>
          client.ModelInfer!(message, new grpc.Metadata(), (e) => {
            if (e) errors++;
            resolve();
          }),
        );
        latencies.push(performance.now() - t);
      }
    }),
  );
  client.close();
  return summary(latencies, duration, errors);
}
