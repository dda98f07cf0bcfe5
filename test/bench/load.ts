/** Load generation shared by the benchmarks: autocannon, closed loop, keep-alive; and ./loops.ts. */
import type { ChildProcess } from 'node:child_process';

import autocannon from 'autocannon';

import type { LoadResult } from './loops.js';

export type { LoadResult } from './loops.js';
export { grpcLoad, httpLoad, kserveBinary, serialLoop } from './loops.js';

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
