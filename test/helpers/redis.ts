/** A private redis-server on a free port, for tests that stop, restart or misconfigure Redis. */

import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { createServer } from 'node:net';

import { Redis } from 'ioredis';

export interface TestRedis {
  port: number;
  url: string;
  /** Stops the server (SIGKILL: nothing is saved on the way out). */
  stop(): Promise<void>;
  /** Starts it again on the same port, with the same arguments. */
  start(): Promise<void>;
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  await new Promise((r) => server.close(r));
  return port;
}

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
