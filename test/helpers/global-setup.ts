import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

import { bundleCli } from '../../sdk/packages/build.js';
import { ensureModels, PYTHON, REPO_ROOT } from './fixtures.js';

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

/**
 * python3-torch's reference as a server for the whole suite (test/helpers/reference.ts): torch is
 * imported once (a second or two) instead of once per reference call. Returns its teardown.
 */
async function startReference(): Promise<() => void> {
  const dir = mkdtempSync(join(tmpdir(), 'hearth-reference-'));
  const socket = join(dir, 'reference.sock');
  const server = spawn(PYTHON, [join(REPO_ROOT, 'test', 'fixtures', 'reference.py'), '--serve', socket], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: server.stdout });
  const ready = await Promise.race([
    once(lines, 'line').then(([line]) => line === 'ready'),
    once(server, 'exit').then(() => false),
  ]);
  // Without it, each reference call runs python3-torch on its own, as before: slower, the same.
  if (ready) process.env.HEARTH_REFERENCE_SOCKET = socket;
  return () => {
    server.kill();
    rmSync(dir, { recursive: true, force: true });
  };
}

/** The CLI as its package bundles it, once for the suite (HEARTH_CLI in fixtures.ts). */
async function bundleTestCli(): Promise<void> {
  // Under node_modules, so the bundle finds esbuild and undici as the package's own copy would.
  const dist = join(REPO_ROOT, 'node_modules', '.cache', 'hearth-test-cli');
  process.env.HEARTH_TEST_CLI = await bundleCli(dist);
}

export default async function setup(): Promise<() => void> {
  ensureModels();
  const [stopReference] = await Promise.all([startReference(), ensureRedis(), bundleTestCli()]);
  return stopReference;
}
