/**
 * What the runner host asks of the operating system besides spawning: a runner's threads'
 * priority, the folders of runners whose node died, a user's group, and the uids a jail takes.
 */
import { readdirSync } from 'node:fs';
import { mkdir, readdir, readFile, rm } from 'node:fs/promises';
import { setPriority, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

import type { RunnerProcess } from './runner-process.js';

/** Runner folders' parents are named hearth-runners-<node pid>-…; a started node removes its dead peers'. */
export const ROOT_PREFIX = 'hearth-runners-';

/**
 * Sets the scheduling priority of every thread of a runner (Linux schedules threads: a process's
 * priority is its threads'). A spare boots at a lower one; only where it can be raised back (root).
 */
export function renice(runner: RunnerProcess, priority: number): void {
  if (process.getuid?.() !== 0 || runner.pid === undefined) return;
  let threads: string[];
  try {
    threads = readdirSync(`/proc/${runner.pid}/task`);
  } catch {
    threads = [String(runner.pid)];
  }
  for (const tid of threads) {
    try {
      setPriority(Number(tid), priority);
    } catch {
      // A thread that ended meanwhile.
    }
  }
}

/** Removes the runner folders of nodes that died (their runners died with them). */
export async function sweepRoots(): Promise<void> {
  for (const name of await readdir(tmpdir()).catch(() => [] as string[])) {
    const pid = Number(new RegExp(`^${ROOT_PREFIX}(\\d+)-`).exec(name)?.[1]);
    if (!(pid > 0) || pid === process.pid) continue;
    try {
      process.kill(pid, 0);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ESRCH')
        await rm(join(tmpdir(), name), { recursive: true, force: true }).catch(() => undefined);
    }
  }
}

/** The primary group of a user by name, from /etc/passwd. */
export async function groupOf(name: string): Promise<number> {
  const passwd = await readFile('/etc/passwd', 'utf8');
  for (const line of passwd.split('\n')) {
    const [user, , , gid] = line.split(':');
    if (user === name) return Number(gid);
  }
  throw new Error(`no user "${name}" on this machine (HEARTH_RUNNER_USER)`);
}

/** Where a root node's runners lock their uids: one place per host, so two nodes never share one. */
const UID_LOCKS = '/run/hearth/runner-uids';

/** Uids for hearth-jail: a root node's from its range, locked per host; any node's inside. */
export async function jailUsers(
  users: { firstUid: number; gid: number } | undefined,
  count: number,
): Promise<{ firstUid: number; count: number; gid: number; lockDir: string }> {
  const { firstUid, gid } = users ?? { firstUid: 200_000, gid: 200_000 };
  let lockDir = UID_LOCKS;
  if (process.getuid?.() === 0) {
    await mkdir(dirname(UID_LOCKS), { recursive: true, mode: 0o755 }).catch(() => {
      lockDir = join(tmpdir(), 'hearth-runner-uids');
    });
  }
  return { firstUid, count, gid, lockDir };
}
