/**
 * The `slow` fixture (test/helpers/specs.ts SLOW_SPEC) with a queue of one, deployed and driven over
 * KServe JSON: the queue, deadline and drain tests hold its one instance with a long forward.
 */
import { postFunction } from './node.js';
import { SLOW_SPEC } from './specs.js';
import { waitFor } from './wait.js';

export const SLOW = { ...SLOW_SPEC, batching: { maxQueueSize: 1 } };
export const inferSlow = (url: string, iters: number, headers: Record<string, string> = {}) =>
  fetch(`${url}/v2/models/slow/infer`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({
      inputs: [
        { name: 'x', shape: [4, 512], datatype: 'FP32', data: new Array(2048).fill(0.01) },
        { name: 'n', shape: [], datatype: 'INT64', data: [iters] },
      ],
    }),
  });

export type PoolState = { instances: { busy: number }; queueDepth: number };

/** Waits until the `slow` pool of the node at `url` reports what the test needs (no sleeping on guesses). */
export async function untilSlowPool(url: string, check: (p: PoolState) => boolean, timeoutMs = 60_000): Promise<void> {
  const pool = async () =>
    ((await (await fetch(`${url}/api/v1/pools`)).json()) as { pools: (PoolState & { function: string })[] }).pools.find(
      (p) => p.function === 'slow',
    );
  await waitFor('the pool to reach the expected state', pool, (p) => p !== undefined && check(p), {
    intervalMs: 10,
    timeoutMs,
  });
}

export async function deploySlow(url: string, spec: object, model: string): Promise<Response> {
  return postFunction(url, { spec, artifacts: { model } });
}
