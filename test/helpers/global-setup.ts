import { execFileSync } from 'node:child_process';
import { connect } from 'node:net';

import { ensureModels } from './fixtures.js';

function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.end();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Integration tests need a real Redis on 127.0.0.1:6379: start one if none answers. */
async function ensureRedis(): Promise<void> {
  if (process.env.REDIS_URL || (await answers(6379))) return;
  execFileSync('redis-server', [
    '--daemonize',
    'yes',
    '--bind',
    '127.0.0.1',
    '--port',
    '6379',
    '--save',
    '',
    '--appendonly',
    'no',
    '--maxmemory-policy',
    'noeviction',
  ]);
  for (let i = 0; i < 50 && !(await answers(6379)); i++) await new Promise((r) => setTimeout(r, 100));
}

export default async function setup(): Promise<void> {
  ensureModels();
  await ensureRedis();
}
