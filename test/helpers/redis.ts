/** A private redis-server on a free port, for tests that stop, restart or misconfigure Redis. */

import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';

import { Redis } from 'ioredis';

import { freePort } from '../../tools/cluster/children.js';

export interface TestRedis {
  port: number;
  url: string;
  /** Stops the server (SIGKILL: nothing is saved on the way out). */
  stop(): Promise<void>;
  /** Starts it again on the same port, with the same arguments. */
  start(): Promise<void>;
}

// One free-port picker for the tests and the local cluster (npm run cluster).
export { freePort } from '../../tools/cluster/children.js';

async function answering(port: number): Promise<boolean> {
  const probe = new Redis({ port, host: '127.0.0.1', lazyConnect: true, retryStrategy: () => null });
  probe.on('error', () => undefined);
  const up = await probe
    .connect()
    .then(() => probe.ping())
    .then(
      () => true,
      () => false,
    );
  probe.disconnect();
  return up;
}

export async function startRedis(args: string[] = []): Promise<TestRedis> {
  const port = await freePort();
  let child: ChildProcess | undefined;
  const start = async (): Promise<void> => {
    child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', ...args], {
      stdio: 'ignore',
    });
    for (let i = 0; i < 200; i++) {
      if (await answering(port)) return;
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error(`redis-server on port ${port} did not start`);
  };
  await start();
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    start,
    async stop() {
      const c = child;
      if (!c || c.exitCode !== null) return;
      await new Promise((r) => {
        c.once('exit', r);
        c.kill('SIGKILL');
      });
    },
  };
}
