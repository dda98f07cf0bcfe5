/** The Python peers the benchmarks measure Hearth against: Flask under gunicorn, FastAPI under uvicorn. */
import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { join } from 'node:path';

import { PYTHON, REPO_ROOT } from '../helpers/fixtures.js';

const PEERS = join(REPO_ROOT, 'test', 'bench', 'peers');

/**
 * `app` (module:variable under test/bench/peers) with 2 workers on `port`. Flask runs under gunicorn
 * with gthread and one thread per worker: still one request at a time per worker, but with
 * keep-alive (gunicorn's default sync worker closes every connection, and autocannon then
 * misreports: p50 of ~1 s for a 5 ms request at concurrency 1, and hundreds of socket errors).
 */
export function startPeer(
  server: 'gunicorn' | 'uvicorn',
  app: string,
  port: number,
  env: Record<string, string>,
): ChildProcess {
  const args =
    server === 'gunicorn'
      ? ['-m', 'gunicorn', '-w', '2', '-k', 'gthread', '--threads', '1', '-b', `127.0.0.1:${port}`]
      : ['-m', 'uvicorn', '--workers', '2', '--host', '127.0.0.1', '--port', String(port)];
  const tail =
    server === 'gunicorn' ? ['--log-level', 'warning', '--timeout', '120', app] : ['--log-level', 'warning', app];
  return spawn(PYTHON, [...args, ...tail], {
    cwd: PEERS,
    env: { ...process.env, PEER_THREADS: '1', PYTHONUNBUFFERED: '1', ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}

/** Resolves once `url` answers anything (the server is up); rejects if the process exits or after 60 s. */
export function waitForPort(url: string, child: ChildProcess, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const tick = (): void => {
      if (child.exitCode !== null) {
        reject(new Error(`${what} exited with ${child.exitCode}`));
        return;
      }
      fetch(url, { method: 'GET' }).then(
        () => resolve(),
        () => (Date.now() - started > 60_000 ? reject(new Error(`${what} did not start`)) : setTimeout(tick, 250)),
      );
    };
    tick();
  });
}
