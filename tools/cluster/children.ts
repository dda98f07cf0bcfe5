/**
 * The local cluster's child processes: each in a process group of its own (a terminal's Ctrl-C
 * reaches the cluster command alone, which then stops them in order), its output heard line by
 * line, its end awaited, and its whole group killed at the end so nothing it started outlives it.
 */
import type { ChildProcess, SpawnOptions } from 'node:child_process';
import { spawn } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { createServer } from 'node:net';
import { createInterface } from 'node:readline';

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface Child {
  name: string;
  pid: number;
  /** Settles when the process has ended. */
  exited: Promise<Exit>;
  /** Its exit, once it has ended. */
  exitCode(): Exit | undefined;
  /**
   * SIGTERM, then SIGKILL to its whole group after `graceMs`; once it has ended, whatever is left of
   * its group (a grandchild that did not end with it) is killed too.
   */
  stop(graceMs?: number): Promise<Exit>;
  /** SIGKILL to its whole group, now (a second Ctrl-C). */
  kill(): void;
}

/**
 * Sends `signal` to the process group `pgid`; false when there is none left. A child that never
 * started has no pid (-1 here): `kill(-(-1))` would signal pid 1, so nothing is sent.
 */
function killGroup(pgid: number, signal: NodeJS.Signals): boolean {
  if (pgid <= 0) return false;
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

/** Every line `child` writes, on stdout or stderr, to `onLine`. */
function hearLines(child: ChildProcess, onLine: (line: string) => void): void {
  for (const stream of [child.stdout, child.stderr]) if (stream) createInterface({ input: stream }).on('line', onLine);
}

export function spawnChild(
  name: string,
  command: string,
  args: string[],
  options: Pick<SpawnOptions, 'cwd' | 'env'>,
  onLine: (line: string) => void,
  /** What its stdin reads (a config with a secret, kept out of argv), then end of file. */
  input?: string,
): Child {
  const child = spawn(command, args, {
    ...options,
    detached: true,
    stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
  });
  if (input !== undefined) child.stdin!.end(input);
  let ended: Exit | undefined;
  const exited = new Promise<Exit>((resolve) => {
    child.once('exit', (code, signal) => {
      ended = { code, signal };
      resolve(ended);
    });
    // A command that cannot start (not installed): an exit with no code.
    child.once('error', (error) => {
      onLine(`could not start ${command}: ${error.message}`);
      ended ??= { code: null, signal: null };
      resolve(ended);
    });
  });
  hearLines(child, onLine);
  const pid = child.pid ?? -1;
  return {
    name,
    pid,
    exited,
    exitCode: () => ended,
    async stop(graceMs = 10_000) {
      if (pid > 0 && !ended) child.kill('SIGTERM');
      const timer = setTimeout(() => killGroup(pid, 'SIGKILL'), graceMs);
      const exit = await exited;
      clearTimeout(timer);
      killGroup(pid, 'SIGKILL');
      return exit;
    },
    kill: () => void killGroup(pid, 'SIGKILL'),
  };
}

/** A port free on loopback now (the kernel's pick). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  await new Promise((r) => server.close(r));
  return port;
}

/** Whether `port` on loopback can be listened on now. */
export async function portFree(port: number): Promise<boolean> {
  const server = createServer();
  return new Promise<boolean>((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}
