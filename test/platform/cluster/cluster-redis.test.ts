// `npm run cluster`'s Redis probe (tools/cluster/redis.ts), here in the integration project: its
// second test reads the Redis the suite starts on 127.0.0.1:6379.
import { createServer, type Socket } from 'node:net';

import { expect, it } from 'vitest';

import { answering } from '../../../tools/cluster/redis.js';

it('says a port that accepts and never answers is not a Redis, within its second (it waited forever)', async () => {
  const sockets: Socket[] = [];
  const silent = createServer((socket) => sockets.push(socket));
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  const { port } = silent.address() as { port: number };
  try {
    expect(await answering(`redis://127.0.0.1:${port}`)).toBe(false);
  } finally {
    for (const s of sockets) s.destroy();
    silent.close();
  }
}, 10_000);

it('finds the Redis that runs on 127.0.0.1:6379, and none on a closed port', async () => {
  expect(await answering('redis://127.0.0.1:6379')).toBe(true);
  const closed = createServer();
  await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
  const { port } = closed.address() as { port: number };
  await new Promise<void>((r) => closed.close(() => r()));
  expect(await answering(`redis://127.0.0.1:${port}`)).toBe(false);
});
